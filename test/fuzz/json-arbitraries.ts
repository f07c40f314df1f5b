/**
 * Text messages a hostile device sends: well-shaped hello/listen/abort/mcp/iot/goodbye with
 * hostile field values, wrong types, huge and deep values, unknown types, non-objects, broken JSON.
 * Messages are built as raw JSON text, so a value nested 20,000 deep needs no recursion here, and
 * each message carries the class it was built to be (see inputs.ts).
 */
import fc from 'fast-check';
import { shortPrint, type FuzzInput, type TextClass } from './inputs.ts';

/** Keys the protocol gives a meaning; junk keys never use them, so they cannot change a message's class. */
const KNOWN_KEYS = new Set([
  'type',
  'version',
  'features',
  'transport',
  'audio_params',
  'session_id',
  'state',
  'mode',
  'text',
  'reason',
  'payload',
]);

type Field = readonly [key: string, rawJson: string];

const raw = (v: unknown): string => JSON.stringify(v) ?? 'null';

function objectText(fields: readonly Field[]): string {
  return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
}

/** Nested arrays or objects as text: deep enough to break a recursive walker, cheap to build. */
const deepValue: fc.Arbitrary<string> = fc
  .record({
    depth: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1000, max: 20_000 })),
    objects: fc.boolean(),
  })
  .map(({ depth, objects }) =>
    objects ? '{"a":'.repeat(depth) + '0' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth),
  );

/** A long string of `bytes` bytes as JSON text (escapes included), mostly under the 64 KiB message limit. */
const hugeString: fc.Arbitrary<string> = fc
  .record({
    bytes: fc.oneof(
      { weight: 9, arbitrary: fc.integer({ min: 1000, max: 50_000 }) },
      { weight: 1, arbitrary: fc.integer({ min: 66_000, max: 200_000 }) },
    ),
    ch: fc.constantFrom('a', '"', '\\', '\u0000', '字', '😀', '\ud800'),
  })
  .map(({ bytes, ch }) => raw(ch.repeat(Math.ceil(bytes / Buffer.byteLength(raw(ch).slice(1, -1))))));

const oddNumber = fc.constantFrom(
  '1e308',
  '-1e308',
  '-0',
  '1e-400',
  '9007199254740993',
  '123456789012345678901234567890',
  '0.1',
  '-1',
);

/** Any value in a field that takes no particular type. */
export const hostileValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(raw) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map(raw) },
  { weight: 1, arbitrary: oddNumber },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: deepValue },
  { weight: 1, arbitrary: fc.array(fc.integer(), { minLength: 1000, maxLength: 5000 }).map(raw) },
);

const junkKey = fc
  .oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', ''))
  .filter((k) => !KNOWN_KEYS.has(k));
const junkFields: fc.Arbitrary<Field[]> = fc.array(fc.tuple(junkKey, hostileValue), { maxLength: 3 });

/** Optional field: present with a value from `arb`, or absent. */
function opt(key: string, arb: fc.Arbitrary<unknown>): fc.Arbitrary<Field[]> {
  return fc.option(
    arb.map((v): Field[] => [[key, raw(v)]]),
    { nil: [] },
  );
}

function ascii(maxLength: number): fc.Arbitrary<string> {
  return fc.string({ maxLength });
}

const validFeatures = fc
  .tuple(opt('mcp', fc.boolean()), opt('aec', fc.boolean()), opt('glyph_push', fc.boolean()), junkFields)
  .map((parts) => objectText(parts.flat()));

const validAudioParams = fc
  .tuple(
    opt('format', ascii(32)),
    opt('sample_rate', fc.integer({ min: 1, max: 192_000 })),
    opt('channels', fc.integer({ min: 1, max: 8 })),
    opt('frame_duration', fc.integer({ min: 1, max: 1000 })),
    junkFields,
  )
  .map((parts) => objectText(parts.flat()));

const validSessionId = opt('session_id', ascii(200));

const validHelloFields: fc.Arbitrary<Field[]> = fc
  .tuple(
    opt('version', fc.constantFrom(1, 2, 3, '1', '2', '3')),
    fc.option(
      validFeatures.map((f): Field[] => [['features', f]]),
      { nil: [] },
    ),
    opt('transport', ascii(32)),
    fc.option(
      validAudioParams.map((a): Field[] => [['audio_params', a]]),
      { nil: [] },
    ),
    validSessionId,
    junkFields,
  )
  .map((parts) => [['type', '"hello"'] as const, ...parts.flat()]);

const long = (min: number, max: number): fc.Arbitrary<string> =>
  fc.integer({ min, max }).map((n) => raw('x'.repeat(n)));

/** One field of a hello with a value the documented schema refuses (or a version the server does not speak). */
const badHelloField: fc.Arbitrary<Field> = fc.oneof(
  fc.tuple(
    fc.constant('version'),
    fc.oneof(
      fc.constantFrom('0', '4', '99', '-1', '2.5', '1e21', '"x"', '""', '"2.0"', '"-1"', 'null', 'true', '{}', '[]'),
      deepValue,
    ),
  ),
  fc.tuple(
    fc.constant('features'),
    fc.constantFrom('"yes"', '1', '[]', 'null', '{"mcp":"true"}', '{"aec":1}', '{"glyph_push":null}', '{"mcp":[true]}'),
  ),
  fc.tuple(fc.constant('transport'), fc.oneof(fc.constantFrom('1', 'null', '{}', '[]'), long(33, 500))),
  fc.tuple(
    fc.constant('audio_params'),
    fc.oneof(
      fc.constantFrom(
        '"opus"',
        'null',
        '[]',
        '{"sample_rate":0}',
        '{"sample_rate":-16000}',
        '{"sample_rate":16000.5}',
        '{"sample_rate":192001}',
      ),
      fc.constantFrom(
        '{"sample_rate":"16000"}',
        '{"channels":0}',
        '{"channels":9}',
        '{"frame_duration":0}',
        '{"frame_duration":1001}',
        '{"format":5}',
      ),
      long(33, 100).map((s) => `{"format":${s}}`),
    ),
  ),
  fc.tuple(fc.constant('session_id'), fc.oneof(fc.constantFrom('5', 'null', '{}', '[]', 'true'), long(201, 1000))),
);

const text =
  (cls: TextClass) =>
  (t: string): FuzzInput =>
    shortPrint({ kind: 'text', text: t, cls });

export const validHello: fc.Arbitrary<FuzzInput> = validHelloFields.map(objectText).map(text('hello'));

export const badHello: fc.Arbitrary<FuzzInput> = fc
  .tuple(validHelloFields, badHelloField)
  .map(([fields, bad]) => objectText([...fields.filter(([k]) => k !== bad[0]), bad]))
  .map(text('badHello'));

const goodbye: fc.Arbitrary<FuzzInput> = fc
  .tuple(validSessionId, junkFields)
  .map((parts) => objectText([['type', '"goodbye"'], ...parts.flat()]))
  .map(text('goodbye'));

/** A goodbye the schema refuses: ignored like any invalid message, the session goes on. */
const badGoodbye: fc.Arbitrary<FuzzInput> = badHelloField
  .filter(([k]) => k === 'session_id')
  .map((bad) => objectText([['type', '"goodbye"'], bad]))
  .map(text('other'));

/** A field of a message whose value may be right, wrong-typed, huge or deep. */
function anyOf(key: string, good: fc.Arbitrary<unknown>): fc.Arbitrary<Field[]> {
  return fc.oneof(
    { weight: 3, arbitrary: opt(key, good) },
    { weight: 1, arbitrary: hostileValue.map((v): Field[] => [[key, v]]) },
  );
}

const listen = fc
  .tuple(
    anyOf('state', fc.constantFrom('start', 'stop', 'detect', 'START', 'explode', '')),
    anyOf('mode', fc.constantFrom('auto', 'manual', 'realtime', 'turbo')),
    anyOf(
      'text',
      fc.oneof(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.constantFrom('你好小智', 'hello', '   ', '')),
    ),
    anyOf('session_id', ascii(40)),
    junkFields,
  )
  .map((parts) => objectText([['type', '"listen"'], ...parts.flat()]));

const abort = fc
  .tuple(
    anyOf('reason', fc.constantFrom('wake_word_detected', '', 'x'.repeat(100), 'x'.repeat(101))),
    anyOf('session_id', ascii(40)),
    junkFields,
  )
  .map((parts) => objectText([['type', '"abort"'], ...parts.flat()]));

const jsonRpcLike = fc
  .record(
    {
      jsonrpc: fc.constantFrom('2.0', '1.0'),
      id: fc.oneof(fc.integer(), fc.string(), fc.constant(null)),
      method: fc.string(),
      result: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  )
  .map(raw);

const mcp = fc
  .tuple(
    fc.oneof(jsonRpcLike, hostileValue).map((v): Field[] => [['payload', v]]),
    anyOf('session_id', ascii(40)),
    junkFields,
  )
  .map((parts) => objectText([['type', '"mcp"'], ...parts.flat()]));

const iot = fc
  .tuple(
    junkFields,
    anyOf('descriptors', fc.jsonValue({ maxDepth: 3 })),
    anyOf('states', fc.jsonValue({ maxDepth: 3 })),
  )
  .map((parts) => objectText([['type', '"iot"'], ...parts.flat()]));

const unknownType = fc
  .tuple(
    fc.oneof(
      fc
        .string({ maxLength: 20 })
        .filter((t) => t !== 'hello' && t !== 'goodbye')
        .map(raw),
      fc.constantFrom('1', 'null', '{}', '[]', 'true', '"HELLO"', '"hello "', '"goodbye\\u0000"'),
    ),
    junkFields,
  )
  .map(([t, junk]) => objectText([['type', t], ...junk]));

/** True when the text could be a hello or goodbye: random text must never be one by accident. */
function mightEndSession(t: string): boolean {
  try {
    const v = JSON.parse(t) as { type?: unknown } | null;
    return typeof v === 'object' && v !== null && (v.type === 'hello' || v.type === 'goodbye');
  } catch {
    return false;
  }
}

const notJson = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.constantFrom(
    '',
    ' ',
    '{',
    '{"type":"listen",',
    '{"type":"hello"',
    '{"type":"hello",}',
    "{'type':'hello'}",
    'NaN',
    'undefined',
    '\u0000',
  ),
  // A real message cut short: what a device (or a proxy) that drops bytes would send.
  fc.tuple(validHelloFields.map(objectText), fc.nat()).map(([t, n]) => t.slice(0, n % Math.max(1, t.length))),
);

const nonObject = fc.oneof(
  fc
    .jsonValue({ maxDepth: 3 })
    .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
    .map(raw),
  deepValue,
);

/** Any text message that is neither a hello nor a well-formed goodbye (it never ends the session). */
const otherText: fc.Arbitrary<FuzzInput> = fc
  .oneof(listen, listen, abort, mcp, iot, unknownType, notJson, nonObject)
  .filter((t) => !mightEndSession(t))
  .map(text('other'));

/** Every kind of text message, hellos and goodbyes included. */
export const textMessage: fc.Arbitrary<FuzzInput> = fc.oneof(
  { weight: 12, arbitrary: otherText },
  { weight: 2, arbitrary: validHello },
  { weight: 2, arbitrary: badHello },
  { weight: 1, arbitrary: goodbye },
  { weight: 1, arbitrary: badGoodbye },
);

/** Byte sequences that are not UTF-8: a lone continuation byte, overlong forms, encoded surrogates, cut sequences. */
const invalidUtf8 = fc.constantFrom(
  [0xff],
  [0x80],
  [0xc3, 0x28],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
);

export const badUtf8Text: fc.Arbitrary<FuzzInput> = fc
  .tuple(
    fc.constantFrom('', '{"type":"listen","state":"detect","text":"', '{"type":"hello","version":1,"x":"'),
    invalidUtf8,
    fc.constantFrom('', '"}'),
  )
  .map(([pre, bad, post]) =>
    shortPrint({ kind: 'badUtf8', bytes: Buffer.concat([Buffer.from(pre), Buffer.from(bad), Buffer.from(post)]) }),
  );
