/**
 * The MQTT+UDP transport on its own: the real broker and UDP socket on loopback, a real MQTT
 * client (the `mqtt` package) and real UDP with real Opus, the real store's registry for
 * bindings and revocation; the conversation records what the session hands it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import { createSocket } from 'node:dgram';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import { silentLogger, type Logger } from '../../../core/logger.ts';
import { createLogger } from '../../../server/logger.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { openStore, type Store } from '../../../store/store.ts';
import { SessionRegistry } from '../../../voice/session/registry.ts';
import { DeviceSessions } from '../../../transport/session-door/device-sessions.ts';
import { startMqttTransport, type MqttTransport } from '../../../transport/mqtt/transport.ts';
import { MqttSchema } from '../../../transport/mqtt/settings.ts';
import type { AuthMode } from '../../../features/identity/index.ts';
import { MOVE_CONFIRMATIONS, type UdpDropReason } from '../../../transport/mqtt/udp-audio.ts';
import { aesCtr, plausibleOpusFrame, UDP_HEADER_BYTES } from '../../../protocol/udp-packet.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { MqttUdpClient, type MqttSection } from '../../helpers/mqtt-udp-client.ts';
import { sleep, waitFor } from '../../helpers/wait.ts';

interface Rig {
  transport: MqttTransport;
  sessions: DeviceSessions;
  registry: SessionRegistry;
  rec: ReturnType<typeof recordingConversation>;
  drops: UdpDropReason[];
  opened: string[];
  section(deviceId: string, clientId: string, generation?: number | null): MqttSection;
}

interface RigOptions {
  idleTimeoutMs?: number;
  maxPacketBytes?: number;
  tls?: { cert: string; key: string };
  perAddress?: number;
  maxPendingPerAddress?: number;
  connectDeadlines?: { normalMs: number; pressuredMs: number };
  connectRate?: { perSecond: number; burst: number };
  /** The cache's and the database's view of the bindings, when they differ from the store's cache (a bind made by another process). */
  binding?: (deviceId: string, clientId: string) => { generation: number } | undefined;
  storedBinding?: (deviceId: string, clientId: string) => Promise<{ generation: number } | undefined>;
  log?: Logger;
  /** `server.maxSessions`; default 0 (no limit). */
  maxSessions?: number;
}

async function startRig(store: Store, mode: AuthMode, opts: RigOptions = {}): Promise<Rig> {
  const registry = new SessionRegistry();
  const rec = recordingConversation();
  const drops: UdpDropReason[] = [];
  const opened: string[] = [];
  const sessions = new DeviceSessions({
    registry,
    createConversation: rec.factory,
    session: {
      helloTimeoutMs: 10_000,
      idleTimeoutMs: opts.idleTimeoutMs ?? 60_000,
      outputSampleRate: 24000,
      frameDurationMs: 60,
    },
    maxSessions: opts.maxSessions ?? 0,
    onOpened: [(s) => opened.push(s.sessionId)],
  });
  const transport = await startMqttTransport({
    mqtt: MqttSchema.parse({
      enabled: true,
      host: '127.0.0.1',
      port: 0,
      udpPort: 0,
      ...(opts.maxPacketBytes ? { maxPacketBytes: opts.maxPacketBytes } : {}),
      ...(opts.maxPendingPerAddress ? { maxPendingPerAddress: opts.maxPendingPerAddress } : {}),
      ...(opts.tls ? { tlsCert: opts.tls.cert, tlsKey: opts.tls.key } : {}),
    }),
    log: opts.log ?? silentLogger,
    sessions,
    auth: {
      mode,
      allowedDevices: [],
      secret: () => store.registry.secret(),
      binding: opts.binding ?? ((d, c) => store.registry.binding(d, c)),
      ...(opts.storedBinding ? { storedBinding: opts.storedBinding } : {}),
    },
    devices: store.registry,
    address: { trustProxy: [], ipv6PrefixLength: 64 },
    controlRate: { perSecond: 20, burst: 100 },
    maxConnectionsPerAddress: opts.perAddress ?? 0,
    connectRate: opts.connectRate ?? { perSecond: 1000, burst: 1000 },
    onUdpDrop: (r) => drops.push(r),
    ...(opts.connectDeadlines ? { connectDeadlines: opts.connectDeadlines } : {}),
  });
  const section = (deviceId: string, clientId: string, generation: number | null = null): MqttSection =>
    transport.otaSection({
      deviceId,
      clientId,
      generation,
      host: '127.0.0.1',
      hostIsOwn: true,
    }) as unknown as MqttSection;
  return { transport, sessions, registry, rec, drops, opened, section };
}

/**
 * A key other than the session's whose datagram the server decrypts to noise that is not a
 * plausible frame. Noise passes the Opus check now and then (CTR has no tag); the test knows the
 * session key, so it picks a wrong key that is refused for certain.
 */
function wrongKey(dev: MqttUdpClient, opus: Buffer, sequence: number): Buffer {
  const sessionKey = Buffer.from(dev.block!.key, 'hex');
  for (let fill = 1; ; fill++) {
    const key = Buffer.alloc(16, fill);
    const datagram = dev.datagram(opus, { sequence, key });
    const seen = aesCtr(sessionKey, datagram.subarray(0, UDP_HEADER_BYTES), datagram.subarray(UDP_HEADER_BYTES));
    if (!plausibleOpusFrame(seen, 60)) return key;
  }
}

describe('MQTT+UDP transport', () => {
  let store: Store;
  let open: Rig;
  let frames: Buffer[];
  before(async () => {
    store = await openStore({
      url: 'sqlite::memory:',
      dataDir: '/tmp',
      secret: '',
      codeTtlMs: 600_000,
      pendingPerSource: 3,
      replica: 'test',
      log: silentLogger,
    });
    open = await startRig(store, 'open');
    const codec = await createOpusCodec({ sampleRate: 16000 });
    frames = [];
    for (let f = 0; f < 10; f++) {
      const pcm = new Int16Array(codec.frameSamples);
      for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(6000 * Math.sin((f * pcm.length + i) / 7));
      frames.push(Buffer.from(codec.encode(pcm)));
    }
    codec.close();
  });
  after(async () => {
    await open.transport.close();
    await store.close();
  });

  const audioCalls = (rig: Rig, i: number): number =>
    rig.rec.sessions[i]?.calls.filter((c) => c.name === 'audio').length ?? 0;

  test('OTA credentials connect; the hello opens a session answered with the udp block; audio flows both ways', async () => {
    const section = open.section('a0:00:00:00:00:01', 'client-1');
    assert.equal(section.endpoint, `127.0.0.1:${open.transport.ports.mqtt}`);
    assert.equal(section.keepalive, 240);
    assert.equal(section.publish_topic, 'device-server');
    const dev = await MqttUdpClient.connect(section);
    try {
      const link = (await waitFor(() => open.transport.find('a0:00:00:00:00:01'), { what: 'the link' }))!;
      assert.equal(link.inSession, false);
      const hello = await dev.hello();
      assert.equal(hello.transport, 'udp');
      assert.deepEqual(hello.audio_params, { format: 'opus', sample_rate: 24000, channels: 1, frame_duration: 60 });
      const udp = dev.block!;
      assert.match(udp.key, /^[0-9a-f]{32}$/);
      assert.match(udp.nonce, /^[0-9a-f]{32}$/);
      assert.equal(udp.nonce.slice(0, 2), '01');
      assert.equal(udp.server, '127.0.0.1');
      assert.equal(udp.port, open.transport.ports.udp);
      assert.equal(open.registry.size, 1);
      assert.deepEqual(open.opened, [dev.sessionId]);
      assert.ok(link.inSession);
      const rec = open.rec.sessions.length - 1;
      assert.equal(open.rec.sessions[rec]?.ctx.info.sessionId, dev.sessionId);

      dev.publish({ type: 'listen', state: 'start', mode: 'auto', session_id: dev.sessionId });
      for (const f of frames.slice(0, 5)) dev.sendOpus(f);
      await waitFor(() => audioCalls(open, rec) === 5, { what: 'five uplink frames' });
      assert.equal(open.rec.sessions[rec]?.calls[0]?.name, 'listenStart');

      // Downlink: what the session sends arrives as datagrams the device accepts and decrypts.
      // The firmware plays audio only once it has read `tts start`: audio sent after a JSON
      // message reaches the device after it, although the one goes over TCP and the other over UDP.
      const channel = open.rec.sessions[rec]!.ctx.channel;
      channel.sendJson({ type: 'tts', state: 'start', session_id: dev.sessionId });
      for (const f of frames.slice(5)) channel.sendAudio(f);
      await waitFor(() => dev.audio.length === 5, { what: 'five downlink frames' });
      const ttsStart = await dev.waitJson('tts', (m) => m.state === 'start');
      assert.ok(ttsStart);
      const ttsAt = dev.json.find((j) => j.msg.type === 'tts')?.at ?? Infinity;
      assert.ok(ttsAt < (dev.audio[0]?.at ?? 0), 'tts start before the first frame');
      assert.deepEqual(
        dev.audio.map((a) => a.payload),
        frames.slice(5),
      );
      assert.deepEqual(
        dev.audio.map((a) => a.sequence),
        [1, 2, 3, 4, 5],
      );
      assert.equal(dev.downlinkDropped, 0);

      // A goodbye naming another session changes nothing.
      dev.publish({ type: 'goodbye', session_id: 'an-earlier-session' });
      await sleep(200);
      assert.equal(open.registry.size, 1);
      // A device goodbye ends the session; the server does not answer it; MQTT stays connected.
      const before = dev.json.length;
      dev.publish({ type: 'goodbye', session_id: dev.sessionId });
      await waitFor(() => open.registry.size === 0, { what: 'the session to end' });
      assert.equal(link.inSession, false);
      await sleep(200);
      assert.equal(dev.json.slice(before).length, 0, 'no reply to a goodbye');
      assert.ok(dev.mqtt.connected);
      assert.equal(open.transport.find('a0:00:00:00:00:01', 'client-1'), link);

      // A new hello: a new audio session with new secrets; sequences restart.
      const firstKey = udp.key;
      await dev.hello();
      assert.notEqual(dev.block!.key, firstKey);
      assert.equal(open.registry.size, 1);
      // The new session confirms the device's address afresh (its first frames are held until then).
      for (const f of frames.slice(0, MOVE_CONFIRMATIONS)) dev.sendOpus(f);
      await waitFor(() => audioCalls(open, open.rec.sessions.length - 1) === MOVE_CONFIRMATIONS, {
        what: 'uplink in the new session',
      });
    } finally {
      await dev.close();
    }
    await waitFor(() => open.registry.size === 0, { what: 'the session to end with the connection' });
  });

  test('bad datagrams are dropped without touching the session; a rebinding moves the downlink', async () => {
    const dev = await MqttUdpClient.connect(open.section('a0:00:00:00:00:02', 'client-2'));
    try {
      await dev.hello();
      const rec = open.rec.sessions.length - 1;
      for (const f of frames.slice(0, 5)) dev.sendOpus(f);
      await waitFor(() => audioCalls(open, rec) === 5, { what: 'five good frames' });
      const dropsBefore = open.drops.length;
      const good = dev.datagram(frames[2]!, { sequence: 6 });
      dev.sendRaw(dev.datagram(frames[2]!, { sequence: 1 })); // replayed sequence
      dev.sendRaw(dev.datagram(frames[2]!, { sequence: 7, key: wrongKey(dev, frames[2]!, 7) })); // wrong key
      dev.sendRaw(good.subarray(0, 10)); // short
      dev.sendRaw(good.subarray(0, good.length - 1)); // length mismatch
      dev.sendRaw(Buffer.concat([good, Buffer.alloc(8000)])); // huge
      const stranger = Buffer.from(good);
      stranger.writeUInt32BE((stranger.readUInt32BE(4) + 1) >>> 0, 4);
      dev.sendRaw(stranger); // unknown ssrc
      dev.sendRaw(dev.datagram(frames[2]!, { sequence: 1_000_000 })); // implausible jump
      await waitFor(() => open.drops.length - dropsBefore >= 7, { what: 'seven drops' });
      const reasons = open.drops.slice(dropsBefore).sort();
      assert.deepEqual(
        reasons.filter((r) => r !== 'implausible'),
        ['length', 'replay', 'replay', 'short', 'size', 'unknown_ssrc'].sort(),
      );
      assert.equal(audioCalls(open, rec), 5);
      // The session goes on: the next good frame is accepted.
      dev.sendRaw(good);
      await waitFor(() => audioCalls(open, rec) === 6, { what: 'the good frame after the bad ones' });

      // Valid datagrams from another address while the device keeps sending from its own (someone
      // who saw the cleartext headers, or a stale path): they neither count nor move the downlink.
      const other = createSocket('udp4');
      await new Promise<void>((resolve) => other.bind(0, '127.0.0.1', () => resolve()));
      let otherGot = 0;
      other.on('message', () => otherGot++);
      const fromOther = (sequence: number): void =>
        void other.send(dev.datagram(frames[3]!, { sequence }), dev.block!.port, '127.0.0.1');
      try {
        for (let seq = 7; seq <= 10; seq++) fromOther(seq);
        dev.sendRaw(dev.datagram(frames[3]!, { sequence: 11 }));
        for (let seq = 12; seq <= 15; seq++) fromOther(seq);
        dev.sendRaw(dev.datagram(frames[3]!, { sequence: 16 }));
        await waitFor(() => audioCalls(open, rec) === 8, { what: "the device's two frames" });
        await sleep(100);
        assert.equal(audioCalls(open, rec), 8);
        open.rec.sessions[rec]!.ctx.channel.sendAudio(frames[4]!);
        await waitFor(() => dev.audio.length === 1, { what: 'downlink still at the device' });
        assert.equal(otherGot, 0);
      } finally {
        other.close();
      }

      // NAT rebinding: datagrams that pass every check keep coming from a new address, and the
      // old one has gone quiet: the downlink moves there after a few of them, and none is lost.
      await dev.rebind();
      for (let seq = 17; seq < 17 + MOVE_CONFIRMATIONS; seq++) dev.sendRaw(dev.datagram(frames[3]!, { sequence: seq }));
      await waitFor(() => audioCalls(open, rec) === 8 + MOVE_CONFIRMATIONS, {
        what: 'the frames that confirm the new address',
      });
      open.rec.sessions[rec]!.ctx.channel.sendAudio(frames[4]!);
      await waitFor(() => dev.audio.length === 1, { what: 'downlink at the new address' });
      assert.deepEqual(dev.audio[0]?.payload, frames[4]);
      assert.equal(open.registry.size, 1);
    } finally {
      await dev.close();
    }
  });

  /** A second UDP socket on loopback: another address as the server sees it. */
  async function otherSocket(): Promise<{
    send(d: Buffer, port: number): void;
    received: () => number;
    close(): void;
  }> {
    const sock = createSocket('udp4');
    await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', () => resolve()));
    let got = 0;
    sock.on('message', () => got++);
    return { send: (d, port) => void sock.send(d, port, '127.0.0.1'), received: () => got, close: () => sock.close() };
  }

  test("before the device's first datagram, one forged datagram from elsewhere does not take the session", async () => {
    const dev = await MqttUdpClient.connect(open.section('a0:00:00:00:00:10', 'client-16'));
    const forger = await otherSocket();
    try {
      await dev.hello();
      const rec = open.rec.sessions.length - 1;
      // The ssrc travels in clear in every header: a forger sends first. One of its random
      // payloads in about twenty decrypts to a plausible frame; this one does (the test seals it
      // with the session key), with a sequence far ahead.
      forger.send(dev.datagram(frames[0]!, { sequence: 9000 }), dev.block!.port);
      await sleep(100);
      assert.equal(audioCalls(open, rec), 0, 'an unconfirmed address delivers nothing');
      // The device's own frames, from its own address, numbered from 1: all of them count.
      for (const f of frames.slice(0, 6)) dev.sendOpus(f);
      await waitFor(() => audioCalls(open, rec) === 6, { what: "the device's six frames" });
      open.rec.sessions[rec]!.ctx.channel.sendAudio(frames[7]!);
      await waitFor(() => dev.audio.length === 1, { what: 'downlink at the device' });
      assert.equal(forger.received(), 0);
    } finally {
      forger.close();
      await dev.close();
    }
  });

  test("a forger whose datagrams took the session loses it back to the device's own stream", async () => {
    const dev = await MqttUdpClient.connect(open.section('a0:00:00:00:00:11', 'client-17'));
    const forger = await otherSocket();
    try {
      await dev.hello();
      const rec = open.rec.sessions.length - 1;
      // The rare forger that passes the check on consecutive sequences, before the device speaks.
      for (let seq = 9000; seq < 9000 + MOVE_CONFIRMATIONS; seq++)
        forger.send(dev.datagram(frames[0]!, { sequence: seq }), dev.block!.port);
      await waitFor(() => audioCalls(open, rec) === MOVE_CONFIRMATIONS, { what: "the forger's confirmed chain" });
      // The device's own frames keep arriving from its address, numbered from 1.
      for (const f of [...frames, ...frames]) dev.sendOpus(f);
      await waitFor(() => audioCalls(open, rec) === MOVE_CONFIRMATIONS + 20, {
        what: "every frame of the device's stream",
      });
      const channel = open.rec.sessions[rec]!.ctx.channel;
      channel.sendAudio(frames[7]!);
      await waitFor(() => dev.audio.length === 1, { what: 'downlink back at the device' });
      // Replaying the forger's chain does not take it again.
      const forgerGot = forger.received();
      for (let seq = 9000; seq < 9000 + MOVE_CONFIRMATIONS; seq++)
        forger.send(dev.datagram(frames[0]!, { sequence: seq }), dev.block!.port);
      dev.sendOpus(frames[1]!);
      await waitFor(() => audioCalls(open, rec) === MOVE_CONFIRMATIONS + 21, { what: "the device's next frame" });
      channel.sendAudio(frames[8]!);
      await waitFor(() => dev.audio.length === 2, { what: 'downlink still at the device' });
      assert.equal(forger.received(), forgerGot);
    } finally {
      forger.close();
      await dev.close();
    }
  });

  test("a forger that took the session on the device's own first sequences, and pushes ahead, loses it too", async () => {
    const dev = await MqttUdpClient.connect(open.section('a0:00:00:00:00:12', 'client-18'));
    const forger = await otherSocket();
    try {
      await dev.hello();
      const rec = open.rec.sessions.length - 1;
      for (let seq = 1; seq <= MOVE_CONFIRMATIONS; seq++)
        forger.send(dev.datagram(frames[0]!, { sequence: seq }), dev.block!.port);
      await waitFor(() => audioCalls(open, rec) === MOVE_CONFIRMATIONS, { what: "the forger's confirmed chain" });
      // It keeps spraying: most of its datagrams fail, one in twenty passes far ahead.
      forger.send(dev.datagram(frames[0]!, { sequence: 20, key: wrongKey(dev, frames[0]!, 20) }), dev.block!.port);
      forger.send(dev.datagram(frames[0]!, { sequence: 5000 }), dev.block!.port);
      await waitFor(() => audioCalls(open, rec) === MOVE_CONFIRMATIONS + 1, { what: 'the pass far ahead' });
      for (const f of frames) dev.sendOpus(f);
      await waitFor(() => audioCalls(open, rec) >= MOVE_CONFIRMATIONS + 1 + 10, { what: "the device's stream" });
      open.rec.sessions[rec]!.ctx.channel.sendAudio(frames[7]!);
      await waitFor(() => dev.audio.length === 1, { what: 'downlink back at the device' });
    } finally {
      forger.close();
      await dev.close();
    }
  });

  test('wrong credentials are refused: password, another pair, a username that does not match', async () => {
    const section = open.section('a0:00:00:00:00:03', 'client-3');
    const other = open.section('a0:00:00:00:00:04', 'client-4');
    await assert.rejects(
      MqttUdpClient.connect(section, { password: 'x'.repeat(43) }),
      /Bad username or password|Not authorized/i,
    );
    await assert.rejects(
      MqttUdpClient.connect(section, { password: other.password }),
      /Bad username or password|Not authorized/i,
    );
    await assert.rejects(
      MqttUdpClient.connect(section, { username: 'a0:00:00:00:00:04' }),
      /Bad username or password|Not authorized/i,
    );
    await assert.rejects(
      MqttUdpClient.connect(section, { client_id: 'someone-else' }),
      /Bad username or password|Not authorized/i,
    );
    assert.equal(open.transport.find('a0:00:00:00:00:03'), undefined);
    // The right ones still work.
    const dev = await MqttUdpClient.connect(section);
    await dev.close();
  });

  test('subscriptions are refused, other topics and oversize packets close the connection', async () => {
    const dev = await MqttUdpClient.connect(open.section('a0:00:00:00:00:05', 'client-5'));
    try {
      // Answered as failed (0x80), the connection kept.
      await assert.rejects(dev.mqtt.subscribeAsync('#'), /Subscribe error/);
      assert.ok(dev.mqtt.connected);
      const closed = new Promise<void>((resolve) => dev.mqtt.once('close', () => resolve()));
      dev.mqtt.publish('somewhere/else', 'hi');
      await closed;
    } finally {
      await dev.close();
    }
    const big = await MqttUdpClient.connect(open.section('a0:00:00:00:00:06', 'client-6'));
    try {
      const closed = new Promise<void>((resolve) => big.mqtt.once('close', () => resolve()));
      big.mqtt.publish('device-server', Buffer.alloc(200_000, 0x20));
      await closed;
    } finally {
      await big.close();
    }
    // A stranger announcing a huge packet before CONNECT is cut off at its length bytes.
    const sock = tcpConnect(open.transport.ports.mqtt, '127.0.0.1');
    const ended = new Promise<void>((resolve) => sock.once('close', () => resolve()));
    sock.on('error', () => {});
    sock.write(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]));
    await ended;
  });

  test('a hello published as soon as CONNACK arrives is answered, for devices connecting together', async () => {
    // The firmware publishes its hello the moment Connect returns: the broker may still be
    // finishing the connection on its side.
    const devices = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const dev = await MqttUdpClient.connect(
          open.section(`a0:00:00:00:01:${String(i).padStart(2, '0')}`, `together-${i}`),
        );
        dev.publish({
          type: 'hello',
          version: 3,
          transport: 'udp',
          audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
        });
        return dev;
      }),
    );
    try {
      await waitFor(() => devices.every((d) => d.json.some((j) => j.msg.type === 'hello')), {
        what: 'every hello answered',
        timeoutMs: 5000,
      });
    } finally {
      await Promise.all(devices.map((d) => d.close()));
    }
    await waitFor(() => open.registry.size === 0, { what: 'the sessions to end' });
  });

  test('a second connection of the same pair takes over: the first is closed and its session ended', async () => {
    const section = open.section('a0:00:00:00:00:0b', 'client-11');
    const first = await MqttUdpClient.connect(section);
    await first.hello();
    const firstLink = open.transport.find('a0:00:00:00:00:0b');
    const firstClosed = new Promise<void>((resolve) => first.mqtt.once('close', () => resolve()));
    const second = await MqttUdpClient.connect(section);
    try {
      await firstClosed;
      await second.hello();
      const link = (await waitFor(() => open.transport.find('a0:00:00:00:00:0b', 'client-11'), {
        what: 'the new link',
      }))!;
      assert.notEqual(link, firstLink);
      assert.ok(link.inSession);
      assert.equal(firstLink?.inSession, false);
      assert.equal(open.registry.size, 1);
    } finally {
      await first.close();
      await second.close();
    }
  });

  test('hellos are answered up to their rate: each one starts a session', async () => {
    const dev = await MqttUdpClient.connect(open.section('a0:00:00:00:00:0a', 'client-10'));
    try {
      const hello = {
        type: 'hello',
        version: 3,
        transport: 'udp',
        audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
      };
      for (let i = 0; i < 8; i++) dev.publish(hello);
      await waitFor(() => dev.json.filter((j) => j.msg.type === 'hello').length === 5, {
        what: 'five hellos answered',
      });
      await sleep(300);
      assert.equal(dev.json.filter((j) => j.msg.type === 'hello').length, 5);
      // Each new hello ended the one before without a goodbye (the device has forgotten that id).
      assert.equal(dev.json.filter((j) => j.msg.type === 'goodbye').length, 0);
      assert.equal(open.registry.size, 1);
    } finally {
      await dev.close();
    }
  });

  test("the session door decides for MQTT too: at server.maxSessions another pair's hello is not answered; draining refuses every hello", async () => {
    const logs = createLogSink();
    const rig = await startRig(store, 'open', {
      maxSessions: 1,
      log: createLogger({ level: 'debug', logContent: false, destination: logs.stream }),
    });
    const hello = {
      type: 'hello',
      version: 3,
      transport: 'udp',
      audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
    };
    const answered = (dev: MqttUdpClient): number => dev.json.filter((j) => j.msg.type === 'hello').length;
    const a = await MqttUdpClient.connect(rig.section('a0:00:00:00:00:21', 'client-21'));
    const b = await MqttUdpClient.connect(rig.section('a0:00:00:00:00:22', 'client-22'));
    try {
      await a.hello();
      b.publish(hello);
      await waitFor(() => logs.find('device refused: server at capacity').length === 1, {
        what: 'the capacity refusal',
      });
      assert.equal(answered(b), 0);
      assert.equal(rig.registry.size, 1);
      assert.equal(rig.transport.find('a0:00:00:00:00:22')?.inSession, false);
      // Draining: a new hello ends the device's session (as always) and opens none.
      rig.sessions.stopAccepting();
      a.publish(hello);
      await waitFor(() => logs.find('device refused: server is shutting down').length === 1, {
        what: 'the draining refusal',
      });
      await waitFor(() => rig.registry.size === 0, { what: 'the old session to end' });
      assert.equal(answered(a), 1);
    } finally {
      await a.close();
      await b.close();
      await rig.transport.close();
    }
  });

  test('an idle session ends with a goodbye carrying its id; the connection stays; links publish to idle devices', async () => {
    const rig = await startRig(store, 'open', { idleTimeoutMs: 600 });
    const seen: string[] = [];
    const off = rig.transport.onConnected((l) => seen.push(l.deviceId));
    const dev = await MqttUdpClient.connect(rig.section('a0:00:00:00:00:07', 'client-7'));
    try {
      await waitFor(() => seen.length === 1, { what: 'onConnected' });
      assert.deepEqual(seen, ['a0:00:00:00:00:07']);
      await dev.hello();
      const bye = await dev.waitJson('goodbye', () => true, 5000);
      assert.equal(bye.session_id, dev.sessionId);
      await waitFor(() => rig.registry.size === 0, { what: 'the session to end' });
      assert.ok(dev.mqtt.connected);
      const link = rig.transport.find('a0:00:00:00:00:07');
      assert.ok(link && !link.inSession);
      assert.equal(link.publish({ type: 'alert', status: 'Reminder', message: 'tea', emotion: 'happy' }), true);
      const alert = await dev.waitJson('alert');
      assert.equal(alert.message, 'tea');
    } finally {
      off();
      await dev.close();
      await rig.transport.close();
    }
    assert.equal(rig.transport.find('a0:00:00:00:00:07'), undefined);
  });

  test('connections per address: those without CONNECT count apart from devices, so they lock no device out', async () => {
    const rig = await startRig(store, 'open', { perAddress: 2, maxPendingPerAddress: 4 });
    const idle = [tcpConnect(rig.transport.ports.mqtt, '127.0.0.1'), tcpConnect(rig.transport.ports.mqtt, '127.0.0.1')];
    const devices: MqttUdpClient[] = [];
    try {
      for (const s of idle) await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      await sleep(100);
      // Two strangers hold connections without a CONNECT: devices of the address still get in,
      // up to the address's limit of authenticated connections.
      devices.push(await MqttUdpClient.connect(rig.section('a0:00:00:00:00:0c', 'client-12')));
      devices.push(await MqttUdpClient.connect(rig.section('a0:00:00:00:00:0d', 'client-13')));
      await assert.rejects(MqttUdpClient.connect(rig.section('a0:00:00:00:00:0e', 'client-14')), /Server unavailable/i);
      // A device reconnecting replaces its own connection even at the limit.
      const again = await MqttUdpClient.connect(rig.section('a0:00:00:00:00:0c', 'client-12'));
      devices.push(again);
      // Once one leaves, another device gets in.
      await devices[1]!.close();
      await waitFor(() => rig.transport.find('a0:00:00:00:00:0d') === undefined, { what: 'the device to leave' });
      devices.push(await MqttUdpClient.connect(rig.section('a0:00:00:00:00:0e', 'client-14')));
      assert.ok(
        idle.every((s) => !s.destroyed),
        'two pending connections are under the pending limit',
      );
    } finally {
      for (const s of idle) s.destroy();
      await Promise.all(devices.map((d) => d.close()));
      await rig.transport.close();
    }
  });

  test('70 connections that never send CONNECT from one address: a bound device there still connects, and they are closed early', async () => {
    // Deadlines far apart, so only the one under pressure can close the strangers within the wait.
    const rig = await startRig(store, 'activation', {
      perAddress: 64,
      connectDeadlines: { normalMs: 120_000, pressuredMs: 1_000 },
    });
    const strangers: ReturnType<typeof tcpConnect>[] = [];
    let closed = 0;
    try {
      const code = await store.registry.pendingCode('a0:00:00:00:00:0f', 'client-15', '127.0.0.1');
      assert.ok(code);
      const bound = await store.registry.bind(code.code);
      assert.ok(bound.ok);
      await waitFor(() => store.registry.isBound('a0:00:00:00:00:0f', 'client-15'), { what: 'the binding' });
      for (let i = 0; i < 70; i++) {
        const s = tcpConnect(rig.transport.ports.mqtt, '127.0.0.1');
        s.on('error', () => {});
        s.once('close', () => closed++);
        strangers.push(s);
      }
      await Promise.all(
        strangers.map(
          (s) =>
            new Promise<void>((resolve) =>
              s.readyState === 'open' ? resolve() : s.once('connect', () => resolve()).once('close', () => resolve()),
            ),
        ),
      );
      // Past the address's pending limit the oldest are closed as newer ones arrive.
      await waitFor(() => closed >= 70 - 16, { what: 'the oldest pending connections to be closed' });
      const dev = await MqttUdpClient.connect(rig.section('a0:00:00:00:00:0f', 'client-15', bound.device.generation));
      try {
        await dev.hello();
        // The rest go at the shorter deadline, the device's connection stays.
        await waitFor(() => closed === 70, { what: 'every stranger closed under pressure', timeoutMs: 30_000 });
        assert.ok(dev.mqtt.connected);
        const link = rig.transport.find('a0:00:00:00:00:0f');
        assert.ok(link?.inSession);
      } finally {
        await dev.close();
      }
    } finally {
      for (const s of strangers) s.destroy();
      await rig.transport.close();
    }
  });

  test('a connection that its CONNECT deadline closed while the database checked its password is not reported as over the connections per address', async () => {
    const code = await store.registry.pendingCode('a0:00:00:00:00:1e', 'client-30', '127.0.0.2');
    assert.ok(code);
    const bound = await store.registry.bind(code.code);
    assert.ok(bound.ok);
    const sink = createLogSink();
    let asked = 0;
    const rig = await startRig(store, 'activation', {
      log: createLogger({ level: 'info', logContent: false, destination: sink.stream }),
      // The cache has not heard of the bind; the database answers after the deadline.
      binding: () => undefined,
      storedBinding: async (d, c) => {
        asked++;
        await sleep(600);
        return store.registry.binding(d, c);
      },
      connectDeadlines: { normalMs: 150, pressuredMs: 150 },
    });
    try {
      await assert.rejects(
        MqttUdpClient.connect(
          rig.section('a0:00:00:00:00:1e', 'client-30', bound.device.generation),
          {},
          { connectTimeout: 3000, reconnectPeriod: 0 },
        ),
      );
      await waitFor(() => asked === 1, { what: 'the database to be asked' });
      await sleep(900);
      assert.equal(sink.find('MQTT connection closed: no CONNECT in time').length, 1, 'the deadline closed it');
      const refusals = sink.find('MQTT connection refused').map((l) => l.reason);
      assert.deepEqual(refusals, [], 'nothing else is said of a connection already closed');
    } finally {
      await rig.transport.close();
    }
  });

  test('with a certificate the broker speaks TLS', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqtt-tls-'));
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: 'ignore' },
    );
    const rig = await startRig(store, 'open', { tls: { cert, key }, maxPendingPerAddress: 2 });
    try {
      // A connection that never finishes its handshake is pending too: past the address's
      // pending limit the oldest goes, as for plain MQTT.
      const silent = [0, 1, 2].map(() => tcpConnect(rig.transport.ports.mqtt, '127.0.0.1').on('error', () => {}));
      await new Promise<void>((resolve) => silent[0]!.once('close', () => resolve()));
      assert.ok(!silent[2]!.destroyed);
      for (const s of silent) s.destroy();
      const section = rig.section('a0:00:00:00:00:09', 'client-9');
      // Plain MQTT to a TLS port gets nowhere.
      await assert.rejects(MqttUdpClient.connect(section, {}, { connectTimeout: 1000 }));
      const dev = await MqttUdpClient.connect(
        section,
        {},
        { protocol: 'mqtts', ca: readFileSync(cert), rejectUnauthorized: false },
      );
      const hello = await dev.hello();
      assert.equal(hello.transport, 'udp');
      await dev.close();
    } finally {
      await rig.transport.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a CONNECT carrying a will is refused (it would be published as the device's message after the link is gone)", async () => {
    const section = open.section('a0:00:00:00:00:0a', 'client-10');
    await assert.rejects(
      MqttUdpClient.connect(
        section,
        {},
        {
          will: {
            topic: 'device-server',
            payload: Buffer.from('{"type":"hello","version":3,"transport":"udp"}'),
            qos: 0,
            retain: false,
          },
        },
      ),
    );
    assert.equal(open.transport.find('a0:00:00:00:00:0a'), undefined);
    const dev = await MqttUdpClient.connect(section);
    await dev.close();
  });

  test("failed CONNECTs spend the address's budget, as failed WebSocket upgrades do; a bound device keeps its own", async () => {
    const rig = await startRig(store, 'activation', { connectRate: { perSecond: 0.001, burst: 3 } });
    try {
      const code = await store.registry.pendingCode('a0:00:00:00:00:0b', 'client-11', '127.0.0.1');
      assert.ok(code);
      const bound = await store.registry.bind(code.code);
      assert.ok(bound.ok);
      await waitFor(() => store.registry.isBound('a0:00:00:00:00:0b', 'client-11'), { what: 'the binding' });
      const stranger = rig.section('a0:00:00:00:00:0c', 'client-12', 1);
      for (let i = 0; i < 3; i++)
        await assert.rejects(MqttUdpClient.connect(stranger), /Bad username or password|Not authorized/i);
      // The address's budget is spent: the next attempt is refused before its credentials are looked at.
      await assert.rejects(MqttUdpClient.connect(stranger), /Server unavailable/i);
      const dev = await MqttUdpClient.connect(rig.section('a0:00:00:00:00:0b', 'client-11', bound.device.generation));
      await dev.close();
    } finally {
      await rig.transport.close();
    }
  });

  test('activation mode: only a bound pair connects; a revoke disconnects it and refuses it after', async () => {
    const rig = await startRig(store, 'activation');
    try {
      const unbound = rig.section('a0:00:00:00:00:08', 'client-8', 1);
      await assert.rejects(MqttUdpClient.connect(unbound), /Bad username or password|Not authorized/i);
      const code = await store.registry.pendingCode('a0:00:00:00:00:08', 'client-8', '127.0.0.1');
      assert.ok(code);
      const bound = await store.registry.bind(code.code);
      assert.ok(bound.ok);
      await waitFor(() => store.registry.isBound('a0:00:00:00:00:08', 'client-8'), { what: 'the binding' });
      const section = rig.section('a0:00:00:00:00:08', 'client-8', bound.device.generation);
      // The pending code's generation is the binding's: what OTA handed out before binding works now.
      assert.equal(bound.device.generation, code.generation);
      const dev = await MqttUdpClient.connect(section);
      await dev.hello();
      const closed = new Promise<void>((resolve) => dev.mqtt.once('close', () => resolve()));
      await store.registry.revoke('a0:00:00:00:00:08');
      await closed;
      await waitFor(() => rig.registry.size === 0, { what: 'the session to end' });
      await dev.close();
      await assert.rejects(MqttUdpClient.connect(section), /Bad username or password|Not authorized/i);
    } finally {
      await rig.transport.close();
    }
  });
});
