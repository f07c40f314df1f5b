/**
 * @module WebSocket close codes the server uses, in one table. Devices ignore the code (they just
 * go idle), but browser clients and logs show it, so each says what happened.
 */
export const CloseCode = {
  /** Normal end: goodbye tool, server shutdown after drain. */
  Normal: 1000,
  /** Server is shutting down. */
  GoingAway: 1001,
  /** A frame that breaks RFC 6455 (`ws` closes with it). Binary audio before hello is dropped, not closed. */
  ProtocolError: 1002,
  /** A text frame that is not UTF-8: `ws` closes with it before the session sees the frame. */
  InvalidPayload: 1007,
  /** Oversize frame. */
  TooBig: 1009,
  /** Unexpected server failure. */
  InternalError: 1011,
  /** Application codes (4000–4999). */
  HelloTimeout: 4001,
  IdleTimeout: 4002,
  Replaced: 4003,
  BadHello: 4004,
  Unauthorized: 4005,
  /** The worker thread holding the session's audio state failed; reconnecting gets a new one. */
  MediaLost: 4006,
  /** The device stopped reading: more than `server.maxOutputBufferBytes` queued for it. */
  SlowReader: 4007,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];

/** Close reasons must stay under 123 bytes (RFC 6455). */
export const CloseReason: Readonly<Record<CloseCode, string>> = {
  1000: 'bye',
  1001: 'server shutting down',
  1002: 'protocol error',
  1007: 'invalid UTF-8 in a text frame',
  1009: 'frame too large',
  1011: 'internal error',
  4001: 'no hello received in time',
  4002: 'idle timeout',
  4003: 'replaced by a newer connection from the same device',
  4004: 'invalid hello',
  4005: 'unauthorized',
  4006: 'media worker failed; reconnect',
  4007: 'output buffer over limit (client not reading)',
};
