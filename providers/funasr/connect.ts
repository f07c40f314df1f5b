/**
 * @module The WebSocket to a FunASR server, and what its connection failures mean.
 *
 * The subprotocol: FunASR's Python server is served by `websockets` with `subprotocols=["binary"]`,
 * which (in its current versions) refuses a client that offers none with HTTP 400; its C++ server
 * (websocketpp) never selects one, and the `ws` client then aborts a handshake in which it offered
 * one ("Server sent no subprotocol"). No single handshake suits both, so the client offers
 * `binary` and, on either refusal, tries once the other way and keeps what worked for the next
 * utterances (`FunasrPeer`).
 */
import { WebSocket } from 'ws';
import { ErrorCode, VoiceError } from '../../core/errors.ts';

/** Largest frame accepted from the server: a result with per-character timestamps for a long sentence is tens of KiB. */
export const MAX_FRAME_BYTES = 256 * 1024;

/** What the client has learnt about the server's handshake, shared by one provider's streams. */
export interface FunasrPeer {
  offerBinary: boolean;
}

export interface SocketOptions {
  offerBinary: boolean;
  rejectUnauthorized: boolean;
  ca: Buffer | undefined;
}

export function openFunasrSocket(url: string, o: SocketOptions): WebSocket {
  return new WebSocket(url, o.offerBinary ? ['binary'] : [], {
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    followRedirects: false,
    rejectUnauthorized: o.rejectUnauthorized,
    ...(o.ca ? { ca: o.ca } : {}),
  });
}

/** The HTTP status of a refused handshake, from `ws`'s error message. */
function refusedStatus(err: Error): number | undefined {
  const m = /^Unexpected server response: (\d{3})/.exec(err.message);
  return m ? Number(m[1]) : undefined;
}

/** True when the other subprotocol choice may succeed where this one failed (see the module comment). */
export function subprotocolRefused(err: Error, offeredBinary: boolean): boolean {
  return offeredBinary ? err.message === 'Server sent no subprotocol' : refusedStatus(err) === 400;
}

/** A failure before the connection opened: the server is unreachable, refuses us, or its TLS is not trusted. */
export function connectFailure(err: Error): VoiceError {
  const status = refusedStatus(err);
  const code = (err as NodeJS.ErrnoException).code;
  const what =
    status !== undefined
      ? `the handshake was answered with HTTP ${status}`
      : code !== undefined
        ? `${code}: ${err.message}`
        : err.message;
  return new VoiceError(ErrorCode.ProviderUnavailable, `funasr: cannot connect (${what})`, {
    retryable: status !== 401 && status !== 403,
    cause: err,
  });
}
