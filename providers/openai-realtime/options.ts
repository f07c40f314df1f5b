/**
 * @module The options of the streaming recogniser over OpenAI's Realtime API in a transcription
 * session (`asr` with `provider: openai-realtime`): OpenAI itself, Azure OpenAI, or a self-hosted
 * server speaking the same WebSocket events.
 */
import { z } from 'zod';

/** Plain (no TLS) when the base URL says `http:` or `ws:`; the SDK itself would always dial `wss:`. */
export function isPlainBaseURL(baseURL: string): boolean {
  const scheme = new URL(baseURL).protocol;
  return scheme === 'http:' || scheme === 'ws:';
}

export const OpenAiRealtimeAsrSchema = z
  .strictObject({
    provider: z.literal('openai-realtime'),
    /**
     * Up to the version path; the client appends `/realtime?intent=transcription`. `https:`/`wss:`
     * connect with TLS, `http:`/`ws:` without (a self-hosted server on loopback or a private net).
     */
    baseURL: z.url({ protocol: /^(https?|wss?)$/ }).default('https://api.openai.com/v1'),
    /** Sent as `Authorization: Bearer` (as `api-key` with `azure`); empty: no credential is sent. */
    apiKey: z.string().default(''),
    /** The endpoint is Azure OpenAI (`https://RESOURCE.openai.azure.com/openai/v1`): the SDK's Azure client, key in `api-key`. */
    azure: z.boolean().default(false),
    /** The transcription model (on Azure: its deployment name). */
    model: z.string().min(1).default('gpt-live-transcribe'),
    /** ISO-639-1 hint, e.g. `en`, `zh`. */
    language: z.string().min(1).optional(),
    /** Text that guides spelling and style (names, jargon); not every model takes one. */
    prompt: z.string().min(1).optional(),
    /** Longest wait for the final transcript once the utterance has ended, in ms. */
    finalTimeoutMs: z.number().int().positive().default(3000),
    /** Longest wait for the connection (TCP, TLS, WebSocket upgrade), in ms. */
    connectTimeoutMs: z.number().int().positive().default(5000),
    /** A PEM file of the CA to trust (instead of the system's) for a `https:`/`wss:` server with a private certificate. */
    ca: z.string().min(1).optional(),
  })
  .superRefine((o, ctx) => {
    if (o.ca !== undefined && isPlainBaseURL(o.baseURL))
      ctx.addIssue({
        code: 'custom',
        path: ['ca'],
        message: 'ca is for a https: or wss: baseURL; this one has no TLS',
      });
    if (o.azure && o.apiKey === '')
      ctx.addIssue({ code: 'custom', path: ['apiKey'], message: 'azure needs apiKey (the resource key)' });
  });
export type OpenAiRealtimeAsrOptions = z.infer<typeof OpenAiRealtimeAsrSchema>;
