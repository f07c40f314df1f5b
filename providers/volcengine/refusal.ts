/**
 * @module A refused WebSocket handshake (an HTTP answer instead of the upgrade: a bad key,
 * resource id or URL), read for its status and the start of its body, which carries the vendor's
 * reason. Shared by the recogniser and the synthesiser.
 */
import type { IncomingMessage } from 'node:http';

/** Bytes of a refused handshake's body kept for the error message. */
export const MAX_REFUSAL_BODY_BYTES = 1024;

export interface Refusal {
  status: number;
  /** The vendor's trace id for its support (`X-Tt-Logid`). */
  logId: string | undefined;
  /** The body's start, trimmed to `maxChars`. */
  body: string;
}

/** Resolves once the body has ended, failed, or passed `MAX_REFUSAL_BODY_BYTES` (the rest is not read). */
export function readRefusal(res: IncomingMessage, maxChars: number): Promise<Refusal> {
  return new Promise((resolve) => {
    const status = res.statusCode ?? 0;
    const header = res.headers['x-tt-logid'];
    const logId = Array.isArray(header) ? header[0] : header;
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      resolve({ status, logId, body: Buffer.concat(chunks).toString('utf8').slice(0, maxChars).trim() });
    };
    res.on('data', (chunk: Buffer) => {
      if (bytes >= MAX_REFUSAL_BODY_BYTES) return;
      chunks.push(chunk.subarray(0, MAX_REFUSAL_BODY_BYTES - bytes));
      bytes += chunk.length;
      if (bytes >= MAX_REFUSAL_BODY_BYTES) finish();
    });
    res.once('end', finish);
    res.once('error', finish);
  });
}
