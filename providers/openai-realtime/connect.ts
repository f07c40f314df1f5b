/**
 * @module Opens one Realtime connection with the openai SDK's own WebSocket client (`openai/realtime/ws`,
 * over the `ws` package), for a transcription session (the streaming ASR: `<baseURL>/realtime?intent=
 * transcription`) or a conversation with a model (the speech-to-speech model: `?model=…`), or
 * Azure's `/openai/v1/realtime`. The URL is the SDK's, and so are the credentials' headers.
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
import { isPlainBaseURL } from './options.ts';

/** What the provider's log lines and errors start with. */
export const WHAT = 'openai-realtime';

/** After our close frame, how long the server has to answer before the socket is cut. */
const CLOSE_GRACE_MS = 1000;

/** Where and how to connect (the fields both providers' options share). */
export interface ConnectSettings {
  baseURL: string;
  apiKey: string;
  /** Azure OpenAI: the SDK's Azure client (key in `api-key`, its URL shape). */
  azure: boolean;
  ca?: string | undefined;
  /** Largest frame the server may send, in bytes. */
  maxPayload: number;
  /** The options block named in a configuration error (`asr`, `realtime`). */
  setting: string;
}

/** A transcription session, or a conversation with this model (Azure: this deployment). */
export type RealtimeTarget = { intent: 'transcription' } | { model: string };

/** Opens a connection; the returned client's socket is still connecting. */
export type RealtimeConnector = () => Promise<OpenAIRealtimeWS>;

/** `ws`'s hook for the transport socket: here a plain TCP connection to the configured port. */
function plainTcp(port: number): NonNullable<ClientOptions['createConnection']> {
  const open = (options: { host?: string | null }): Socket => tcpConnect({ host: options.host ?? 'localhost', port });
  return open as NonNullable<ClientOptions['createConnection']>;
}

function socketOptions(o: ConnectSettings): ClientOptions {
  const base: ClientOptions = { maxPayload: o.maxPayload, perMessageDeflate: false };
  if (isPlainBaseURL(o.baseURL)) {
    const url = new URL(o.baseURL);
    return { ...base, createConnection: plainTcp(url.port ? Number(url.port) : 80) };
  }
  if (o.ca === undefined) return base;
  let ca: Buffer;
  try {
    ca = readFileSync(o.ca);
  } catch (err) {
    throw new VoiceError(ErrorCode.ConfigInvalid, `${o.setting}.ca: cannot read ${o.ca}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return { ...base, ca };
}

/**
 * Ends a connection from our side: an open socket gets a close frame and is cut if the server has
 * not answered it within CLOSE_GRACE_MS; any other is cut at once. The grace timer goes with the socket.
 */
export function closeConnection(rt: OpenAIRealtimeWS): void {
  const socket = rt.socket;
  if (socket.readyState !== socket.OPEN) {
    socket.terminate();
    return;
  }
  rt.close({ code: 1000, reason: 'done' });
  const grace = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
  socket.once('close', () => clearTimeout(grace));
}

/** Made once per provider (the CA file is read here); each call opens a new connection. */
export function realtimeConnector(o: ConnectSettings, target: RealtimeTarget): RealtimeConnector {
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
    return 'intent' in target
      ? () => OpenAIRealtimeWS.azure(client, { intent: 'transcription', options })
      : () => OpenAIRealtimeWS.azure(client, { deploymentName: target.model, options });
  }
  const client = createOpenAiClient({ baseURL: o.baseURL, apiKey: o.apiKey });
  return 'intent' in target
    ? async () => new OpenAIRealtimeWS({ intent: 'transcription', options }, client)
    : async () => new OpenAIRealtimeWS({ model: target.model, options }, client);
}
