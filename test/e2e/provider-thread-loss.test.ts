/**
 * The provider thread (LLM client, OpenAI ASR) dying during a turn: that turn gets the spoken LLM
 * apology and `tts stop`, /metrics counts the restart, and the next turn is served by the new thread.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:worker_threads';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';

function sentences(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

async function restartsMetric(srv: VoiceApp): Promise<number> {
  const text = await (await fetch(`${srv.httpUrl}/metrics`)).text();
  const m = /^xiaozhi_provider_thread_restarts (\d+)$/m.exec(text);
  assert.ok(m, 'the restart gauge is exported');
  return Number(m[1]);
}

describe('provider thread lost during a turn', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  /** The provider threads the server started, in order: the last one is running. */
  const providerThreads: Worker[] = [];
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { llm: { timeoutMs: 20_000 } }, undefined, {
      onWorker: (w, label) => {
        if (label === 'provider thread') providerThreads.push(w);
      },
    });
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('the turn in flight apologises, the restart is counted, the next turn works', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      assert.equal(await restartsMetric(srv), 0);
      const before = llm.requests.length;
      llm.script({ kind: 'stall' });
      dev.listen('detect', { text: 'hello there' });
      await llm.waitForRequests(before + 1);
      await providerThreads.at(-1)?.terminate();
      await dev.waitJson('tts', 'stop', 15_000);
      assert.deepEqual(sentences(dev), [srv.config.conversation.apologies.llm]);
      assert.equal(srv.logs.find('turn failed; apologising').at(-1)?.code, 'provider_failed');
      assert.equal(await restartsMetric(srv), 1);
      const from = dev.json.length;
      llm.script(fakeText('Back on a fresh thread.'));
      dev.listen('detect', { text: 'try again' });
      await dev.waitJson('tts', 'stop', 15_000, from);
      assert.deepEqual(sentences(dev, from), ['Back on a fresh thread.']);
    } finally {
      dev.close();
    }
  });
});
