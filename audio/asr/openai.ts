/**
 * @module ASR through any OpenAI-compatible `/v1/audio/transcriptions` endpoint: the utterance is
 * uploaded as a 16-bit WAV in a multipart form (openai SDK), the JSON `text` is the result.
 */
import type OpenAI from 'openai';
import { toFile } from 'openai';
import { runScoped, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createOpenAiClient, mapOpenAiError } from '../openai-client.ts';
import { encodeWav } from '../wav.ts';
import type { Asr, OpenAiAsrOptions } from './asr.ts';

const DEFAULT_TIMEOUT_MS = 15_000;

export class OpenAiAsr implements Asr {
  readonly name = 'openai';
  readonly #opts: OpenAiAsrOptions;
  readonly #client: OpenAI;
  readonly #log: Logger;

  constructor(opts: OpenAiAsrOptions, log: Logger) {
    this.#opts = opts;
    this.#log = log;
    this.#client = createOpenAiClient({ baseURL: opts.baseURL, apiKey: opts.apiKey, timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS });
  }

  async transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    const timeoutMs = this.#opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const started = performance.now();
    const file = await toFile(encodeWav(pcm, opts.sampleRate), 'utterance.wav', { type: 'audio/wav' });
    let requestSignal: AbortSignal | undefined;
    try {
      const result = await runScoped(opts.signal, (signal) => {
        requestSignal = signal;
        return this.#client.audio.transcriptions.create(
          {
            file,
            model: this.#opts.model,
            response_format: 'json',
            ...(this.#opts.language ? { language: this.#opts.language } : {}),
            ...(this.#opts.prompt ? { prompt: this.#opts.prompt } : {}),
          },
          { signal },
        );
      }, { timeoutMs, what: 'openai transcription' });
      const text = typeof result.text === 'string' ? result.text.trim() : '';
      this.#log.debug({ ms: Math.round(performance.now() - started), chars: text.length }, 'openai transcription done');
      return text;
    } catch (err) {
      const mapped = mapOpenAiError(err, 'openai transcription', requestSignal);
      if (mapped.code !== ErrorCode.Aborted) this.#log.warn({ code: mapped.code, err: mapped.message }, 'openai transcription failed');
      throw mapped;
    }
  }

  async close(): Promise<void> {}
}
