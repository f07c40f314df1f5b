/**
 * A voice turn through the OpenAI-compatible ASR and TTS providers (fake server, real wire
 * format), and what happens when the remote TTS fails: the apology is spoken with the embedded
 * espeak-ng instead, and the session stays usable.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../fixtures/fake-openai-audio.ts';
import { decodeDownlink, sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';

describe('remote (OpenAI-compatible) ASR and TTS', () => {
  let llm: FakeOpenAi;
  let audio: FakeOpenAiAudio;
  let srv: VoiceApp;
  before(async () => {
    llm = await startFakeOpenAi();
    audio = await startFakeOpenAiAudio({ transcript: 'turn on the kitchen light' });
    srv = await startVoiceApp(llm.url, {
      asr: { provider: 'openai', baseURL: audio.baseURL, apiKey: 'sk-asr', model: 'whisper-1', language: 'en' },
      tts: {
        provider: 'openai',
        baseURL: audio.baseURL,
        apiKey: 'sk-tts',
        model: 'tts-1',
        voice: 'alloy',
        format: 'wav',
      },
    });
  });
  after(async () => {
    await closeAll(srv, audio, llm);
  });

  test('speech is transcribed remotely and the answer synthesized remotely', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      dev.listen('start', { mode: 'auto' });
      await sendPaced(dev, await utterancePackets(speak16k('turn on the kitchen light')), 60, () =>
        dev.json.some((j) => j.msg.type === 'tts'),
      );
      const stt = await dev.waitJson('stt', undefined, 15_000);
      assert.equal(stt.text, 'turn on the kitchen light');
      await dev.waitJson('tts', 'stop', 15_000);
      const up = audio.transcriptions.at(-1);
      assert.equal(up?.model, 'whisper-1');
      assert.equal(up?.language, 'en');
      assert.equal(up?.authorization, 'Bearer sk-asr');
      assert.ok((up?.file.length ?? 0) > 16000, 'the utterance was uploaded');
      assert.equal(audio.speeches.at(-1)?.body.input?.startsWith('You said'), true);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 300 && decoded.rms > 300);
    } finally {
      dev.close();
    }
  });

  test('remote TTS failing: the apology is spoken by the embedded TTS at once; the next turn works again', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl });
    try {
      await dev.hello();
      audio.speechMode = 'error500';
      const asked = audio.speeches.length;
      dev.listen('detect', { text: 'hello' });
      await dev.waitJson('tts', 'stop', 20_000);
      const said = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.deepEqual(said, [srv.config.conversation.apologies.tts], 'the apology shown once');
      // The failed voice is not asked again (it would fail again, or keep the device waiting for its timeout).
      assert.equal(
        audio.speeches.slice(asked).some((x) => x.body.input === srv.config.conversation.apologies.tts),
        false,
        'the remote TTS was not asked for the apology',
      );
      assert.equal(srv.logs.find('apology could not be spoken with this TTS').length, 0);
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.ok(decoded.ms > 1000 && decoded.rms > 300, 'the apology is audible');
      audio.speechMode = 'ok';
      const from = dev.json.length;
      dev.listen('detect', { text: 'and now?' });
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.ok(
        dev.json.slice(from).some((j) => j.msg.state === 'sentence_start' && /You said/.test(String(j.msg.text))),
      );
    } finally {
      audio.speechMode = 'ok';
      dev.close();
    }
  });
});
