/**
 * @module The end of an OpenAI-compatible event stream (the `data: [DONE]` line) and what its
 * connection does when the reader stops there. The openai SDK (since major 7) stops reading at
 * that line, before the body's own end (a chunked answer's last, empty chunk) has arrived.
 * Destroying the answer then would close a connection the server keeps open, and the next request
 * would open a new one (with a TLS handshake to a remote provider). So the end is waited for, as
 * the SDK itself did before 7, but bounded in time and bytes, and the connection goes back to the
 * keep-alive pool before the reader goes on (a tool round's next request finds it free).
 */
import type { Readable } from 'node:stream';

/** After the end line, the body's end is waited for this long… */
const END_WAIT_MS = 1000;
/** …and through at most this many more bytes; past either the connection is closed. */
const END_WAIT_BYTES = 64 * 1024;

/** The end line at the start of a line, with or without the space SSE allows after `data:`. */
const MARKERS = [Buffer.from('\ndata: [DONE]'), Buffer.from('\ndata:[DONE]')];
const CARRY = MARKERS[0]!.length - 1;

/** Watches the bytes of an event stream, chunk by chunk, for the end line (also split across chunks). */
export class EventStreamEnd {
  /** Whether the end line has gone by. */
  seen = false;
  // The tail of the bytes so far, so a marker split between chunks is found; the body starts a line.
  #carry: Buffer = Buffer.from('\n');

  push(chunk: Buffer): void {
    if (this.seen) return;
    const window = Buffer.concat([this.#carry, chunk]);
    this.seen = MARKERS.some((m) => window.includes(m));
    this.#carry = Buffer.from(window.subarray(Math.max(0, window.length - CARRY)));
  }
}

/**
 * Lets `stream` (an answer whose reader stopped after the end line) run to its end, so that its
 * connection is reused, and resolves then; closes it if the end does not come within the bounds.
 */
export function awaitEndAfterDone(stream: Readable): Promise<void> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => stream.destroy(), END_WAIT_MS);
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    let left = END_WAIT_BYTES;
    stream.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) stream.destroy();
    });
    // Nobody reads any more: a failure now (a cut, an abort) only loses the connection.
    stream.on('error', () => {});
    stream.once('end', done);
    stream.once('close', done);
    stream.resume();
  });
}
