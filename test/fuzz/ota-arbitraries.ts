/**
 * Hostile OTA requests (POST /xiaozhi/ota/ and its activation poll), built as raw HTTP bytes so
 * that anything a stranger can put on the wire is reachable: identity headers (Device-Id,
 * Client-Id) and body fields (mac_address, uuid) with random text, unicode, control characters and
 * lengths up to 100,000 characters; bodies of random JSON, wrong types, deep nesting, huge strings
 * and bytes that are not JSON at all.
 */
import fc from 'fast-check';
import { hostileValue } from './json-arbitraries.ts';

export const OTA_PATHS = ['/xiaozhi/ota/', '/xiaozhi/ota', '/xiaozhi/ota/activate', '/xiaozhi/ota/activate/'] as const;

/** A request as it goes on the wire (the property adds Host, Content-Length and Connection). */
export interface OtaCase {
  path: string;
  /** Header name → value, written as given (a value may hold any character, CR/LF included). */
  headers: Array<[string, string]>;
  body: Buffer;
  /** What the case was built to be, for the report. */
  label: string;
}

const hex2 = fc.integer({ min: 0, max: 255 }).map((n) => n.toString(16).padStart(2, '0'));
export const validMac = fc
  .tuple(fc.array(hex2, { minLength: 6, maxLength: 6 }), fc.constantFrom(':', '-'), fc.boolean())
  .map(([b, sep, upper]) => {
    const mac = b.join(sep);
    return upper ? mac.toUpperCase() : mac;
  });
export const validUuid = fc.uuid();

/** Control characters, CR and LF among them: a header value holding them is not valid HTTP. */
const control = fc.integer({ min: 0, max: 31 }).map((c) => String.fromCharCode(c));

/** Text of `length` characters (0..max) from one of several alphabets. */
const textUpTo = (min: number, max: number): fc.Arbitrary<string> =>
  fc
    .record({
      length: fc.integer({ min, max }),
      ch: fc.constantFrom(
        'a',
        'F',
        '0',
        ':',
        '-',
        ' ',
        '%',
        '"',
        '\\',
        'é',
        '字',
        '😀',
        '\u0000',
        '\u007f',
        '\u200b',
        '\ufeff',
      ),
    })
    .map(({ length, ch }) => ch.repeat(length));

/** Up to 100,000 characters, short ones more often. */
const longText = fc.oneof({ weight: 3, arbitrary: textUpTo(0, 300) }, { weight: 1, arbitrary: textUpTo(300, 100_000) });

/** An identity field's value: well formed, nearly so, or anything at all. */
export const identityValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: validMac },
  { weight: 2, arbitrary: validUuid },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: control, minLength: 1, maxLength: 8 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(validMac, fc.string({ unit: control, maxLength: 3 }), fc.string({ maxLength: 4 }))
      .map(([m, c, s]) => m + c + s),
  },
  { weight: 2, arbitrary: longText },
);

/** A JSON text for a field: a string from `identityValue` mostly, else any other type. */
const identityJson = fc.oneof(
  { weight: 4, arbitrary: identityValue.map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: hostileValue },
);

const firmwareFields = fc.record(
  {
    version: fc.oneof(fc.constant('2'), hostileValue),
    mac_address: identityJson,
    uuid: identityJson,
    chip_model_name: fc.oneof(fc.constant('"esp32s3"'), hostileValue),
    application: fc.oneof(fc.constant('{"name":"xiaozhi","version":"1.6.2"}'), hostileValue),
    board: fc.oneof(fc.constant('{"type":"bread-compact-wifi","name":"bread"}'), hostileValue),
    language: hostileValue,
  },
  { requiredKeys: [] },
);

/** An object's JSON text from its fields' JSON texts (built as text: a value may be nested 20,000 deep). */
const jsonObject = (fields: Record<string, string>): string =>
  `{${Object.entries(fields)
    .map(([k, v]) => `${JSON.stringify(k)}:${v}`)
    .join(',')}}`;

/** A body as the firmware shapes it, with hostile values in any field. */
const firmwareBody = firmwareFields.map(jsonObject);

/**
 * The identity in the body only (a client that sends no headers): a MAC, or nearly, beside a
 * hostile `uuid`, often a long one. A registry that stored what it was given would grow here.
 */
const bodyIdentity = fc
  .record({
    mac: fc.oneof({ weight: 3, arbitrary: validMac }, { weight: 1, arbitrary: identityValue }),
    uuid: fc.oneof(validUuid, textUpTo(1000, 100_000), identityValue),
    rest: firmwareFields,
  })
  .map(({ mac, uuid, rest }) => ({
    text: Buffer.from(jsonObject({ ...rest, mac_address: JSON.stringify(mac), uuid: JSON.stringify(uuid) })),
    label: 'identity in the body',
  }));

const body: fc.Arbitrary<{ text: Buffer; label: string }> = fc.oneof(
  { weight: 5, arbitrary: firmwareBody.map((t) => ({ text: Buffer.from(t), label: 'firmware-shaped' })) },
  { weight: 2, arbitrary: hostileValue.map((t) => ({ text: Buffer.from(t), label: 'any JSON' })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 300 }).map((t) => ({ text: Buffer.from(t), label: 'text' })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2000 }).map((b) => ({ text: Buffer.from(b), label: 'bytes' })) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 250_000, max: 400_000 })
      .map((n) => ({ text: Buffer.from(`{"mac_address":"${'a'.repeat(n)}"}`), label: 'over the body limit' })),
  },
  { weight: 1, arbitrary: fc.constant({ text: Buffer.alloc(0), label: 'empty' }) },
);

/** Mostly what the firmware sends, so most requests reach the handler rather than a 415. */
const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/octet-stream'),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(undefined, 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

/**
 * Device-Id and Client-Id headers: a firmware's well-formed pair (the body's hostile values then
 * reach the handler behind a valid identity), none (the body's mac_address and uuid decide), or
 * hostile values, each present or not.
 */
const identityHeaders: fc.Arbitrary<[string | undefined, string | undefined]> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(validMac, validUuid) },
  { weight: 2, arbitrary: fc.constant<[undefined, undefined]>([undefined, undefined]) },
  {
    weight: 4,
    arbitrary: fc.tuple(fc.option(identityValue, { nil: undefined }), fc.option(identityValue, { nil: undefined })),
  },
);

const path = fc.oneof(
  { weight: 4, arbitrary: fc.constant('/xiaozhi/ota/') },
  { weight: 1, arbitrary: fc.constantFrom(...OTA_PATHS) },
);

/** Headers and body drawn apart. */
const anyCase: fc.Arbitrary<OtaCase> = fc
  .record({
    path,
    ids: identityHeaders,
    /** Header names are case-insensitive; each spelling must be read the same. */
    headerCase: fc.constantFrom(['Device-Id', 'Client-Id'], ['device-id', 'client-id'], ['DEVICE-ID', 'CLIENT-ID']),
    contentType,
    activationVersion: fc.option(fc.constantFrom('1', '2', 'x'), { nil: undefined }),
    body,
  })
  .map(({ path, ids: [deviceId, clientId], headerCase, contentType: ct, activationVersion, body: b }) => {
    const headers: Array<[string, string]> = [];
    if (deviceId !== undefined) headers.push([headerCase[0], deviceId]);
    if (clientId !== undefined) headers.push([headerCase[1], clientId]);
    if (ct !== undefined) headers.push(['Content-Type', ct]);
    if (activationVersion !== undefined) headers.push(['Activation-Version', activationVersion]);
    const ids =
      [deviceId !== undefined ? 'Device-Id' : '', clientId !== undefined ? 'Client-Id' : '']
        .filter(Boolean)
        .join(' and ') || 'no id headers';
    return { path, headers, body: b.text, label: `${b.label} body, ${ids}` };
  });

/** No identity headers, the identity in the body. */
const bodyIdentityCase: fc.Arbitrary<OtaCase> = fc.record({ path, body: bodyIdentity }).map(({ path: p, body: b }) => ({
  path: p,
  headers: [['Content-Type', 'application/json']],
  body: b.text,
  label: 'identity in the body, no id headers',
}));

export const otaCase: fc.Arbitrary<OtaCase> = fc.oneof(
  { weight: 4, arbitrary: anyCase },
  { weight: 1, arbitrary: bodyIdentityCase },
);
