/**
 * @module What becomes of an error on an accepted WebSocket. @fastify/websocket's default handler
 * logs every one at error level with a stack, so one oversize or non-UTF-8 frame from any client
 * wrote a server-failure line (found by the protocol fuzz suite). A client's protocol errors
 * belong at warn, without stacks. The device route already logs a socket's
 * errors at warn; here only our own failures are logged, at error.
 */
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';

/** Network errors a client causes by dropping or resetting its connection. */
const CLIENT_NETWORK_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);

/** A client's protocol violation (`ws` codes them `WS_ERR_*`) or dropped connection, not a server failure. */
export function isClientSocketError(err: Error): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === 'string' && (code.startsWith('WS_ERR_') || CLIENT_NETWORK_CODES.has(code));
}

/** The `errorHandler` of @fastify/websocket: the socket is cut either way, as the default does. */
export function webSocketErrorHandler(err: Error, socket: WebSocket, request: FastifyRequest): void {
  if (!isClientSocketError(err)) request.log.error({ err }, 'websocket handler failed');
  socket.terminate();
}
