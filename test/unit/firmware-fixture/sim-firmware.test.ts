/**
 * The simulated firmware against a hand-made peer (an OTA handler, an aedes broker that answers
 * the hello by publishing to the client directly, a UDP socket using OpenSSL's CTR): what it
 * sends and how it treats what it receives, without the voice server.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Aedes, type Client } from 'aedes';
import { SimFirmware } from '../../fixtures/firmware/firmware.ts';

const ctr = (key: Uint8Array, iv: Uint8Array, data: Uint8Array): Buffer => {
  const c = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([c.update(data), c.final()]);
};

interface Peer {
  otaUrl: string;
  otaRequests: Array<{ headers: http.IncomingHttpHeaders; body: Record<string, unknown> }>;
  connects: Array<{ clientId: string; username: string; password: string }>;
  published: Array<{ topic: string; msg: Record<string, unknown> }>;
  subscriptions: number;
  uplink: Array<{ from: string; sequence: number; payload: Buffer; header: Buffer }>;
  client: Client | null;
  key: Buffer;
  nonce: Buffer;
  udp: dgram.Socket;
  deviceAddr: { address: string; port: number } | null;
  send(msg: Record<string, unknown>): void;
  downlink(payload: Buffer, sequence: number): Buffer;
  close(): Promise<void>;
}

async function startPeer(helloAnswer: (peer: Peer) => Record<string, unknown> | null): Promise<Peer> {
  const broker = await Aedes.createBroker({
    authenticate: (client, username, password, done) => {
      peer.connects.push({ clientId: client.id, username: username ?? '', password: password?.toString() ?? '' });
      done(null, password?.toString() === 'secret');
    },
  });
  const mqttServer = net.createServer(broker.handle);
  await new Promise<void>((r) => mqttServer.listen(0, '127.0.0.1', r));
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
  const mqttPort = (mqttServer.address() as AddressInfo).port;
  const httpServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      peer.otaRequests.push({ headers: req.headers, body: JSON.parse(body) as Record<string, unknown> });
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          server_time: { timestamp: Date.now(), timezone_offset: 0 },
          websocket: { url: 'ws://127.0.0.1:1/xiaozhi/v1/', version: 3 },
          mqtt: {
            endpoint: `127.0.0.1:${mqttPort}`,
            client_id: 'GID@@@aa_bb',
            username: 'u',
            password: 'secret',
            keepalive: 30,
            publish_topic: 'device-server',
          },
        }),
      );
    });
  });
  await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', r));
  const peer: Peer = {
    otaUrl: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/xiaozhi/ota/`,
    otaRequests: [],
    connects: [],
    published: [],
    subscriptions: 0,
    uplink: [],
    client: null,
    key: randomBytes(16),
    nonce: Buffer.concat([Buffer.from([0x01, 0x00, 0x00, 0x00]), randomBytes(4), Buffer.alloc(8)]),
    udp,
    deviceAddr: null,
    send(msg) {
      peer.client?.publish(
        {
          cmd: 'publish',
          topic: 'devices/p2p/x',
          payload: Buffer.from(JSON.stringify(msg)),
          qos: 0,
          retain: false,
          dup: false,
        },
        () => {},
      );
    },
    downlink(payload, sequence) {
      const header = Buffer.from(peer.nonce);
      header.writeUInt16BE(payload.length, 2);
      header.writeUInt32BE(sequence, 12);
      return Buffer.concat([header, ctr(peer.key, header, payload)]);
    },
    async close() {
      udp.close();
      await new Promise<void>((r) => broker.close(() => r()));
      await new Promise<void>((r) => mqttServer.close(() => r()));
      await new Promise<void>((r) => httpServer.close(() => r()));
    },
  };
  broker.on('subscribe', () => peer.subscriptions++);
  broker.on('publish', (packet, client) => {
    if (!client) return;
    peer.client = client;
    const msg = JSON.parse(packet.payload.toString()) as Record<string, unknown>;
    peer.published.push({ topic: packet.topic, msg });
    if (msg.type === 'hello') {
      const answer = helloAnswer(peer);
      if (answer) peer.send(answer);
    }
  });
  udp.on('message', (data, rinfo) => {
    peer.deviceAddr = { address: rinfo.address, port: rinfo.port };
    const header = data.subarray(0, 16);
    peer.uplink.push({
      from: `${rinfo.address}:${rinfo.port}`,
      sequence: data.readUInt32BE(12),
      header: Buffer.from(header),
      payload: ctr(peer.key, header, data.subarray(16)),
    });
  });
  return peer;
}

const identity = { deviceId: '02:00:00:00:00:01', clientId: '6c0b8a3e-1d2f-4b5a-9c7d-8e9f0a1b2c3d' };

describe('simulated firmware against a hand-made peer', () => {
  let peer: Peer;
  let helloMode: 'good' | 'websocket' | 'silent' = 'good';
  before(async () => {
    peer = await startPeer((p) => {
      if (helloMode === 'silent') return null;
      if (helloMode === 'websocket') return { type: 'hello', transport: 'websocket', session_id: 'nope' };
      return {
        type: 'hello',
        transport: 'udp',
        session_id: 's-1',
        audio_params: { format: 'opus', sample_rate: 24000, channels: 1, frame_duration: 60 },
        udp: {
          server: '127.0.0.1',
          port: (p.udp.address() as AddressInfo).port,
          key: p.key.toString('hex'),
          nonce: p.nonce.toString('hex'),
        },
      };
    });
  });
  after(async () => {
    await peer.close();
  });

  test('OTA, CONNECT with the stored credentials, hello, audio both ways, goodbye both ways', async () => {
    const fw = new SimFirmware({ otaUrl: peer.otaUrl, identity, helloTimeoutMs: 2000 });
    try {
      await fw.boot();
      const ota = peer.otaRequests.at(-1);
      assert.equal(ota?.headers['device-id'], identity.deviceId);
      assert.equal(ota?.headers['client-id'], identity.clientId);
      assert.equal(ota?.headers['user-agent'], 'bread-compact-wifi/2.4.2');
      assert.equal(ota?.headers['activation-version'], '1');
      assert.equal((ota?.body.application as Record<string, unknown>).version, '2.4.2');
      assert.deepEqual(peer.connects.at(-1), { clientId: 'GID@@@aa_bb', username: 'u', password: 'secret' });
      assert.equal(fw.flash.mqtt.get('keepalive'), 30);

      helloMode = 'good';
      const params = await fw.openAudioChannel();
      assert.equal(params.sessionId, 's-1');
      assert.equal(fw.sessionId, 's-1');
      assert.deepEqual(peer.published.at(-1), {
        topic: 'device-server',
        msg: {
          type: 'hello',
          version: 3,
          transport: 'udp',
          features: { mcp: true, glyph_push: false },
          audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
        },
      });

      // Uplink: sequences 1.., header from the nonce, payload decrypts.
      const frames = [randomBytes(40), randomBytes(41), randomBytes(42)];
      for (const f of frames) assert.ok(fw.sendAudio(f));
      await fw.waitFor('uplink', () => peer.uplink.length >= 3 || undefined, 2000);
      assert.deepEqual(
        peer.uplink.map((u) => u.sequence),
        [1, 2, 3],
      );
      assert.deepEqual(
        peer.uplink.map((u) => u.payload),
        frames,
      );
      for (const u of peer.uplink)
        assert.deepEqual(
          [u.header.subarray(0, 2), u.header.subarray(4, 8)],
          [peer.nonce.subarray(0, 2), peer.nonce.subarray(4, 8)],
        );

      // Downlink while speaking: played; a replay, a short one, a bad type and a bad size are dropped.
      fw.listenStart('auto');
      peer.send({ type: 'tts', state: 'start', session_id: 's-1' });
      await fw.waitJson('tts', 'start', 2000);
      const to = peer.deviceAddr as { address: string; port: number };
      const send = (d: Buffer): void => peer.udp.send(d, to.port, to.address);
      const payload = randomBytes(60);
      send(peer.downlink(payload, 1));
      send(peer.downlink(payload, 1));
      send(Buffer.alloc(10, 1));
      const typed = peer.downlink(payload, 2);
      typed[0] = 0;
      send(typed);
      send(Buffer.concat([peer.downlink(payload, 2), Buffer.alloc(3)]));
      send(peer.downlink(payload, 2));
      await fw.waitFor('datagrams', () => fw.datagrams >= 6 || undefined, 2000);
      assert.deepEqual(fw.drops, { short: 1, type: 1, size: 1, old: 1 });
      assert.deepEqual(
        fw.audio.map((a) => [a.header.sequence, a.played]),
        [
          [1, true],
          [2, true],
        ],
      );
      assert.deepEqual(fw.audio[0]?.payload, payload);
      peer.send({ type: 'tts', state: 'stop', session_id: 's-1' });
      await fw.waitJson('tts', 'stop', 2000);
      assert.equal(fw.state, 'listening');

      // The device's goodbye closes its UDP side; the MQTT connection stays.
      fw.closeAudioChannel();
      await fw.waitFor('goodbye', () => peer.published.find((p) => p.msg.type === 'goodbye'), 2000);
      assert.deepEqual(peer.published.find((p) => p.msg.type === 'goodbye')?.msg, {
        session_id: 's-1',
        type: 'goodbye',
      });
      assert.equal(fw.sendAudio(randomBytes(10)), false);
      assert.ok(fw.mqttConnected);

      // A new hello: a new socket (new source port), sequences from 1 again. A server goodbye with
      // another session id is ignored; with this one it closes the channel without an answer.
      const firstPort = to.port;
      await fw.openAudioChannel();
      fw.sendAudio(randomBytes(20));
      await fw.waitFor('uplink', () => peer.uplink.length >= 4 || undefined, 2000);
      assert.equal(peer.uplink.at(-1)?.sequence, 1);
      assert.notEqual(peer.deviceAddr?.port, firstPort);
      const goodbyes = peer.published.filter((p) => p.msg.type === 'goodbye').length;
      peer.send({ type: 'goodbye', session_id: 'other' });
      await fw.waitFor('other goodbye', () => fw.json.some((j) => j.msg.session_id === 'other') || undefined, 2000);
      assert.ok(fw.channelOpen);
      peer.send({ type: 'goodbye', session_id: 's-1' });
      await fw.waitFor('channel closed', () => !fw.channelOpen || undefined, 2000);
      assert.deepEqual(fw.channelCloses, ['device_goodbye', 'server_goodbye']);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(
        peer.published.filter((p) => p.msg.type === 'goodbye').length,
        goodbyes,
        'no goodbye in answer to the server',
      );

      // MCP over the same topic, from the device's own server.
      peer.send({ session_id: 's-1', type: 'mcp', payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
      const reply = await fw.waitFor('mcp reply', () => peer.published.find((p) => p.msg.type === 'mcp')?.msg, 2000);
      assert.deepEqual(
        (reply.payload as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name),
        ['self.get_device_status', 'self.audio_speaker.set_volume'],
      );
      assert.equal(peer.subscriptions, 0, 'the firmware subscribes to nothing');
      assert.ok(peer.published.every((p) => p.topic === 'device-server'));
    } finally {
      fw.close();
    }
  });

  test('a server hello for another transport, or none, fails the channel after the wait', async () => {
    const fw = new SimFirmware({ otaUrl: peer.otaUrl, identity, helloTimeoutMs: 300 });
    try {
      await fw.boot();
      helloMode = 'websocket';
      await assert.rejects(fw.openAudioChannel(), /server hello/);
      helloMode = 'silent';
      await assert.rejects(fw.openAudioChannel(), /server hello/);
    } finally {
      fw.close();
    }
  });

  test('a refused CONNECT is reported', async () => {
    const fw = new SimFirmware({ otaUrl: peer.otaUrl, identity });
    try {
      await fw.checkVersion();
      fw.flash.mqtt.set('password', 'wrong');
      await assert.rejects(fw.startMqtt(), /Bad username or password|Not authorized/i);
      assert.equal(fw.mqttConnected, false);
      assert.equal(fw.connectErrors.length, 1);
    } finally {
      fw.close();
    }
  });
});
