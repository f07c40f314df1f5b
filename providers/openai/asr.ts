/**
 * @module ASR through any OpenAI-compatible `/v1/audio/transcriptions` endpoint, over the openai
 * SDK: the utterance is uploaded as a 16-bit WAV in a multipart form, the JSON `text` is the
 * result. `timeoutMs` bounds the whole request (ours: the SDK's timeout is off, `client.ts`).
 */
import type OpenAI from 'openai';
import { toFile } from 'openai';
import { z } from 'zod';
import { runScoped, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { Asr } from '../../audio/asr/asr.ts';
import { encodeWav } from '../../audio/pcm/wav.ts';
import { createOpenAiClient } from './client.ts';
import { mapOpenAiError } from './errors.ts';
import type { OpenAiAsrOptions } from './options.ts';

/** The only field read from the answer; a provider that leaves it out failed. */
const answerSchema = z.object({ text: z.string() });

export class OpenAiAsr implements Asr {
  readonly name = 'openai';
  readonly #opts: OpenAiAsrOptions;
  readonly #client: OpenAI;
  readonly #log: Logger;

  constructor(opts: OpenAiAsrOptions, log: Logger) {
    this.#opts = opts;
    this.#log = log;
    this.#client = createOpenAiClient({ baseURL: opts.baseURL, apiKey: opts.apiKey });
  }

  async transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    const started = performance.now();
    const file = await toFile(encodeWav(pcm, opts.sampleRate), 'utterance.wav', { type: 'audio/wav' });
    let requestSignal: AbortSignal | undefined;
    try {
      const answer: unknown = await runScoped(
        opts.signal,
        (signal) => {
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
        },
        { timeoutMs: this.#opts.timeoutMs, what: 'openai transcription' },
      );
      const parsed = answerSchema.safeParse(answer);
      if (!parsed.success)
        throw new VoiceError(ErrorCode.ProviderFailed, 'openai transcription: answer has no text field', {
          retryable: true,
        });
      const text = parsed.data.text.trim();
      this.#log.debug({ ms: Math.round(performance.now() - started), chars: text.length }, 'openai transcription done');
      return text;
    } catch (err) {
      const mapped = mapOpenAiError(err, 'openai transcription', requestSignal);
      if (mapped.code !== ErrorCode.Aborted)
        this.#log.warn({ code: mapped.code, err: mapped.message }, 'openai transcription failed');
      throw mapped;
    }
  }

  async close(): Promise<void> {}
}
