/**
 * @module Builds the one pino instance (handed to Fastify and down to every session as a child).
 * Secrets are redacted three ways: by path (known fields), in logged URLs (userinfo and query keys
 * such as `authorization`, which browsers must put in the WebSocket URL; core/redact-url.ts), and
 * by value on every finished line (a key echoed in an error text, a token under an oddly encoded
 * key, a child's stderr); absolute URLs inside any finished line are passed through the URL
 * redaction too.
 */
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { SecretValues } from '../core/secret-values.ts';
import { redactUrl, redactUrlsInText } from '../core/redact-url.ts';

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
      hooks: { streamWrite: (line) => redactUrlsInText(secrets.redact(line)) },
      redact: { paths, censor: '[Redacted]' },
      serializers: {
        req(req: {
          method?: string;
          url?: string;
          headers?: Record<string, unknown>;
          socket?: { remoteAddress?: string };
        }) {
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
