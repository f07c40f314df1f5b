/**
 * @module Builds the one pino instance (handed to Fastify and down to every session as a child).
 * Secrets are redacted three ways: by path (known fields), in logged URLs by query key (browsers
 * must put `authorization` in the WebSocket URL), and by value on every finished line (a key
 * echoed in an error text, a token under an oddly encoded key, a child's stderr).
 */
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { SecretValues } from '../core/secret-values.ts';

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

const SECRET_QUERY_KEY = /^(?:authorization|token|access_token|api_key|apikey|key)$/i;

/**
 * Removes secret-bearing query parameters from a URL path for logging. Keys are matched after
 * percent-decoding, as the auth code reads them (`?%61uthorization=` is `authorization`).
 */
export function redactUrl(url: string): string {
  return url.replace(/([?&])([^=&#]*)=([^&#]*)/g, (whole, sep: string, key: string) => {
    let decoded = key;
    try {
      decoded = decodeURIComponent(key.replace(/\+/g, ' '));
    } catch {
      // A malformed escape: match the raw key.
    }
    return SECRET_QUERY_KEY.test(decoded.trim()) ? `${sep}${key}=[Redacted]` : whole;
  });
}

export interface LoggerOptions {
  level: string;
  /** Drops transcripts, prompts and tool arguments logged under `pii`. */
  logContent: boolean;
  destination?: DestinationStream;
  /** Secret values redacted from every line; register more at any time (tokens handed out). */
  secrets?: SecretValues;
}

export function createLogger(opts: LoggerOptions): PinoLogger {
  const paths = opts.logContent ? REDACT_PATHS : [...REDACT_PATHS, 'pii', '*.pii'];
  const secrets = opts.secrets ?? new SecretValues();
  return pino(
    {
      level: opts.level,
      // The finished line, so messages, error texts and nested fields are all covered.
      hooks: { streamWrite: (line) => secrets.redact(line) },
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
