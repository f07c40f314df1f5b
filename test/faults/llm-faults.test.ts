/**
 * Fault injection: the chat model answers 429 (with a Retry-After short enough to
 * honour, and one too long to wait for), streams malformed SSE, or cuts its stream mid-answer.
 * Defined outcomes (providers/openai/llm.ts, voice/conversation/turn.ts): a short Retry-After is waited
 * and the retry answers; anything else is the LLM apology (`conversation.apologies.llm`) then
 * `tts stop`; the session and another device keep working; nothing is left behind.
 * LLM 500 and a hanging LLM are in test/e2e/failures-and-abort.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FaultRig } from './rig.ts';
import type { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, type FakeReply } from '../fixtures/fake-openai.ts';
import { closeAll } from '../helpers/close-all.ts';
import { within } from '../helpers/wait.ts';
import { assertNoLeaks, holdings } from './leak-check.ts';

function spoken(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

describe('fault: the LLM rate-limits or breaks its stream', { timeout: 90_000 }, () => {
  const rig = new FaultRig('fa:00:00:00:02');
  const { server, fake, device } = rig;
  const apology = (): string => server().config.conversation.apologies.llm;

  async function turn(dev: DeviceSim, text: string, ...replies: FakeReply[]): Promise<string[]> {
    const from = dev.json.length;
    fake().script(...replies);
    dev.listen('detect', { text });
    await dev.waitJson('tts', 'stop', 20_000, from);
    return spoken(dev, from);
  }

  /** Runs `fault` with a victim and a bystander device, then checks both still talk and nothing leaked. */
  async function withDevices(fault: (dev: DeviceSim) => Promise<void>): Promise<void> {
    const base = await holdings(server().app);
    const dev = device();
    const other = device();
    try {
      await within(Promise.all([dev.hello(), other.hello()]), 20_000, 'hello');
      await fault(dev);
      assert.deepEqual(await turn(other, 'are you there', fakeText('Yes.')), ['Yes.'], 'another device is served');
      assert.deepEqual(await turn(dev, 'and now', fakeText('Fine.')), ['Fine.'], 'the same session is served again');
    } finally {
      dev.close();
      other.close();
    }
    await within(Promise.all([dev.closed, other.closed]), 5000, 'devices closed');
    await assertNoLeaks(server().app, base);
  }

  before(() => rig.start({ llm: { timeoutMs: 2000, maxRetries: 1 } }), { timeout: 60_000 });

  after(async () => {
    await closeAll(rig.srv, rig.llm);
  });

  test('429 with a short Retry-After: waited, retried, answered', () =>
    withDevices(async (dev) => {
      const requests = fake().requests.length;
      const t0 = Date.now();
      const said = await turn(
        dev,
        'hello',
        { kind: 'error', status: 429, message: 'slow down', headers: { 'retry-after': '1' } },
        fakeText('After the wait.'),
      );
      assert.deepEqual(said, ['After the wait.']);
      assert.equal(fake().requests.length, requests + 2, 'one retry');
      assert.ok(Date.now() - t0 >= 1000, 'the Retry-After second was waited');
      const retry = server().logs.find('llm request failed, retrying').at(-1);
      assert.equal(retry?.code, 'rate_limited');
      assert.equal(retry?.waitMs, 1000);
    }));

  test('429 with a Retry-After longer than a turn can wait: not retried, the LLM apology at once', () =>
    withDevices(async (dev) => {
      const requests = fake().requests.length;
      const t0 = Date.now();
      const said = await turn(dev, 'hello', {
        kind: 'error',
        status: 429,
        message: 'quota',
        headers: { 'retry-after': '3600' },
      });
      assert.deepEqual(said, [apology()]);
      assert.equal(fake().requests.length, requests + 1, 'no retry');
      assert.ok(Date.now() - t0 < 15_000);
      assert.equal(server().logs.find('turn failed; apologising').at(-1)?.code, 'rate_limited');
    }));

  test('malformed SSE (data that is not JSON): the LLM apology, the stream is closed', () =>
    withDevices(async (dev) => {
      const said = await turn(dev, 'hello', {
        kind: 'raw',
        data: ['{"id":"x","choices":[{"delta":{"content":"Hel', 'lo"}}]}', '[DONE]'],
      });
      assert.deepEqual(said, [apology()]);
      const failed = server().logs.find('turn failed; apologising').at(-1);
      assert.equal(failed?.part, 'llm');
      await within(
        fake().requests.at(-1)?.finished ?? Promise.reject(new Error('no request')),
        5000,
        'LLM exchange over',
      );
    }));

  test('the stream is cut after the first sentence: that sentence, then the LLM apology, then tts stop', () =>
    withDevices(async (dev) => {
      const said = await turn(dev, 'tell me two things', {
        kind: 'disconnect',
        text: 'The first thing is fine. The second',
      });
      assert.deepEqual(said, ['The first thing is fine.', apology()]);
      assert.equal(
        server()
          .logs.find('llm request failed, retrying')
          .filter((l) => l.code !== 'rate_limited').length,
        0,
        'not retried after text was spoken',
      );
    }));
});
