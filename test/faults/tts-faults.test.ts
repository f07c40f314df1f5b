/**
 * Fault injection: the remote TTS (`tts.provider: openai`, `format: mp3`, so every
 * answer is decoded by a real ffmpeg) answering bytes that are not audio, and its connection lost
 * mid-answer. Only the paid service is faked (test/fixtures/fake-openai-audio.ts); the mp3 it
 * serves is made by ffmpeg here.
 * Defined outcomes (voice/conversation/turn.ts): an answer of which nothing could be played is
 * replaced by the voice-service apology (`conversation.apologies.tts`: undecodable bytes and a broken
 * stream are the service's failure), spoken with the embedded voice (the failed voice is not asked
 * for it), then `tts stop`. The error is logged, the session goes on, and no ffmpeg, socket or timer
 * is left behind. (A cut after some of the sentence was played plays that part and ends the
 * sentence there: covered by nothing here, as the moment ffmpeg's first output reaches the device
 * cannot be ordered against the cut without a hook in the fake.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { FaultRig } from './rig.ts';
import type { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText } from '../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, tonePcm24k, type FakeOpenAiAudio } from '../fixtures/fake-openai-audio.ts';
import { childProcesses } from '../helpers/speech.ts';
import { closeAll } from '../helpers/close-all.ts';
import { within } from '../helpers/wait.ts';
import { assertNoLeaks, holdings } from './leak-check.ts';

/** A 2 s tone as mp3, encoded by ffmpeg (what a real TTS service would send). */
function toneMp3(): Buffer {
  const r = spawnSync(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      's16le',
      '-ar',
      '24000',
      '-ac',
      '1',
      '-i',
      'pipe:0',
      '-f',
      'mp3',
      'pipe:1',
    ],
    {
      input: tonePcm24k(2000),
      maxBuffer: 1 << 20,
    },
  );
  if (r.status !== 0 || r.stdout.length === 0)
    throw new Error(`ffmpeg could not make the mp3 fixture: ${r.stderr.toString()}`);
  return r.stdout;
}

interface Heard {
  /** sentence_start texts. */
  said: string[];
  /** Opus packets received. */
  frames: number;
}

describe('fault: remote mp3 TTS answers garbage or is cut mid-answer', { timeout: 120_000 }, () => {
  let tts: FakeOpenAiAudio | undefined;
  let garbage = false;
  /** Frames of a whole one-sentence answer (the 2 s tone), measured in the warm-up. */
  let fullFrames = 0;
  const rig = new FaultRig('fa:00:00:00:05');
  const { server, fake, device } = rig;
  const speech = (): FakeOpenAiAudio => {
    assert.ok(tts, 'fake TTS started');
    return tts;
  };

  /** One typed turn answered with `answer`; what the device was told and sent until `tts stop`. */
  async function turn(dev: DeviceSim, answer: string): Promise<Heard> {
    const from = dev.json.length;
    const audioFrom = dev.audio.length;
    fake().script(fakeText(answer));
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
      const mp3 = toneMp3();
      // 16 KB of random bytes where an mp3 is expected: ffmpeg finds no frame it can decode.
      // `cut` sends 100 bytes of the mp3 (less than one frame) and drops the connection.
      tts = await startFakeOpenAiAudio({
        keepAlive: false,
        cutAfterBytes: 100,
        speechAudio: (format) => (format !== 'mp3' ? Buffer.alloc(0) : garbage ? randomBytes(16 * 1024) : mp3),
      });
      const heard = await rig.start({
        tts: {
          provider: 'openai',
          baseURL: tts.baseURL,
          apiKey: 'sk-tts',
          model: 'tts-1',
          voice: 'alloy',
          format: 'mp3',
        },
      });
      fullFrames = heard.frames;
      // 2 s of 60 ms frames, give or take the encoder's padding.
      assert.ok(fullFrames >= 30, `a whole answer is ${fullFrames} frames`);
    },
    { timeout: 60_000 },
  );

  after(async () => {
    await closeAll(rig.srv, rig.llm, tts);
  });

  test('the TTS answers garbage for mp3: ffmpeg rejects it, the voice-service apology is spoken with the embedded voice, no ffmpeg left', async () => {
    const base = await holdings(server().app);
    const dev = device();
    const speeches = speech().speeches.length;
    const undecodable = server().logs.find('ffmpeg could not decode input').length;
    try {
      await within(dev.hello(), 20_000, 'hello');
      garbage = true;
      const heard = await turn(dev, 'Here is the weather.');
      garbage = false;
      assert.deepEqual(heard.said, [server().config.conversation.apologies.tts], 'the user hears which part failed');
      assert.ok(heard.frames > 0, 'the apology is heard, not only shown');
      // The answer only: the apology for a failed voice goes straight to the embedded one, the
      // failed voice is not asked again.
      assert.equal(speech().speeches.length - speeches, 1);
      assert.equal(
        server().logs.find('ffmpeg could not decode input').length - undecodable,
        1,
        'the undecodable answer is logged',
      );
      assert.equal(server().logs.find('apology could not be spoken with this TTS').length, 0);
      assert.deepEqual(childProcesses(/ffmpeg/), []);
      assert.deepEqual((await turn(dev, 'Back to normal.')).said, ['Back to normal.'], 'the session goes on');
      assert.equal(dev.closeCode, null);
    } finally {
      garbage = false;
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(server().app, base);
  });

  test('the TTS connection is lost mid-answer: the voice-service apology with the embedded voice, the error logged, no ffmpeg left', async () => {
    const base = await holdings(server().app);
    const dev = device();
    const failed = server().logs.find('openai tts failed').length;
    try {
      await within(dev.hello(), 20_000, 'hello');
      speech().speechMode = 'cut';
      const heard = await turn(dev, 'This answer is cut off.');
      speech().speechMode = 'ok';
      assert.deepEqual(heard.said, [server().config.conversation.apologies.tts], 'the user hears which part failed');
      assert.ok(heard.frames > 0, 'the apology is heard, not only shown');
      // The answer, cut; the apology is not tried with the failed voice.
      const cuts = server().logs.find('openai tts failed').slice(failed);
      assert.equal(cuts.length, 1, 'the cut is logged');
      assert.ok(
        cuts.every((l) => l.code === 'provider_failed' && /connection lost/.test(String(l.err))),
        JSON.stringify(cuts),
      );
      assert.deepEqual(childProcesses(/ffmpeg/), []);
      assert.deepEqual((await turn(dev, 'Back to normal.')).said, ['Back to normal.'], 'the session goes on');
      assert.equal(dev.closeCode, null);
    } finally {
      speech().speechMode = 'ok';
      dev.close();
    }
    await within(dev.closed, 5000, 'device closed');
    await assertNoLeaks(server().app, base);
  });
});
