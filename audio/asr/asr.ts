/**
 * @module Speech-to-text: one interface, one file per provider. `transcribe` takes one complete
 * utterance (as cut by the VAD) and resolves with its text ('' when nothing was recognised).
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';

export interface Asr {
  readonly name: string;
  /** Transcribes one utterance of mono s16 PCM at `opts.sampleRate`. */
  transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string>;
  /** Stops any process and releases resources. */
  close(): Promise<void>;
}

/**
 * The embedded offline recogniser (Debian `pocketsphinx` + `pocketsphinx-en-us`). English only.
 * Open-vocabulary accuracy is poor (86-104 % WER on espeak speech); with a JSGF `grammar` it is
 * reliable for a fixed command set.
 */
export interface PocketsphinxAsrOptions {
  provider: 'pocketsphinx';
  /** JSGF grammar: the grammar text itself (starting with `#JSGF`) or a path to a .gram file. */
  grammar?: string;
  /** Acoustic model dir / dictionary / language model overrides (default: the en-us model). */
  hmm?: string;
  dict?: string;
  lm?: string;
  /** Executable (default `pocketsphinx_continuous`). */
  command?: string;
  /** Upper bound for one utterance's result, in ms (default 3000 + 2 × the audio duration). */
  timeoutMs?: number;
}

/** Any OpenAI-compatible `/v1/audio/transcriptions` (OpenAI, Whisper servers, vLLM, cloud providers). */
export interface OpenAiAsrOptions {
  provider: 'openai';
  baseURL: string;
  apiKey: string;
  /** e.g. `whisper-1`, `gpt-4o-mini-transcribe`, or the served model name. */
  model: string;
  /** ISO-639-1 hint, e.g. `en`, `zh`. */
  language?: string;
  /** Optional prompt to bias spelling (names, jargon). */
  prompt?: string;
  /** Whole-request timeout in ms (default 15000). */
  timeoutMs?: number;
}

export type AsrOptions = PocketsphinxAsrOptions | OpenAiAsrOptions;

/** Creates (and for pocketsphinx, starts) the configured provider. */
export async function createAsr(config: AsrOptions, log: Logger): Promise<Asr> {
  switch (config.provider) {
    case 'pocketsphinx': {
      const { PocketsphinxAsr } = await import('./pocketsphinx.ts');
      return PocketsphinxAsr.create(config, log);
    }
    case 'openai': {
      const { OpenAiAsr } = await import('./openai.ts');
      return new OpenAiAsr(config, log);
    }
    default: {
      const never: never = config;
      throw new VoiceError(ErrorCode.ConfigInvalid, `unknown asr provider ${String((never as { provider: unknown }).provider)}`);
    }
  }
}
