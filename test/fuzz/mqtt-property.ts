/**
 * The MQTT+UDP fuzz target and its three properties. The target is the fuzz server (fuzz-server.ts:
 * the real server in this process, crash and error-line watchers) with the MQTT transport on, and
 * a bystander firmware (honest-firmware.ts) mid-session on it. After every case: nothing crashed,
 * no error line, the bystander is still connected with its channel open, and
 * - broker cases: bad credentials never get a CONNACK of 0, and a client never receives a message
 *   meant for the bystander (whatever it subscribed to);
 * - published messages: every server hello it gets is well formed (transport udp, key and nonce of
 *   32 hex digits, nonce byte 0 = 0x01) and shares neither key nor ssrc with the bystander's;
 * - datagrams: sent from another address, they reach nobody (the bystander's record of drops and
 *   sequence gaps stays clean, checked at the end with its turns).
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { LOOPBACK_MQTT_CONFIG, SimFirmware } from '../fixtures/firmware/firmware.ts';
import { brokerAddress, checkVersion, emptyFlash, FIRMWARE_2_4_2 } from '../fixtures/firmware/ota.ts';
import { sleep } from '../helpers/wait.ts';
import { startFuzzServer, type FuzzServer } from './fuzz-server.ts';
import { HonestFirmware } from './honest-firmware.ts';
import type { AfterConnect, BrokerCase, ConnectAuth, Datagram, Ssrc } from './mqtt-arbitraries.ts';
import {
  connect,
  disconnect,
  packet,
  pingreq,
  publish,
  publishParts,
  readPackets,
  subscribe,
  unsubscribe,
  type ConnectFields,
} from './mqtt-wire.ts';
import type { FuzzInput } from './inputs.ts';

/** Bytes made up from a case's seed (SHA-256 in counter mode): the same case sends the same bytes. */
class SeededBytes {
  #seed: number;
  #counter = 0;
  constructor(seed: number) {
    this.#seed = seed;
  }
  take(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let at = 0; at < n; at += 32)
      createHash('sha256')
        .update(`${this.#seed}:${this.#counter++}`)
        .digest()
        .copy(out, at);
    return out;
  }
  u32(): number {
    return this.take(4).readUInt32BE(0);
  }
}

export interface MqttTarget {
  fz: FuzzServer;
  otaUrl: string;
  broker: { host: string; port: number };
  udp: { host: string; port: number };
  topic: string;
  bystander: HonestFirmware;
  /** Server hellos the published-message cases received, and CONNACKs of 0 seen. */
  hellosAnswered: number;
  connectsAccepted: number;
  datagramsSent: number;
  close(): Promise<void>;
}

export async function startMqttTarget(): Promise<MqttTarget> {
  const fz = await startFuzzServer(LOOPBACK_MQTT_CONFIG);
  try {
    const otaUrl = `${fz.srv.httpUrl}/xiaozhi/ota/`;
    const bystander = await HonestFirmware.connect(otaUrl);
    const endpoint = String(bystander.fw.flash.mqtt.get('endpoint'));
    const ch = bystander.fw.channel;
    assert.ok(ch, 'the bystander has an audio channel');
    const b = brokerAddress(endpoint);
    return {
      fz,
      otaUrl,
      broker: { host: b.host, port: b.port },
      udp: { host: ch.server, port: ch.port },
      topic: String(bystander.fw.flash.mqtt.get('publish_topic')),
      bystander,
      hellosAnswered: 0,
      connectsAccepted: 0,
      datagramsSent: 0,
      close: async () => {
        bystander.close();
        await fz.close();
      },
    };
  } catch (err) {
    await fz.close();
    throw err;
  }
}

export function describeMqttStats(t: MqttTarget): string {
  return `mqtt: ${t.connectsAccepted} CONNECTs accepted, ${t.hellosAnswered} fuzzed hellos answered, ${t.datagramsSent} datagrams; bystander ${t.bystander.turns} turns`;
}

/** A fresh device's broker credentials, from its own OTA request. */
async function credentials(t: MqttTarget): Promise<{ clientId: string; username: string; password: string }> {
  const flash = emptyFlash();
  const r = await checkVersion(
    t.otaUrl,
    { deviceId: t.fz.nextDeviceId(), clientId: randomUUID() },
    FIRMWARE_2_4_2,
    flash,
  );
  assert.equal(r.status, 200);
  const s = (k: string): string => String(flash.mqtt.get(k) ?? '');
  return { clientId: s('client_id'), username: s('username'), password: s('password') };
}

function assertBystanderUp(t: MqttTarget, what: string): void {
  t.fz.assertHealthy(what);
  assert.ok(t.bystander.fw.mqttConnected, `${what}: the bystander's broker connection is up`);
  assert.ok(t.bystander.fw.channelOpen, `${what}: the bystander's audio channel is open`);
}

/** Writes `bytes` in chunks of `chunk`, then waits for the server to close or `quietMs` to pass. */
async function talk(sock: net.Socket, parts: Buffer[], chunk: number, quietMs: number): Promise<void> {
  for (const b of parts) {
    for (let at = 0; at < b.length && !sock.destroyed; at += chunk) sock.write(b.subarray(at, at + chunk));
    await sleep(2);
  }
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, quietMs);
    sock.once('close', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

function openSocket(t: MqttTarget): Promise<{ sock: net.Socket; received: () => Buffer }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = net.connect(t.broker.port, t.broker.host, () =>
      resolve({ sock, received: () => Buffer.concat(chunks) }),
    );
    sock.on('data', (d: Buffer) => chunks.push(d));
    sock.once('error', (err) => (sock.connecting ? reject(err) : undefined));
    sock.on('error', () => {});
  });
}

function afterBytes(a: AfterConnect, t: MqttTarget, connectBytes: Buffer, rnd: SeededBytes): Buffer {
  switch (a.t) {
    case 'publish': {
      const topic = {
        own: t.topic,
        other: 'devices/p2p/other',
        wildcard: '#',
        sys: '$SYS/broker/clients',
        empty: '',
        long: 'x'.repeat(70_000),
      }[a.topic];
      const payload =
        a.payload === 'json'
          ? Buffer.from(JSON.stringify({ type: 'listen', state: 'detect', text: 'x'.repeat(a.bytes) }))
          : a.payload === 'random'
            ? rnd.take(a.bytes)
            : Buffer.alloc(70_000 + a.bytes * 1000, 0x7b);
      return publish(topic, payload, { qos: a.qos, retain: a.retain, messageId: 7 });
    }
    case 'subscribe':
      return subscribe(1, a.topics);
    case 'unsubscribe':
      return unsubscribe(2, a.topics);
    case 'ping':
      return pingreq();
    case 'connect_again':
      return connectBytes;
    case 'lie':
      return packet(a.type, 0, rnd.take(a.send), a.claimed);
    case 'raw':
      return Buffer.from(a.bytes);
    case 'disconnect':
      return disconnect();
  }
}

function connectFields(
  auth: ConnectAuth,
  creds: { clientId: string; username: string; password: string },
  bystander: SimFirmware,
  rnd: SeededBytes,
): ConnectFields {
  switch (auth) {
    case 'valid':
      return { clientId: creds.clientId, username: creds.username, password: creds.password };
    case 'wrong_password':
      return { clientId: creds.clientId, username: creds.username, password: `${creds.password}x` };
    case 'bystander_wrong_password':
      return {
        clientId: String(bystander.flash.mqtt.get('client_id')),
        username: String(bystander.flash.mqtt.get('username')),
        password: rnd.take(16).toString('base64url'),
      };
    case 'none':
      return { clientId: creds.clientId };
    case 'random':
      return { clientId: rnd.take(8).toString('hex'), username: rnd.take(6).toString('hex'), password: rnd.take(6) };
  }
}

/** One broker case: the bytes go in, the checks of the module comment come after. */
export async function runBrokerCase(t: MqttTarget, c: BrokerCase): Promise<void> {
  t.fz.stats.cases++;
  t.fz.count(`mqtt ${c.kind}`);
  const what = `broker case ${JSON.stringify(c, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.length} bytes>` : v)).slice(0, 300)}`;
  if (c.kind === 'many') {
    const socks = await Promise.all(Array.from({ length: c.connections }, () => openSocket(t).catch(() => null)));
    const creds = c.partial ? await credentials(t) : null;
    for (const s of socks)
      if (s && creds)
        s.sock.write(
          connect({ clientId: creds.clientId, username: creds.username, password: creds.password }).subarray(0, 10),
        );
    await sleep(50);
    for (const s of socks) s?.sock.destroy();
  } else if (c.kind === 'garbage') {
    const { sock } = await openSocket(t);
    await talk(sock, [Buffer.from(c.bytes)], c.chunk, 30);
    sock.destroy();
  } else {
    const creds = await credentials(t);
    const rnd = new SeededBytes(c.seed);
    let fields = connectFields(c.auth, creds, t.bystander.fw, rnd);
    let bytes: Buffer;
    const m = c.mutation;
    if (m?.field === 'protocolName') fields = { ...fields, protocolName: m.value };
    if (m?.field === 'level') fields = { ...fields, level: m.value };
    if (m?.field === 'flags') fields = { ...fields, flags: m.value };
    if (m?.field === 'keepalive') fields = { ...fields, keepalive: m.value };
    if (m?.field === 'clientId') fields = { ...fields, clientId: m.value };
    if (m?.field === 'will') fields = { ...fields, will: { topic: m.topic, message: Buffer.alloc(m.bytes, 0x41) } };
    bytes = connect(fields);
    if (m?.field === 'truncate') bytes = bytes.subarray(0, Math.min(bytes.length - 1, m.at));
    if (m?.field === 'lengthLie') bytes = packet(1, 0, bytes.subarray(2), m.claimed);
    const { sock, received } = await openSocket(t);
    await talk(sock, [bytes], c.chunk, 20);
    await talk(
      sock,
      c.after.map((a) => afterBytes(a, t, bytes, rnd)),
      c.chunk,
      40,
    );
    sock.destroy();
    const packets = readPackets(received());
    const connack = packets[0]?.type === 2 ? packets[0] : undefined;
    const accepted = connack !== undefined && connack.body[1] === 0;
    if (accepted) t.connectsAccepted++;
    const plainValid = c.auth === 'valid' && (m === null || m.field === 'keepalive');
    if (c.auth !== 'valid' || m?.field === 'clientId')
      assert.ok(!accepted, `${what}: CONNECT with bad credentials was accepted`);
    if (plainValid && m === null)
      assert.ok(
        accepted,
        `${what}: a device's own credentials were refused (${connack ? `code ${connack.body[1]}` : 'no CONNACK'})`,
      );
    // Whatever it subscribed to or published, nothing of the bystander's reaches this client.
    const bystanderSession = t.bystander.fw.sessionId;
    for (const p of packets.filter((x) => x.type === 3)) {
      const { payload } = publishParts(p);
      assert.ok(
        !payload.toString('latin1').includes(bystanderSession),
        `${what}: a message of the bystander's session reached another client`,
      );
    }
  }
  assertBystanderUp(t, what);
}

const HEX32 = /^[0-9a-fA-F]{32}$/;

/** One published-message case: a fresh authenticated device publishes the messages, then powers off. */
export async function runHelloCase(t: MqttTarget, c: { messages: FuzzInput[]; goodbyeAtEnd: boolean }): Promise<void> {
  t.fz.stats.cases++;
  const what = `published messages ${JSON.stringify(c.messages.map((m) => (m.kind === 'text' ? m.text.slice(0, 120) : `<${m.kind} ${m.bytes.length} bytes>`)))}`;
  const fw = new SimFirmware({ otaUrl: t.otaUrl, identity: { deviceId: t.fz.nextDeviceId(), clientId: randomUUID() } });
  try {
    await fw.boot();
    for (const m of c.messages) {
      t.fz.count(`mqtt publish ${m.kind}`);
      fw.sendText(m.kind === 'text' ? m.text : Buffer.from(m.bytes));
    }
    await sleep(40);
    if (c.goodbyeAtEnd && fw.sessionId) fw.sendText({ session_id: fw.sessionId, type: 'goodbye' });
    const mine = t.bystander.fw.channel;
    for (const { msg } of fw.json.filter((j) => j.msg.type === 'hello')) {
      t.hellosAnswered++;
      const udp = msg.udp as Record<string, unknown> | undefined;
      assert.equal(msg.transport, 'udp', `${what}: server hello transport`);
      assert.equal(typeof msg.session_id, 'string', `${what}: server hello session_id`);
      assert.ok(
        udp && HEX32.test(String(udp.key)) && HEX32.test(String(udp.nonce)),
        `${what}: server hello udp key/nonce: ${JSON.stringify(udp)}`,
      );
      const nonce = Buffer.from(String(udp.nonce), 'hex');
      assert.equal(nonce[0], 0x01, `${what}: nonce byte 0`);
      assert.notEqual(
        String(udp.key).toLowerCase(),
        mine?.key.toString('hex'),
        `${what}: a fuzzed session got the bystander's key`,
      );
      assert.notEqual(
        nonce.readUInt32BE(4),
        mine?.nonce.readUInt32BE(4),
        `${what}: a fuzzed session got the bystander's ssrc`,
      );
    }
  } finally {
    fw.close();
  }
  assertBystanderUp(t, what);
}

function ssrcOf(t: MqttTarget, s: Ssrc, rnd: SeededBytes): number {
  if (s === 'bystander') return (t.bystander.fw.channel as { nonce: Buffer }).nonce.readUInt32BE(4);
  if (s === 'zero') return 0;
  return rnd.u32();
}

function header(type: number, payloadLen: number, ssrc: number, sequence: number): Buffer {
  const h = Buffer.alloc(16);
  h[0] = type;
  h.writeUInt16BE(Math.max(0, Math.min(0xffff, payloadLen)), 2);
  h.writeUInt32BE(ssrc >>> 0, 4);
  h.writeUInt32BE(sequence >>> 0, 12);
  return h;
}

function datagramBytes(t: MqttTarget, d: Datagram, rnd: SeededBytes): Buffer[] {
  const one = datagramOf(t, d, rnd);
  if (d.k !== 'burst') return one ? [one] : [];
  const first = t.bystander.fw.uplinkSequence + (d.from === 'next' ? 1 : 1000);
  const ssrc = ssrcOf(t, 'bystander', rnd);
  return Array.from({ length: d.count }, (_, i) =>
    Buffer.concat([header(1, d.payload, ssrc, first + i), rnd.take(d.payload)]),
  );
}

function datagramOf(t: MqttTarget, d: Datagram, rnd: SeededBytes): Buffer | null {
  switch (d.k) {
    case 'burst':
      return null;
    case 'random':
      return Buffer.from(d.bytes);
    case 'short':
      return rnd.take(d.len);
    case 'huge':
      return Buffer.concat([
        header(1, d.len - 16, ssrcOf(t, d.ssrc, rnd), t.bystander.fw.uplinkSequence + 1),
        rnd.take(d.len - 16),
      ]);
    case 'forged': {
      const next = t.bystander.fw.uplinkSequence + 1;
      const sequence = { next, far: next + 1000, max: 0xffff_ffff, zero: 0 }[d.sequence];
      // A payload sealed under a key that is not the session's decrypts to noise: random bytes are the same thing.
      return Buffer.concat([header(1, d.payload + d.lengthLie, ssrcOf(t, d.ssrc, rnd), sequence), rnd.take(d.payload)]);
    }
    case 'replay': {
      const sent = t.bystander.sent;
      const orig = sent[sent.length - 1 - (d.back % Math.max(1, sent.length))];
      if (!orig) return null;
      const copy = Buffer.from(orig);
      const at = 16 + ((d.flip ?? 0) % Math.max(1, copy.length - 16));
      if (d.flip !== null && at < copy.length) copy[at] = (copy[at] as number) ^ 0x01;
      return copy;
    }
    case 'bad_type':
      return Buffer.concat([
        header(d.type, 60, ssrcOf(t, d.ssrc, rnd), t.bystander.fw.uplinkSequence + 1),
        rnd.take(60),
      ]);
  }
}

/**
 * One datagram case, from a socket of its own (another address than the bystander's). That socket
 * must never receive anything: a datagram it got would be the bystander's downlink, diverted.
 */
export async function runUdpCase(t: MqttTarget, c: { seed: number; datagrams: Datagram[] }): Promise<void> {
  t.fz.stats.cases++;
  const { datagrams } = c;
  const rnd = new SeededBytes(c.seed);
  const what = `datagrams ${JSON.stringify(datagrams, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.length} bytes>` : v)).slice(0, 300)}`;
  const sock = dgram.createSocket('udp4');
  let received = 0;
  sock.on('message', () => received++);
  try {
    await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
    for (const d of datagrams) {
      for (const bytes of datagramBytes(t, d, rnd)) {
        t.fz.count(`udp ${d.k}`);
        t.datagramsSent++;
        await new Promise<void>((resolve) => sock.send(bytes, t.udp.port, t.udp.host, () => resolve()));
      }
    }
    await sleep(10);
  } finally {
    sock.close();
  }
  assert.equal(
    received,
    0,
    `${what}: the fuzzing socket received ${received} datagram(s) (the bystander's downlink followed a forged datagram)`,
  );
  assertBystanderUp(t, what);
}
