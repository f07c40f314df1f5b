/**
 * @module Text-to-speech: one interface, one file per provider. Every provider streams: bytes
 * are yielded as they are produced, and aborting the signal stops synthesis (kills the process
 * or cancels the HTTP request) at once.
 */
import type { Logger } from '../../core/logger.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';

/**
 * What `synthesize` yields. `wav` and `pcm` are converted in-process (no ffmpeg); the compressed
 * containers go through one ffmpeg per utterance.
 */
export type TtsOutputFormat =
  | { container: 'wav' }
  | { container: 'pcm'; sampleRate: number }
  | { container: 'mp3' | 'ogg' | 'aac' | 'flac' };

export interface Tts {
  readonly name: string;
  /** Container of the bytes `synthesize` yields. */
  readonly outputFormat: TtsOutputFormat;
  /** Streams the spoken `text` as container bytes (see `outputFormat`). */
  synthesize(text: string, opts: { signal: AbortSignal }): AsyncIterable<Buffer>;
  close(): Promise<void>;
}

export interface EspeakTtsOptions {
  provider: 'espeak';
  /** espeak-ng voice: `en-us`, `en-gb`, `cmn-latn-pinyin` for Mandarin (plain `cmn` reads pinyin as English). Default `en-us`. */
  voice?: string;
  /** Words per minute (espeak default 175). */
  speed?: number;
  /** Pitch 0..99 (espeak default 50). */
  pitch?: number;
  /** Executable (default `espeak-ng`). */
  command?: string;
}

export type OpenAiSpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';

export interface OpenAiTtsOptions {
  provider: 'openai';
  baseURL: string;
  apiKey: string;
  model: string;
  voice: string;
  /**
   * `response_format`; default `wav`. `wav` and `pcm` (24 kHz s16le) are parsed in-process; the
   * compressed formats need one ffmpeg per sentence, and each spawn forks the whole server.
   */
  format?: OpenAiSpeechFormat;
  /** Sample rate of `pcm` responses (OpenAI: 24000). */
  pcmSampleRate?: number;
  speed?: number;
  /** Extra instructions (gpt-4o-mini-tts style voices). */
  instructions?: string;
  /** Time allowed until the response starts, in ms (default 15000). */
  timeoutMs?: number;
}

export type TtsOptions = EspeakTtsOptions | OpenAiTtsOptions;

/** Creates the configured provider. */
export async function createTts(config: TtsOptions, log: Logger): Promise<Tts> {
  switch (config.provider) {
    case 'espeak': {
      const { EspeakTts } = await import('./espeak.ts');
      return EspeakTts.create(config, log);
    }
    case 'openai': {
      const { OpenAiTts } = await import('./openai.ts');
      return new OpenAiTts(config, log);
    }
    default: {
      const never: never = config;
      throw new VoiceError(ErrorCode.ConfigInvalid, `unknown tts provider ${String((never as { provider: unknown }).provider)}`);
    }
  }
}
