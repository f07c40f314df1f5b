/**
 * Fault injection: a device that vanishes mid-answer without a close frame, a
 * half-open connection that goes silent, and a slow reader during a long answer. Defined outcomes:
 * a vanished device's session ends at once and its turn stops (LLM stream cancelled); a silent one
 * is closed with 4002 by the idle timer and its socket released; a paused reader is served at
 * real-time pace (the pacer never runs ahead of `audio.sendAheadMs`, so nothing piles up in this
 * process) and gets the whole answer when it reads again. A reader that stops for good and keeps
 * asking is closed with 4007: test/integration/server/connection-bounds.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { CLOSE_HANDSHAKE_GRACE_MS } from '../../transport/ws/channel.ts';
import { FaultRig } from './rig.ts';
import type { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText } from '../fixtures/fake-openai.ts';
import { closeAll } from '../helpers/close-all.ts';
import { waitFor, within } from '../helpers/wait.ts';
import { assertNoLeaks, holdings } from './leak-check.ts';

const IDLE_MS = 1500;
const LONG = Array.from({ length: 6 }, (_, i) => `Sentence ${i + 1} of a long answer.`).join(' ');

function socketOf(dev: DeviceSim): Socket {
  return (dev.ws as unknown as { _socket: Socket })._socket;
}

describe('fault: the device vanishes, goes silent or stops reading', { timeout: 90_000 }, () => {
  const rig = new FaultRig('fa:00:00:00:03');
  const { server, fake, device } = rig;

  async function quickTurn(dev: DeviceSim, answer: string): Promise<void> {
    const from = dev.json.length;
    fake().script(fakeText(answer));
    dev.listen('detect', { text: 'hi' });
    await dev.waitJson('tts', 'stop', 20_000, from);
  }

  before(() => rig.start({ server: { idleTimeoutMs: IDLE_MS } }), { timeout: 60_000 });

  after(async () => {
    await closeAll(rig.srv, rig.llm);
  });

  test('a device vanishing mid-answer (socket destroyed, no close frame): the session and its turn end at once', async () => {
    const base = await holdings(server().app);
    const dev = device();
    const other = device();
    try {
      await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
      const ended = server().logs.find('session ended').length;
      fake().script(fakeText(LONG, { chunkSize: 6, delayMs: 40 }));
      dev.listen('detect', { text: 'tell me a long story' });
      await dev.waitFor('speaking', () => dev.audio.length >= 5, 15_000);
      const request = fake().requests.at(-1);
      socketOf(dev).destroy();
      await waitFor(() => server().logs.find('session ended').length > ended, {
        what: 'the session to end',
        timeoutMs: 5000,
      });
      assert.equal(server().logs.find('session ended').at(-1)?.code, null, 'ended by the socket, not by the server');
      await within(request?.finished ?? Promise.reject(new Error('no LLM request')), 5000, 'LLM stream cancelled');
      assert.equal(request?.closedEarly, true, 'the model stream was cancelled');
      await quickTurn(other, 'Still here.');
    } finally {
      other.close();
    }
    await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
    await assertNoLeaks(server().app, base);
  });

  test('a half-open connection that goes silent: closed by the idle timer (4002), its socket released', async () => {
    const base = await holdings(server().app);
    const dev = device();
    try {
      await within(dev.hello(), 20_000, 'hello');
      const ended = server().logs.find('session ended').length;
      // The peer is gone: it neither sends nor reads (it would never answer the close frame).
      socketOf(dev).pause();
      await waitFor(() => server().logs.find('session ended').length > ended, {
        what: 'the idle timeout',
        timeoutMs: IDLE_MS + 5000,
      });
      assert.equal(server().logs.find('session ended').at(-1)?.code, 4002);
      // The server's side of the socket must not wait for a closing handshake that never comes.
      const deadline = Date.now() + CLOSE_HANDSHAKE_GRACE_MS + 3000;
      for (;;) {
        const now = await holdings(server().app);
        if (now.connections === base.connections && now.sessions === 0) break;
        assert.ok(Date.now() < deadline, `the server still holds the socket (${now.connections} connections)`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      dev.ws.terminate();
    }
    await assertNoLeaks(server().app, base);
  });

  test('a slow reader during a long answer: served at real-time pace, nothing piles up, the whole answer arrives', async () => {
    const base = await holdings(server().app);
    const dev = device();
    const other = device();
    try {
      await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
      fake().script(fakeText(LONG));
      dev.listen('detect', { text: 'tell me a long story' });
      await dev.waitFor('speaking', () => dev.audio.length >= 3, 15_000);
      socketOf(dev).pause();
      const pausedAt = dev.audio.length;
      // Another device is served normally meanwhile.
      await quickTurn(other, 'Meanwhile.');
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(dev.audio.length, pausedAt, 'the reader really was paused');
      socketOf(dev).resume();
      await dev.waitJson('tts', 'stop', 30_000);
      const said = dev.json.filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start').length;
      assert.equal(said, 6, 'every sentence arrived');
      assert.equal(server().logs.find('output buffer over limit: closing').length, 0);
      assert.equal(dev.closeCode, null);
    } finally {
      dev.close();
      other.close();
    }
    await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
    await assertNoLeaks(server().app, base);
  });
});
