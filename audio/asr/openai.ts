/**
 * @module ASR through any OpenAI-compatible `/v1/audio/transcriptions` endpoint: the utterance is
 * uploaded as a 16-bit WAV in a multipart form (`core/openai-wire.ts`), the JSON `text` is the
 * result.
 */
import { z } from 'zod';
import { runScoped, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createWireClient, type FormField, type WireClient } from '../../core/openai-wire.ts';
import { mapOpenAiError } from '../openai-errors.ts';
import { encodeWav } from '../wav.ts';
import type { Asr, OpenAiAsrOptions } from './asr.ts';

const DEFAULT_TIMEOUT_MS = 15_000;
/** A transcript answer larger than this is refused (an utterance is seconds of speech). */
const MAX_ANSWER_BYTES = 1024 * 1024;
const answerSchema = z.object({ text: z.string() });

export class OpenAiAsr implements Asr {
  readonly name = 'openai';
  readonly #opts: OpenAiAsrOptions;
  readonly #wire: WireClient;
  readonly #log: Logger;

  constructor(opts: OpenAiAsrOptions, log: Logger) {
    this.#opts = opts;
    this.#log = log;
    this.#wire = createWireClient({ baseURL: opts.baseURL, apiKey: opts.apiKey });
  }

  async transcribe(pcm: Int16Array, opts: { signal: AbortSignal; sampleRate: number }): Promise<string> {
    throwIfAborted(opts.signal);
    const timeoutMs = this.#opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const started = performance.now();
    const form: FormField[] = [
      { name: 'file', filename: 'utterance.wav', contentType: 'audio/wav', data: encodeWav(pcm, opts.sampleRate) },
      { name: 'model', value: this.#opts.model },
      { name: 'response_format', value: 'json' },
    ];
    if (this.#opts.language) form.push({ name: 'language', value: this.#opts.language });
    if (this.#opts.prompt) form.push({ name: 'prompt', value: this.#opts.prompt });
    let requestSignal: AbortSignal | undefined;
    try {
      const body = await runScoped(opts.signal, async (signal) => {
        requestSignal = signal;
        const res = await this.#wire.post('/audio/transcriptions', { form }, { signal });
        return res.text(MAX_ANSWER_BYTES);
      }, { timeoutMs, what: 'openai transcription' });
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        throw new VoiceError(ErrorCode.ProviderFailed, `openai transcription: answer is not JSON: ${body.slice(0, 120)}`, { retryable: true });
      }
      const parsed = answerSchema.safeParse(json);
      if (!parsed.success) throw new VoiceError(ErrorCode.ProviderFailed, 'openai transcription: answer has no text field', { retryable: true });
      const text = parsed.data.text.trim();
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
