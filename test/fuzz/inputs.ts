/**
 * What a fuzzed device sends on one connection, and the model of how the server must end it.
 *
 * The model is written from the protocol documentation (protocol/close-codes.ts, session.ts, the
 * `ws` limits), not by calling the server's parser: each generated text message carries the class
 * its generator built it to be, so a server that accepts a bad hello or ignores a goodbye is
 * caught instead of being agreed with.
 */
import fc from 'fast-check';
import { CloseCode } from '../../protocol/close-codes.ts';
import type { ProtocolVersion } from '../../protocol/framing.ts';

/**
 * What a text message is for the session:
 * - `hello`: a hello the server must accept (valid shape, protocol version 1–3);
 * - `badHello`: a hello it must refuse (a field of the wrong type or range, or an unsupported version);
 * - `goodbye`: a well-formed goodbye (ends the session once hello is done);
 * - `other`: anything else: never ends the session (ignored, or handled without closing).
 */
export type TextClass = 'hello' | 'badHello' | 'goodbye' | 'other';

export type FuzzInput =
  | { kind: 'text'; text: string; cls: TextClass }
  /** A text frame whose bytes are not UTF-8 (`ws` must refuse it). */
  | { kind: 'badUtf8'; bytes: Uint8Array }
  | { kind: 'binary'; bytes: Uint8Array; what: string };

export interface ConnectionScript {
  /** The Protocol-Version header (what the device claims before its hello). */
  headerVersion: ProtocolVersion;
  inputs: FuzzInput[];
}

export type ExpectedEnd = { open: true; helloDone: boolean } | { open: false; code: number; after: number };

/**
 * How the server must end the connection after `inputs`, message by message:
 * a frame over `maxMessageBytes` → 1009 and a text frame that is not UTF-8 → 1007 (both from `ws`,
 * before the session sees them); before hello, a refused hello → 4004 (BadHello); after hello, a
 * goodbye → 1000. Everything else leaves the connection open. Scripts stay far below the
 * control-message burst, so the rate limit drops nothing here.
 */
export function expectedEnd(inputs: readonly FuzzInput[], maxMessageBytes: number): ExpectedEnd {
  let helloDone = false;
  for (let i = 0; i < inputs.length; i++) {
    const input = inputs[i] as FuzzInput;
    const bytes = input.kind === 'text' ? Buffer.byteLength(input.text) : input.bytes.byteLength;
    if (bytes > maxMessageBytes) return { open: false, code: CloseCode.TooBig, after: i };
    if (input.kind === 'badUtf8') return { open: false, code: CloseCode.InvalidPayload, after: i };
    if (input.kind !== 'text') continue;
    if (!helloDone && input.cls === 'hello') helloDone = true;
    else if (!helloDone && input.cls === 'badHello') return { open: false, code: CloseCode.BadHello, after: i };
    else if (helloDone && input.cls === 'goodbye') return { open: false, code: CloseCode.Normal, after: i };
  }
  return { open: true, helloDone };
}

/** One line per input for counterexamples: a 100 KB frame printed byte by byte would bury the failure. */
export function describeInput(input: FuzzInput): string {
  if (input.kind === 'text') {
    const t =
      input.text.length > 300
        ? `${input.text.slice(0, 200)}…(${input.text.length} chars)…${input.text.slice(-60)}`
        : input.text;
    return `text/${input.cls} ${JSON.stringify(t)}`;
  }
  const head = Buffer.from(input.bytes.subarray(0, 24)).toString('hex');
  return `${input.kind}${input.kind === 'binary' ? ` (${input.what})` : ''} ${input.bytes.byteLength} bytes ${head}${input.bytes.byteLength > 24 ? '…' : ''}`;
}

/** Makes fast-check print the input with describeInput. */
export function shortPrint<T extends FuzzInput>(input: T): T {
  return Object.assign(input, { [fc.toStringMethod]: () => describeInput(input) });
}
