/**
 * What a hostile client sends the MQTT+UDP transport: byte streams at the broker port (garbage,
 * CONNECTs with every field wrong, lying lengths, oversize packets, packets a device never sends
 * after a valid CONNECT, many connections at once), JSON messages published by an authenticated
 * device (hellos with bad fields, huge and deep ones, and everything else the WebSocket fuzz
 * sends), and UDP datagrams (random, short, huge, forged with a wrong key under a known or unknown
 * ssrc, replays of the bystander's own packets, lying lengths). Cases are descriptions; the
 * property (mqtt-property.ts) turns them into bytes with the run's live credentials and keys.
 */
import fc from 'fast-check';
import { badUtf8Text, textMessage } from './json-arbitraries.ts';
import type { FuzzInput } from './inputs.ts';

/** Whose credentials a CONNECT carries. */
export type ConnectAuth =
  /** A fuzz device's own, from its OTA answer. */
  | 'valid'
  /** The fuzz device's client id and username with a wrong password. */
  | 'wrong_password'
  /** The bystander's client id and username with a wrong password (must not displace it). */
  | 'bystander_wrong_password'
  /** No username or password. */
  | 'none'
  /** Client id, username and password all random. */
  | 'random';

/** A CONNECT field set wrong on purpose; null: the CONNECT as a client sends it. */
export type ConnectMutation =
  | { field: 'protocolName'; value: string }
  | { field: 'level'; value: number }
  | { field: 'flags'; value: number }
  | { field: 'keepalive'; value: number }
  | { field: 'clientId'; value: string }
  | { field: 'will'; topic: string; bytes: number }
  | { field: 'truncate'; at: number }
  | { field: 'lengthLie'; claimed: number };

export type AfterConnect =
  | {
      t: 'publish';
      topic: 'own' | 'other' | 'wildcard' | 'sys' | 'empty' | 'long';
      payload: 'json' | 'random' | 'huge';
      bytes: number;
      qos: 0 | 1 | 2;
      retain: boolean;
    }
  | { t: 'subscribe'; topics: string[] }
  | { t: 'unsubscribe'; topics: string[] }
  | { t: 'ping' }
  | { t: 'connect_again' }
  | { t: 'lie'; type: number; claimed: number; send: number }
  | { t: 'raw'; bytes: Uint8Array }
  | { t: 'disconnect' };

export type BrokerCase =
  | { kind: 'garbage'; bytes: Uint8Array; chunk: number }
  /** `seed`: the bytes the case makes up (passwords, payloads) come from it, so a case replays exactly. */
  | {
      kind: 'connect';
      auth: ConnectAuth;
      mutation: ConnectMutation | null;
      after: AfterConnect[];
      chunk: number;
      seed: number;
    }
  | { kind: 'many'; connections: number; partial: boolean };

const bytes = (max: number): fc.Arbitrary<Uint8Array> => fc.uint8Array({ minLength: 1, maxLength: max });

const mutation: fc.Arbitrary<ConnectMutation> = fc.oneof(
  fc.record({
    field: fc.constant('protocolName' as const),
    value: fc.oneof(fc.constantFrom('MQIsdp', '', 'mqtt', 'MQTT\u0000', 'HTTP'), fc.string({ maxLength: 40 })),
  }),
  fc.record({
    field: fc.constant('level' as const),
    value: fc.oneof(fc.constantFrom(0, 3, 5, 6, 255), fc.integer({ min: 0, max: 255 })),
  }),
  // Reserved bit, will QoS 3, password without username, will flags without a will.
  fc.record({
    field: fc.constant('flags' as const),
    value: fc.oneof(fc.constantFrom(0x01, 0x18, 0x40, 0x24, 0xff), fc.integer({ min: 0, max: 255 })),
  }),
  fc.record({ field: fc.constant('keepalive' as const), value: fc.constantFrom(0, 1, 65535) }),
  fc.record({
    field: fc.constant('clientId' as const),
    value: fc.oneof(
      fc.constantFrom('', 'xiaozhi@@@', 'xiaozhi@@@zz_zz_zz_zz_zz_zz@@@x', '#', '+/'),
      fc.string({ maxLength: 300 }),
      fc.integer({ min: 1000, max: 60_000 }).map((n) => 'x'.repeat(n)),
    ),
  }),
  fc.record({
    field: fc.constant('will' as const),
    topic: fc.constantFrom('device-server', '#', 'x'),
    bytes: fc.integer({ min: 0, max: 70_000 }),
  }),
  fc.record({ field: fc.constant('truncate' as const), at: fc.integer({ min: 1, max: 200 }) }),
  fc.record({
    field: fc.constant('lengthLie' as const),
    claimed: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1000, max: 268_435_455 })),
  }),
);

const topicList = fc.array(
  fc.oneof(fc.constantFrom('#', '+/#', '$SYS/#', 'device-server', 'devices/#', '+', ''), fc.string({ maxLength: 30 })),
  { minLength: 1, maxLength: 4 },
);

const afterConnect: fc.Arbitrary<AfterConnect> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('publish' as const),
      topic: fc.constantFrom('own', 'own', 'other', 'wildcard', 'sys', 'empty', 'long'),
      payload: fc.constantFrom('json', 'json', 'random', 'huge'),
      bytes: fc.integer({ min: 0, max: 300 }),
      qos: fc.constantFrom(0, 0, 1, 2),
      retain: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('subscribe' as const), topics: topicList }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('unsubscribe' as const), topics: topicList }) },
  { weight: 1, arbitrary: fc.constant({ t: 'ping' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'connect_again' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('lie' as const),
      type: fc.integer({ min: 0, max: 15 }),
      claimed: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 100_000, max: 268_435_455 })),
      send: fc.integer({ min: 0, max: 2000 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('raw' as const), bytes: bytes(300) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'disconnect' as const }) },
);

export const brokerCase: fc.Arbitrary<BrokerCase> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('garbage' as const),
      bytes: bytes(3000),
      chunk: fc.integer({ min: 1, max: 4096 }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('connect' as const),
      auth: fc.constantFrom<ConnectAuth>(
        'valid',
        'valid',
        'valid',
        'wrong_password',
        'bystander_wrong_password',
        'none',
        'random',
      ),
      mutation: fc.option(mutation, { nil: null, freq: 2 }),
      after: fc.array(afterConnect, { maxLength: 6 }),
      chunk: fc.oneof(fc.constant(65_536), fc.integer({ min: 1, max: 64 })),
      seed: fc.integer(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('many' as const),
      connections: fc.integer({ min: 2, max: 40 }),
      partial: fc.boolean(),
    }),
  },
);

/** JSON (or not) an authenticated device publishes: the WebSocket fuzz's text messages, hellos weighted up. */
export const helloCase: fc.Arbitrary<{ messages: FuzzInput[]; goodbyeAtEnd: boolean }> = fc.record({
  messages: fc.array(fc.oneof({ weight: 4, arbitrary: textMessage }, { weight: 1, arbitrary: badUtf8Text }), {
    minLength: 1,
    maxLength: 6,
  }),
  goodbyeAtEnd: fc.boolean(),
});

/** Whose ssrc a forged datagram names: the bystander's, a random one, or 0 (never given out). */
export type Ssrc = 'bystander' | 'unknown' | 'zero';

export type Datagram =
  | { k: 'random'; bytes: Uint8Array }
  | { k: 'short'; len: number }
  | { k: 'huge'; len: number; ssrc: Ssrc }
  /** A well-formed header under `ssrc` with a payload sealed by a key that is not the session's. */
  | { k: 'forged'; ssrc: Ssrc; sequence: 'next' | 'far' | 'max' | 'zero'; payload: number; lengthLie: number }
  /**
   * Many forged datagrams under the bystander's ssrc with a wrong key, sequences counting up from
   * its next (or from far ahead): what an attacker who sees the cleartext header sends, hoping one
   * decrypts to something that looks like Opus.
   */
  | { k: 'burst'; count: number; from: 'next' | 'far'; payload: number }
  /** One of the bystander's own earlier datagrams, again (from another address), possibly altered. */
  | { k: 'replay'; back: number; flip: number | null }
  | { k: 'bad_type'; type: number; ssrc: Ssrc };

const ssrc = fc.constantFrom<Ssrc>('bystander', 'bystander', 'unknown', 'zero');

export const datagram: fc.Arbitrary<Datagram> = fc.oneof(
  fc.record({ k: fc.constant('random' as const), bytes: bytes(1500) }),
  fc.record({ k: fc.constant('short' as const), len: fc.integer({ min: 0, max: 15 }) }),
  fc.record({
    k: fc.constant('huge' as const),
    len: fc.oneof(fc.integer({ min: 1500, max: 9000 }), fc.constant(65_507)),
    ssrc,
  }),
  fc.record({
    k: fc.constant('forged' as const),
    ssrc,
    sequence: fc.constantFrom('next', 'far', 'max', 'zero'),
    payload: fc.integer({ min: 0, max: 400 }),
    lengthLie: fc.constantFrom(0, 0, 1, -1, 1000),
  }),
  fc.record({
    k: fc.constant('burst' as const),
    count: fc.integer({ min: 20, max: 600 }),
    from: fc.constantFrom('next', 'far'),
    payload: fc.integer({ min: 1, max: 300 }),
  }),
  fc.record({
    k: fc.constant('replay' as const),
    back: fc.integer({ min: 0, max: 20 }),
    flip: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }),
  }),
  fc.record({
    k: fc.constant('bad_type' as const),
    type: fc.integer({ min: 0, max: 255 }).filter((t) => t !== 1),
    ssrc,
  }),
);

/** `seed`: every byte the case makes up (payloads, random ssrcs) comes from it, so a case replays exactly. */
export const udpCase: fc.Arbitrary<{ seed: number; datagrams: Datagram[] }> = fc.record({
  seed: fc.integer(),
  datagrams: fc.array(datagram, { minLength: 1, maxLength: 12 }),
});
