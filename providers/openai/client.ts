/**
 * @module The one way an openai SDK client is built here, for the LLM, ASR and TTS alike.
 *
 * The SDK's own retries and timeouts are off: the clients own theirs (a retry after spoken text
 * would repeat it; the LLM's limit is the silence between chunks, which the SDK does not time).
 * Its requests go through `http-fetch.ts` (node:http keep-alive). What the configuration sets
 * wins over the SDK's `OPENAI_*` environment fallbacks (explicit values, and nulls for what it does
 * not set; only `OPENAI_CUSTOM_HEADERS`, if an operator sets it, still adds headers), and it logs
 * nothing itself: failures reach the callers' logger through their errors.
 */
import OpenAI from 'openai';
import { httpFetch } from './http-fetch.ts';

/** The longest delay a timer takes: the SDK's header timeout, which cannot be switched off, never fires before ours. */
const NO_SDK_TIMEOUT_MS = 2 ** 31 - 1;

export interface OpenAiClientOptions {
  baseURL: string;
  /** Empty for endpoints without auth: no Authorization header is sent then. */
  apiKey: string;
  /** Extra headers on every request. */
  headers?: Readonly<Record<string, string>>;
}

export function createOpenAiClient(opts: OpenAiClientOptions): OpenAI {
  const noKey = opts.apiKey === '';
  return new OpenAI({
    // The SDK refuses to start without a key: with none configured it gets a placeholder, and
    // the Authorization header it would make from it is removed (a null header is dropped).
    apiKey: noKey ? 'unused' : opts.apiKey,
    baseURL: opts.baseURL,
    organization: null,
    project: null,
    webhookSecret: null,
    adminAPIKey: null,
    maxRetries: 0,
    timeout: NO_SDK_TIMEOUT_MS,
    defaultHeaders: { ...opts.headers, ...(noKey ? { Authorization: null } : {}) },
    logLevel: 'off',
    fetch: httpFetch,
  });
}
