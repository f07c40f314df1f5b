/**
 * Open mode (the default) lets anyone connect with any Device-Id (MAC) and Client-Id: a stranger who
 * knows a device's MAC and presents another Client-Id is a different identity pair, and gets nothing
 * of the first device. The real server on loopback, real WebSocket devices and real MQTT+UDP clients
 * (the embedded broker), the fake OpenAI server recording every model request: the stranger's model
 * request holds none of the first device's remembered facts or history, and a `say` for the first
 * device (spoken now, or queued while it is away) never reaches the stranger, over either transport.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import {
  fakeToolCalls,
  onUserText,
  startFakeOpenAi,
  type FakeMessage,
  type FakeOpenAi,
  type RecordedRequest,
} from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { MqttUdpClient, type MqttSection } from '../helpers/mqtt-udp-client.ts';
import { sleep, waitFor } from '../helpers/wait.ts';

const ADMIN = 'admin-token-of-the-open-mode-pair-tests';
const FIRST = 'client-of-the-first-device';
const STRANGER = 'client-of-a-stranger';

function text(m: FakeMessage | undefined): string {
  return typeof m?.content === 'string' ? m.content : '';
}

function lastUser(r: RecordedRequest): string {
  return text([...r.body.messages].reverse().find((m) => m.role === 'user'));
}

/** The user messages before the current one: what the request remembers of earlier turns. */
function earlierUsers(r: RecordedRequest): string[] {
  return r.body.messages
    .filter((m) => m.role === 'user')
    .map(text)
    .slice(0, -1);
}

/** The `sentence_start` texts in a list of received messages. */
function sentences(json: ReadonlyArray<{ msg: Record<string, unknown> }>): string[] {
  return json.filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start').map((j) => String(j.msg.text));
}

describe('open mode: memory, history and say belong to the identity pair, not the MAC', { timeout: 240_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;

  before(async () => {
    llm = await startFakeOpenAi();
    llm.rule(
      onUserText(/^remember that/, (v) =>
        fakeToolCalls([{ name: 'remember', arguments: { fact: v.lastUserText.replace(/^remember that /, '') } }]),
      ),
    );
    // A short grace for a hello after an MQTT CONNECT: a device that sends none gets `alert` soon.
    srv = await startVoiceApp(llm.url, {
      admin: { token: ADMIN },
      mqtt: { enabled: true, host: '127.0.0.1', port: 0, udpPort: 0 },
      push: { helloGraceMs: 300 },
    });
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  const say = async (
    deviceId: string,
    body: Record<string, unknown>,
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const r = await fetch(`${srv.httpUrl}/api/admin/devices/${encodeURIComponent(deviceId)}/say`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  /** The model request of the turn that said `said`. */
  const requestOf = (said: string): RecordedRequest | undefined =>
    [...llm.requests].reverse().find((r) => lastUser(r) === said && r.body.messages.at(-1)?.role === 'user');

  const stored = (deviceId: string, said: string): Promise<boolean> =>
    waitFor(async () => (await srv.deps.memory?.store.history(deviceId, 200))?.some((t) => t.text === said) ?? false, {
      what: `"${said}" to be stored`,
      timeoutMs: 10_000,
    });

  async function wsTurn(dev: DeviceSim, said: string): Promise<RecordedRequest> {
    const from = dev.json.length;
    dev.listen('detect', { text: said });
    await dev.waitJson('tts', 'stop', 20_000, from);
    const req = requestOf(said);
    assert.ok(req, `the model was asked "${said}"`);
    return req;
  }

  async function wsSession(deviceId: string, clientId: string, said: string[]): Promise<RecordedRequest[]> {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId, clientId });
    const reqs: RecordedRequest[] = [];
    try {
      await dev.hello();
      for (const s of said) reqs.push(await wsTurn(dev, s));
    } finally {
      dev.close();
    }
    await dev.closed;
    await stored(deviceId, said.at(-1) ?? '');
    return reqs;
  }

  test("WebSocket: a stranger with a known MAC and another Client-Id gets none of the first device's facts or history; the first device still does", async () => {
    const mac = 'a4:00:00:00:00:01';
    await wsSession(mac, FIRST, ['remember that my daughter is called Mia', 'what is for dinner']);
    const [stranger] = await wsSession(mac, STRANGER, ['what is my daughter called']);
    assert.ok(stranger);
    assert.doesNotMatch(
      JSON.stringify(stranger.body.messages),
      /Mia|dinner/,
      "nothing of the first device in the stranger's request",
    );
    assert.deepEqual(earlierUsers(stranger), []);
    // The first device is unaffected, and finds nothing of the stranger's turn.
    const [first] = await wsSession(mac, FIRST, ['and her name again']);
    assert.ok(first);
    assert.match(text(first.body.messages[0]), /"my daughter is called Mia"/);
    assert.deepEqual(earlierUsers(first), ['remember that my daughter is called Mia', 'what is for dinner']);
  });

  test("the operator moves the first pair's memory to a new Client-Id (a re-flashed device) through the admin API: the new pair finds it, the old one has nothing", async () => {
    const mac = 'a4:00:00:00:00:01';
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${srv.httpUrl}/api/admin${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    const before = (await (await api('GET', `/devices/${mac}/memory`)).json()) as {
      currentClientId: string;
      clients: Array<{ clientId: string | null; facts: number }>;
    };
    assert.equal(before.currentClientId, FIRST, 'the first device was seen last');
    assert.deepEqual(before.clients.map((c) => [c.clientId, c.facts]).sort(), [
      [STRANGER, 0],
      [FIRST, 1],
    ]);
    assert.equal((await api('POST', `/devices/${mac}/memory/move`, { from: FIRST, to: FIRST })).status, 400);
    assert.equal((await api('POST', `/devices/${mac}/memory/move`, { from: 'nobody-here', to: FIRST })).status, 404);
    const moved = await api('POST', `/devices/${mac}/memory/move`, { from: FIRST, to: 'client-after-reflash' });
    assert.equal(moved.status, 200);
    const body = (await moved.json()) as { moved: { turns: number; facts: number } };
    assert.equal(body.moved.facts, 1);
    assert.ok(body.moved.turns >= 6, `the first pair's turns moved (${body.moved.turns})`);

    const [reflashed] = await wsSession(mac, 'client-after-reflash', ['what is my daughter called again']);
    assert.ok(reflashed);
    assert.match(text(reflashed.body.messages[0]), /"my daughter is called Mia"/);
    assert.ok(earlierUsers(reflashed).includes('what is for dinner'));
    const [old] = await wsSession(mac, FIRST, ['anyone there']);
    assert.ok(old);
    assert.doesNotMatch(JSON.stringify(old.body.messages), /Mia|dinner/);

    // One pair's memory deleted; the others keep theirs. Both routes are in the OpenAPI document.
    assert.equal((await api('DELETE', `/devices/${mac}/memory/${STRANGER}`)).status, 200);
    const after = (await (await api('GET', `/devices/${mac}/memory`)).json()) as {
      clients: Array<{ clientId: string | null }>;
    };
    assert.deepEqual(after.clients.map((c) => c.clientId).sort(), ['client-after-reflash', FIRST].sort());
    const doc = (await (await api('GET', '/openapi.json')).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    assert.ok(doc.paths['/api/admin/devices/{deviceId}/memory/move']?.post);
    assert.ok(doc.paths['/api/admin/devices/{deviceId}/memory/{clientId}']?.delete);
  });

  test('WebSocket: a say queued for the first device is not heard by the stranger; a say for the first pair while both are connected reaches only it', async () => {
    const mac = 'a4:00:00:00:00:02';
    const first = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: FIRST });
    await first.hello();
    first.close();
    await first.closed;
    await sleep(200);
    // The first device was seen last: the message waits for its pair.
    const queued = await say(mac, { text: 'You missed a call from the doctor.' });
    assert.equal(queued.status, 202);

    const stranger = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: STRANGER });
    const back = new DeviceSim({ url: srv.wsUrl, deviceId: mac, clientId: FIRST });
    try {
      await stranger.hello();
      await sleep(1500);
      assert.deepEqual(sentences(stranger.json), [], 'the stranger heard nothing');
      await back.hello();
      await back.waitFor(
        'the queued message',
        () => sentences(back.json).includes('You missed a call from the doctor.') || undefined,
        20_000,
      );
      await back.waitJson('tts', 'stop', 20_000);

      const from = stranger.json.length;
      const pinned = await say(mac, { text: 'The parcel has arrived.', clientId: FIRST });
      assert.deepEqual([pinned.status, pinned.body.status], [200, 'spoken']);
      await back.waitFor(
        'the pinned message',
        () => sentences(back.json).includes('The parcel has arrived.') || undefined,
        20_000,
      );
      await sleep(500);
      assert.deepEqual(sentences(stranger.json.slice(from)), [], 'the stranger heard nothing');
    } finally {
      stranger.close();
      back.close();
    }
  });

  async function ota(deviceId: string, clientId: string): Promise<MqttSection> {
    const r = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'device-id': deviceId, 'client-id': clientId },
      body: JSON.stringify({ application: { version: '2.4.2' }, board: { type: 'bread-compact-wifi' } }),
    });
    assert.equal(r.status, 200);
    const section = ((await r.json()) as { mqtt?: MqttSection }).mqtt;
    assert.ok(section, 'OTA offers mqtt');
    return section;
  }

  async function mqttTurn(dev: MqttUdpClient, said: string): Promise<RecordedRequest> {
    const from = dev.json.length;
    dev.publish({ type: 'listen', state: 'detect', text: said, session_id: dev.sessionId });
    await dev.waitJson('tts', (m) => m.state === 'stop', 20_000, from);
    const req = requestOf(said);
    assert.ok(req, `the model was asked "${said}"`);
    return req;
  }

  test("MQTT: a stranger with a known MAC and another Client-Id gets none of the first device's memory, and not its queued message", async () => {
    const mac = 'a4:00:00:00:00:03';
    const first = await MqttUdpClient.connect(await ota(mac, FIRST));
    await first.hello();
    await mqttTurn(first, 'remember that my cat is called Tom');
    await mqttTurn(first, 'what is for lunch');
    first.publish({ type: 'goodbye', session_id: first.sessionId });
    await first.close();
    await stored(mac, 'what is for lunch');
    await waitFor(() => srv.app.registry.size === 0, { what: "the first device's session to end" });

    // The first device was seen last: a message for the MAC waits for its pair.
    const queued = await say(mac, { text: 'The vet called back.' });
    assert.equal(queued.status, 202);

    const stranger = await MqttUdpClient.connect(await ota(mac, STRANGER));
    try {
      await stranger.hello();
      const req = await mqttTurn(stranger, 'what is my cat called');
      assert.doesNotMatch(
        JSON.stringify(req.body.messages),
        /Tom|lunch|vet/,
        "nothing of the first device in the stranger's request",
      );
      assert.deepEqual(earlierUsers(req), []);
      stranger.publish({ type: 'goodbye', session_id: stranger.sessionId });
      await waitFor(() => srv.app.registry.size === 0, { what: "the stranger's session to end" });
      // Past the hello grace, idle on the broker: still nothing for the stranger.
      await sleep(1000);
      const told = stranger.json.filter(
        (j) => j.msg.type === 'alert' || j.msg.type === 'notify' || JSON.stringify(j.msg).includes('vet'),
      );
      assert.deepEqual(
        told.map((j) => j.msg),
        [],
        "the stranger was told nothing of the first device's message",
      );
    } finally {
      await stranger.close();
    }

    // The first device back on the broker, idle: its message comes as an alert after the grace.
    const back = await MqttUdpClient.connect(await ota(mac, FIRST));
    try {
      const alert = await back.waitJson('alert', () => true, 10_000);
      assert.equal(alert.message, 'The vet called back.');
    } finally {
      await back.close();
    }
  });
});
