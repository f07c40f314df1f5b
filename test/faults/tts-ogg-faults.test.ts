/**
 * Fault injection: the remote TTS (`tts.provider: openai`, `format: opus`, so every answer is Ogg
 * demuxed and Opus decoded in the session's media worker, no ffmpeg) answering a damaged Ogg page
 * and bytes that are not Ogg at all. Only the paid service is faked
 * (test/fixtures/fake-openai-audio.ts); its Ogg/Opus is made by ffmpeg's libopus here.
 * Defined outcomes (voice/conversation/turn.ts): an answer of which nothing could be played
 * becomes the voice-service apology (`conversation.apologies.tts`), spoken with the embedded voice
 * when the remote one fails again; one whose last page is damaged plays what came before it and
 * ends the sentence there. Either way the failure is logged with what was wrong with the bytes,
 * the media worker is not lost (no session ends, no worker restarts), the session goes on and
 * nothing is left behind.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { FaultRig } from './rig.ts';
import type { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText } from '../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../fixtures/fake-openai-audio.ts';
import { speechIn } from '../fixtures/tts-speech.ts';
import { closeAll } from '../helpers/close-all.ts';
import { within } from '../helpers/wait.ts';
import { assertNoLeaks, holdings } from './leak-check.ts';

type Fault = 'none' | 'damaged' | 'not ogg';

describe('fault: remote Opus TTS answers a damaged Ogg page or bytes that are not Ogg', { timeout: 120_000 }, () => {
  let tts: FakeOpenAiAudio | undefined;
  let fault: Fault = 'none';
  const rig = new FaultRig('fa:00:00:00:0b');
  const { server, fake, device } = rig;

  /** The answer's Ogg/Opus, damaged as `fault` says: one byte of its last page's body flipped, or random bytes. */
  function answer(input: string): Buffer {
    const ogg = speechIn('opus', input);
    if (fault === 'not ogg') return randomBytes(16 * 1024);
    if (fault === 'none') return ogg;
    const damaged = Buffer.from(ogg);
    damaged[ogg.length - 1]! ^= 0x55;
    return damaged;
  }

  /** One typed turn answered with `text`; the sentences the device was shown and the frames it got until `tts stop`. */
  async function turn(dev: DeviceSim, text: string): Promise<{ said: string[]; frames: number }> {
    const from = dev.json.length;
    const audioFrom = dev.audio.length;
    fake().script(fakeText(text));
    dev.listen('detect', { text: 'hi' });
    await dev.waitJson('tts', 'stop', 30_000, from);
    const said = dev.json
      .slice(from)
      .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
      .map((j) => String(j.msg.text));
    return { said, frames: dev.audio.length - audioFrom };
  }

  before(
    async () => {
      tts = await startFakeOpenAiAudio({ keepAlive: false, speechAudio: (_format, input) => answer(input) });
      const heard = await rig.start({
        tts: { provider: 'openai', baseURL: tts.baseURL, apiKey: 'sk-tts', format: 'opus' },
      });
      assert.ok(heard.frames >= 5, `the warm-up answer was heard (${heard.frames} frames)`);
    },
    { timeout: 60_000 },
  );

  after(async () => {
    await closeAll(rig.srv, rig.llm, tts);
  });

  const apology = (): string => server().config.conversation.apologies.tts;
  for (const [kind, logged, said] of [
    [
      'damaged',
      /openai tts answered ogg that cannot be decoded \(ogg: page \d+ .*fails its checksum\)/,
      (): string[] => ['Here is the weather.'],
    ],
    ['not ogg', /openai tts answered ogg that cannot be decoded \(ogg: no page at byte 0/, (): string[] => [apology()]],
  ] as const) {
    test(`${kind}: ${kind === 'damaged' ? 'what came before the bad page is played' : 'the voice-service apology in the embedded voice'}, the bytes' fault logged, the worker and the session go on`, async () => {
      const base = await holdings(server().app);
      const dev = device();
      const failures = server().logs.find('speech synthesis failed').length;
      try {
        await within(dev.hello(), 20_000, 'hello');
        fault = kind;
        const heard = await turn(dev, 'Here is the weather.');
        fault = 'none';
        assert.deepEqual(heard.said, said());
        assert.ok(heard.frames > 0, 'audio is heard, not only shown');
        const lines = server().logs.find('speech synthesis failed').slice(failures);
        assert.ok(lines.length >= 1, 'the failure is logged');
        assert.ok(
          lines.every((l) => l.code === 'provider_failed' && logged.test(String(l.err))),
          JSON.stringify(lines),
        );
        assert.equal(server().logs.find('media worker died').length, 0, 'no worker was lost');
        assert.deepEqual((await turn(dev, 'Back to normal.')).said, ['Back to normal.'], 'the session goes on');
        assert.equal(dev.closeCode, null);
      } finally {
        fault = 'none';
        dev.close();
      }
      await within(dev.closed, 5000, 'device closed');
      await assertNoLeaks(server().app, base);
    });
  }
});
