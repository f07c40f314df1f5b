/**
 * One connection must not be able to grow the server's memory or keep itself
 * alive with chatter. Each test is the attack over a real WebSocket, then the defined reaction.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { sleep, waitFor } from '../../helpers/wait.ts';

describe('bounded per connection', () => {
  let t: TestApp;
  const rec = recordingConversation();
  before(async () => {
    t = await startTestApp({
      createConversation: rec.factory,
      config: { server: { idleTimeoutMs: 600 } },
    });
  });
  after(() => t.close());

  test('a repeated hello is not answered again', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:00:00:00:00:02' });
    try {
      await dev.hello();
      for (let i = 0; i < 20; i++) dev.sendRaw(JSON.stringify({ type: 'hello', version: 1, transport: 'websocket' }));
      const before = dev.json.length;
      dev.abort();
      await dev.waitJson('tts', 'stop', 5000, before);
      assert.equal(dev.json.filter((j) => j.msg.type === 'hello').length, 1);
    } finally {
      dev.close();
    }
  });

  test('chatter that is not audio or a valid listen does not keep the session alive', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:00:00:00:00:03' });
    try {
      await dev.hello();
      const timer = setInterval(() => {
        dev.sendRaw('{"type":"bogus"}');
        dev.sendRaw('{"type":"iot"}');
      }, 100);
      try {
        assert.equal(
          await Promise.race([dev.closed, new Promise((r) => setTimeout(() => r('still open'), 8000))]),
          4002,
        );
      } finally {
        clearInterval(timer);
      }
    } finally {
      dev.close();
    }
  });

  test('a valid listen does keep the session alive', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:00:00:00:00:04' });
    try {
      await dev.hello();
      const timer = setInterval(() => dev.listen('detect', { text: 'hi' }), 150);
      await sleep(1500);
      clearInterval(timer);
      assert.equal(dev.closeCode, null);
    } finally {
      dev.close();
    }
  });
});

describe('slow reader', () => {
  let t: TestApp;
  const rec = recordingConversation();
  before(async () => {
    t = await startTestApp({
      createConversation: rec.factory,
      // A generous control rate so the flood reaches the output limit.
      config: {
        server: { maxOutputBufferBytes: 64 * 1024, controlMessages: { perSecond: 1_000_000, burst: 1_000_000 } },
      },
    });
  });
  after(() => t.close());

  test('a client that never reads while flooding aborts is closed with 4007 and its buffer stays bounded', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:00:00:00:00:01' });
    try {
      await dev.hello();
      (dev.ws as unknown as { _socket: Socket })._socket.pause();
      const sessionsBefore = t.app.registry.size;
      // Each abort is answered with tts stop (~80 bytes); 300k of them is ~24 MB of answers.
      for (let i = 0; i < 300_000 && t.app.registry.size === sessionsBefore; i++) {
        dev.sendRaw('{"type":"abort"}');
        if (i % 5000 === 0) await new Promise((r) => setImmediate(r));
      }
      await waitFor(() => t.logs.find('output buffer over limit: closing').length === 1, {
        what: 'the slow reader to be closed',
        timeoutMs: 20_000,
      });
      const line = t.logs.find('output buffer over limit: closing')[0]!;
      assert.ok(
        (line.bufferedBytes as number) < 1024 * 1024,
        `buffer stayed near the 64 KiB limit, saw ${String(line.bufferedBytes)}`,
      );
      await waitFor(() => t.logs.find('session ended').some((l) => l.code === 4007), {
        what: 'the session to end',
        timeoutMs: 40_000,
      });
    } finally {
      dev.ws.terminate();
    }
  });
});

describe('control-message rate limit', () => {
  let t: TestApp;
  const rec = recordingConversation();
  before(async () => {
    t = await startTestApp({
      createConversation: rec.factory,
      config: { server: { controlMessages: { perSecond: 10, burst: 20 } } },
    });
  });
  after(() => t.close());

  test('a flood of aborts is answered only up to the budget, logged once, and the session survives', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'aa:00:00:00:00:05' });
    try {
      await dev.hello();
      for (let i = 0; i < 2000; i++) dev.abort();
      await sleep(1000);
      const stops = dev.json.filter((j) => j.msg.type === 'tts' && j.msg.state === 'stop').length;
      // Burst of 20 (the hello took one) plus a refill of 10/s over the moment the flood takes.
      assert.ok(stops >= 19 && stops < 200, `answered ${stops} of 2000`);
      assert.equal(t.logs.find('control messages over the rate limit: dropped').length, 1);
      await sleep(2100);
      const before = dev.json.length;
      dev.abort();
      await dev.waitJson('tts', 'stop', 5000, before);
    } finally {
      dev.close();
    }
  });
});
