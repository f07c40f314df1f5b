/**
 * @module Builds the one pino instance (handed to Fastify and down to every session as a child).
 * Secrets are redacted by path, and tokens in query strings are cut out of logged URLs, because
 * browsers must put `authorization` in the WebSocket URL.
 */
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'token',
  'apiKey',
  '*.apiKey',
  '*.token',
  '*.authorization',
  'llm.apiKey',
  'asr.apiKey',
  'tts.apiKey',
  'config.llm.apiKey',
  'config.asr.apiKey',
  'config.tts.apiKey',
  'config.server.auth.tokens',
  'server.auth.tokens',
];

/** Removes secret-bearing query parameters from a URL path for logging. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:authorization|token|access_token|api_key|key)=)[^&]*/gi, '$1[Redacted]');
}

export interface LoggerOptions {
  level: string;
  /** Drops transcripts, prompts and tool arguments logged under `pii`. */
  logContent: boolean;
  destination?: DestinationStream;
}

export function createLogger(opts: LoggerOptions): PinoLogger {
  const paths = opts.logContent ? REDACT_PATHS : [...REDACT_PATHS, 'pii', '*.pii'];
  return pino(
    {
      level: opts.level,
      redact: { paths, censor: '[Redacted]' },
      serializers: {
        req(req: { method?: string; url?: string; headers?: Record<string, unknown>; socket?: { remoteAddress?: string } }) {
          return {
            method: req.method,
            url: req.url ? redactUrl(req.url) : undefined,
            remoteAddress: req.socket?.remoteAddress,
            deviceId: req.headers?.['device-id'],
          };
        },
      },
    },
    opts.destination,
  );
}
