/**
 * @module TTS through any OpenAI-compatible `/v1/audio/speech` endpoint (OpenAI, vLLM-style
 * servers, local TTS servers), over the openai SDK. The answer's body is streamed to the caller
 * as it arrives (the SDK hands a binary answer over unread); `timeoutMs` bounds the wait for the
 * answer and every gap between its chunks. It runs in the caller's thread, which only passes the
 * bytes on: `pcm`, `wav` and `opus` (Ogg) to the session's media worker, which decodes them
 * (`audio/media/tts-to-opus.ts`), the other formats to one ffmpeg per sentence.
 */
import type OpenAI from 'openai';
import { linkedScope, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { StreamingTts, TtsOutputFormat } from '../../audio/tts/tts.ts';
import { createOpenAiClient } from './client.ts';
import { mapOpenAiError } from './errors.ts';
import type { OpenAiTtsOptions } from './options.ts';

function formatOf(opts: OpenAiTtsOptions): TtsOutputFormat {
  switch (opts.format) {
    case 'pcm':
      return { container: 'pcm', sampleRate: opts.pcmSampleRate };
    case 'wav':
      return { container: 'wav' };
    case 'opus':
      return { container: 'ogg' };
    case 'aac':
      return { container: 'aac' };
    case 'flac':
      return { container: 'flac' };
    case 'mp3':
      return { container: 'mp3' };
  }
}

export class OpenAiTts implements StreamingTts {
  readonly name = 'openai';
  readonly synthesis = 'stream';
  readonly outputFormat: TtsOutputFormat;
  readonly #opts: OpenAiTtsOptions;
  readonly #client: OpenAI;
  readonly #log: Logger;

  constructor(opts: OpenAiTtsOptions, log: Logger) {
    this.#opts = opts;
    this.#log = log;
    this.outputFormat = formatOf(opts);
    this.#client = createOpenAiClient({ baseURL: opts.baseURL, apiKey: opts.apiKey });
  }

  async *synthesize(text: string, opts: { signal: AbortSignal }): AsyncGenerator<Buffer> {
    throwIfAborted(opts.signal);
    const { timeoutMs } = this.#opts;
    // The request's own scope: the caller's abort reaches it, and so does our idle timer.
    const scope = linkedScope(opts.signal);
    const signal = scope.signal;
    let idleFired = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        idleFired = true;
        scope.abort(new VoiceError(ErrorCode.Timeout, `openai tts: no data for ${timeoutMs} ms`, { retryable: true }));
      }, timeoutMs);
    };
    const started = performance.now();
    let bytes = 0;
    try {
      arm();
      const response = await this.#client.audio.speech.create(
        {
          model: this.#opts.model,
          voice: this.#opts.voice,
          input: text,
          response_format: this.#opts.format,
          ...(this.#opts.speed !== undefined ? { speed: this.#opts.speed } : {}),
          ...(this.#opts.instructions !== undefined ? { instructions: this.#opts.instructions } : {}),
        },
        { signal },
      );
      arm();
      // `http-fetch.ts` gives the body as an async iterable of Buffers.
      const body = response.body as AsyncIterable<Buffer> | null;
      for await (const chunk of body ?? []) {
        if (signal.aborted) break;
        if (bytes === 0) this.#log.debug({ ms: performance.now() - started }, 'openai tts first byte');
        bytes += chunk.byteLength;
        arm();
        yield chunk;
      }
      if (signal.aborted) throw signal.reason;
      if (bytes === 0)
        throw new VoiceError(ErrorCode.ProviderFailed, 'openai tts: response had no audio', { retryable: true });
    } catch (err) {
      const mapped = mapOpenAiError(err, 'openai tts', idleFired ? signal : opts.signal);
      if (mapped.code !== ErrorCode.Aborted)
        this.#log.warn({ code: mapped.code, err: mapped.message, bytes }, 'openai tts failed');
      throw mapped;
    } finally {
      clearTimeout(timer);
      scope.abort(); // cancels the body if the consumer returned early, and unhooks from the caller
    }
  }

  async close(): Promise<void> {}
}
