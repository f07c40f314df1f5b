/**
 * @module The vision model's answer to one photo: an OpenAI-compatible chat completion (not
 * streamed) whose user message holds the question and the photo as an `image_url` data URL part,
 * through the one openai SDK client builder (`providers/openai/client.ts`) and its error mapping.
 * It runs on the main thread: one request per photo, a few per device per minute at most, is no
 * per-frame work for the provider thread to keep off the event loop.
 */
import type OpenAI from 'openai';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { createOpenAiClient } from '../../providers/openai/client.ts';
import { mapOpenAiError } from '../../providers/openai/errors.ts';
import type { ImageMime } from './image-check.ts';

/** Which model a photo goes to. */
export interface VisionModel {
  baseURL: string;
  apiKey: string;
  model: string;
}

export interface VisionQuestion {
  question: string;
  image: Buffer;
  mime: ImageMime;
  timeoutMs: number;
  /** Aborted when the device went away. */
  signal: AbortSignal;
}

/** Characters of an answer passed back at most: the device hands it to its model as a tool result. */
export const MAX_ANSWER_CHARS = 2000;
/** Clients kept (one per distinct model options; the least recently used dropped). */
const MAX_CLIENTS = 16;
/** What the model is asked when the device sent no question. */
const DEFAULT_QUESTION = 'Describe what you see in this image.';

export class VisionModels {
  readonly #clients = new Map<string, OpenAI>();

  #client(m: VisionModel): OpenAI {
    const key = `${m.baseURL}\n${m.apiKey}`;
    let client = this.#clients.get(key);
    if (client) this.#clients.delete(key);
    else client = createOpenAiClient({ baseURL: m.baseURL, apiKey: m.apiKey });
    this.#clients.set(key, client);
    for (const k of this.#clients.keys()) {
      if (this.#clients.size <= MAX_CLIENTS) break;
      this.#clients.delete(k);
    }
    return client;
  }

  /** The model's answer; a `VoiceError` (`timeout` past `timeoutMs`, else a provider code) when there is none. */
  async ask(m: VisionModel, q: VisionQuestion): Promise<string> {
    const own = new AbortController();
    const timer = setTimeout(
      () => own.abort(new VoiceError(ErrorCode.Timeout, `vision model gave no answer within ${q.timeoutMs} ms`)),
      q.timeoutMs,
    );
    const onAbort = (): void => own.abort(q.signal.reason);
    q.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const completion = await this.#client(m).chat.completions.create(
        {
          model: m.model,
          stream: false,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: q.question.trim() || DEFAULT_QUESTION },
                { type: 'image_url', image_url: { url: `data:${q.mime};base64,${q.image.toString('base64')}` } },
              ],
            },
          ],
        },
        { signal: own.signal },
      );
      const text = completion.choices?.[0]?.message?.content;
      if (typeof text !== 'string' || text.trim() === '')
        throw new VoiceError(ErrorCode.ProviderFailed, 'vision model answered without text');
      return text.trim().slice(0, MAX_ANSWER_CHARS);
    } catch (err) {
      throw mapOpenAiError(err, 'vision model', own.signal);
    } finally {
      clearTimeout(timer);
      q.signal.removeEventListener('abort', onAbort);
    }
  }
}
