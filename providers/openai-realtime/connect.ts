/**
 * @module Opens one Realtime transcription connection with the openai SDK's own WebSocket client
 * (`openai/realtime/ws`, over the `ws` package): the URL is the SDK's (`<baseURL>/realtime?intent=
 * transcription`, or Azure's `/openai/v1/realtime`), and so are the credentials' headers.
 *
 * Two things the SDK does not do by itself:
 * - a plain server: the SDK rewrites every base URL to `wss:`. For an `http:`/`ws:` base URL the
 *   `ws` client is given a `createConnection` (a documented `ws`/`http.request` option) that opens
 *   a plain TCP connection to the configured host and port, so the upgrade goes out unencrypted to
 *   where the configuration says instead of attempting TLS;
 * - a private CA (`ca`): its PEM is passed to the `ws` client's TLS options, and only it is trusted.
 * Incoming frames are capped by `maxPayload` (the SDK leaves them unbounded unless told).
 */
import { readFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { AzureOpenAI } from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { ClientOptions } from 'ws';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { createOpenAiClient } from '../openai/client.ts';
import { isPlainBaseURL, type OpenAiRealtimeAsrOptions } from './options.ts';

/** Largest frame the server may send: its events are short JSON (a delta, a transcript, the session). */
export const MAX_FRAME_BYTES = 256 * 1024;

/** Opens a connection; the returned client's socket is still connecting. */
export type RealtimeConnector = () => Promise<OpenAIRealtimeWS>;

/** `ws`'s hook for the transport socket: here a plain TCP connection to the configured port. */
function plainTcp(port: number): NonNullable<ClientOptions['createConnection']> {
  const open = (options: { host?: string | null }): Socket => tcpConnect({ host: options.host ?? 'localhost', port });
  return open as NonNullable<ClientOptions['createConnection']>;
}

function socketOptions(o: OpenAiRealtimeAsrOptions): ClientOptions {
  const base: ClientOptions = { maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false };
  if (isPlainBaseURL(o.baseURL)) {
    const url = new URL(o.baseURL);
    return { ...base, createConnection: plainTcp(url.port ? Number(url.port) : 80) };
  }
  if (o.ca === undefined) return base;
  let ca: Buffer;
  try {
    ca = readFileSync(o.ca);
  } catch (err) {
    throw new VoiceError(ErrorCode.ConfigInvalid, `asr.ca: cannot read ${o.ca}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { ...base, ca };
}

/** Made once per provider (the CA file is read here); each call opens a new connection. */
export function realtimeConnector(o: OpenAiRealtimeAsrOptions): RealtimeConnector {
  const options = socketOptions(o);
  if (o.azure) {
    const client = new AzureOpenAI({
      baseURL: o.baseURL,
      apiKey: o.apiKey,
      // Required by the SDK's constructor, used only by its HTTP requests (none are made here):
      // the Realtime URL of Azure's v1 API carries no version.
      apiVersion: 'v1',
      organization: null,
      project: null,
      maxRetries: 0,
    });
    return () => OpenAIRealtimeWS.azure(client, { intent: 'transcription', options });
  }
  const client = createOpenAiClient({ baseURL: o.baseURL, apiKey: o.apiKey });
  return async () => new OpenAIRealtimeWS({ intent: 'transcription', options }, client);
}
