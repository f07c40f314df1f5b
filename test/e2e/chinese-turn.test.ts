/**
 * `language: zh` end to end: the Chinese system prompt reaches the LLM, the Chinese answer is
 * spoken by the embedded espeak-ng Mandarin voice as real Opus, and a failing LLM is apologised
 * for in Chinese.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeError, fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { LANGUAGE_PACKS } from '../../features/agents/language.ts';

function sentences(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

describe('a Chinese turn (language: zh)', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { language: 'zh' });
  });
  after(async () => {
    await srv?.close();
    await llm?.close();
  });

  test('Chinese prompt in, Mandarin Opus out', async () => {
    assert.equal(srv.config.tts.provider === 'espeak' && srv.config.tts.voice, 'cmn-latn-pinyin');
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      llm.script(fakeText('今天天气很好。我们出去走走吧。'));
      dev.listen('detect', { text: '今天天气怎么样' });
      await dev.waitJson('tts', 'stop', 20_000);
      const system = llm.requests.at(-1)?.body.messages.find((m) => m.role === 'system');
      assert.match(String(system?.content), /你是小智/);
      assert.deepEqual(sentences(dev), ['今天天气很好。', '我们出去走走吧。']);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 1500 && decoded.rms > 300, `audible Mandarin: ${decoded.ms} ms, rms ${decoded.rms}`);
    } finally {
      dev.close();
    }
  });

  test('a failing LLM is apologised for in Chinese', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      llm.script(fakeError(500, 'down'));
      dev.listen('detect', { text: '讲个笑话' });
      await dev.waitJson('tts', 'stop', 20_000);
      assert.deepEqual(sentences(dev), [LANGUAGE_PACKS.zh.conversation.apologies.llm]);
    } finally {
      dev.close();
    }
  });
});
