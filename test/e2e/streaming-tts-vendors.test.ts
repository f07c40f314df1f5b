/**
 * The bidirectional voices end to end, each through its vendor's wire: the real server (the turn,
 * the provider's WebSocket client, Opus in the media worker, the pacer), the fake model streaming
 * its answer in small deltas, the vendor's stand-in (test/fixtures/fake-volcengine-tts.ts,
 * fake-cosyvoice-tts.ts: real PCM, the vendor's own sentence grouping and events) and a WebSocket
 * device. For each vendor:
 * - the answer's text reaches the vendor in pieces as the model writes it; the device gets the
 *   vendor's sentences as `sentence_start` with their audio, which decodes;
 * - `abort` mid-answer cancels the vendor's session (its cancel message) and stops the frames;
 * - the vendor dropping its socket mid-answer: one apology in the embedded voice, and the next
 *   turn is spoken by the vendor again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startFakeCosyVoiceTts, type FakeCosyVoice } from '../fixtures/fake-cosyvoice-tts.ts';
import { startFakeVolcengineTts, type FakeVolcengineTts } from '../fixtures/fake-volcengine-tts.ts';
import { closeAll } from '../helpers/close-all.ts';
import { createLogSink } from '../helpers/log-sink.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { sleep } from '../helpers/wait.ts';

/** What the tests need of either stand-in. */
interface Vendor {
  name: string;
  tts(): Record<string, unknown>;
  /** The texts the vendor received for its latest session, and how that session ended. */
  last(): { texts: string[]; sentences: string[]; ended: string | undefined };
  sessions(): number;
  cancelled(end: string | undefined): boolean;
  dropNext(): void;
  healthy(): void;
  close(): Promise<void>;
}

async function volcengine(): Promise<Vendor> {
  const fake: FakeVolcengineTts = await startFakeVolcengineTts({ chunkIntervalMs: 20 });
  return {
    name: 'volcengine',
    tts: () => ({
      provider: 'volcengine',
      url: fake.url,
      appKey: 'test-app-key',
      accessKey: 'test-access-key',
      resourceId: 'seed-tts-1.0',
    }),
    last: () => {
      const s = fake.sessions.at(-1);
      return { texts: s?.texts ?? [], sentences: s?.sentences ?? [], ended: s?.end };
    },
    sessions: () => fake.sessions.length,
    cancelled: (end) => end === 'cancelled',
    dropNext: () => {
      fake.fault = 'drop';
    },
    healthy: () => {
      fake.fault = 'none';
    },
    close: () => fake.close(),
  };
}

async function cosyvoice(): Promise<Vendor> {
  const fake: FakeCosyVoice = await startFakeCosyVoiceTts({ speech: 'tone', chunkIntervalMs: 20 });
  return {
    name: 'cosyvoice',
    tts: () => ({ provider: 'cosyvoice', url: fake.url, apiKey: fake.apiKey }),
    last: () => {
      const s = fake.sessions.at(-1);
      return { texts: s?.texts ?? [], sentences: s?.sentences ?? [], ended: s?.end };
    },
    sessions: () => fake.sessions.length,
    cancelled: (end) => end === 'cancel',
    dropNext: () => {
      fake.fault = 'drop';
    },
    healthy: () => {
      fake.fault = 'none';
    },
    close: () => fake.close(),
  };
}

function captions(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

for (const make of [volcengine, cosyvoice]) {
  describe(`${make.name}: a bidirectional voice through its wire, end to end`, () => {
    let llm: FakeOpenAi;
    let vendor: Vendor;
    let srv: VoiceApp;
    const logs = createLogSink();

    before(async () => {
      llm = await startFakeOpenAi();
      vendor = await make();
      srv = await startVoiceApp(llm.url, { tts: vendor.tts() }, logs);
    });
    after(async () => {
      await closeAll(srv, llm);
      await vendor.close();
    });

    test("the model's text goes to the vendor in pieces; its sentences are the captions, with audio that decodes", async () => {
      const dev = new DeviceSim({ url: srv.wsUrl });
      try {
        await dev.hello();
        const said = ['Hello there my good friend.', 'This is the second sentence.', 'And a third.'];
        llm.script(fakeText(said.join(' '), { chunkSize: 5, delayMs: 30 }));
        dev.listen('detect', { text: 'hello' });
        await dev.waitJson('tts', 'stop', 20_000);
        const session = vendor.last();
        assert.ok(session.texts.length > 3, `the vendor got the answer in ${session.texts.length} pieces`);
        assert.equal(session.texts.join('').replace(/\s+/g, ' ').trim(), said.join(' '));
        assert.deepEqual(captions(dev), said, "the vendor's sentences, in order");
        const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
        assert.equal(decoded.bad, 0, 'every packet decodes as Opus');
        assert.ok(decoded.ms > 1000, `${decoded.ms} ms of audio`);
        assert.ok(decoded.rms > 300, 'audible');
        const timing = logs.find('turn timings').at(-1);
        assert.equal(typeof timing?.ttsFirstAudioMs, 'number', 'the first audio from the vendor is timed');
      } finally {
        dev.close();
      }
    });

    test("abort mid-answer: the vendor's session is cancelled, no frame after tts stop, the session goes on", async () => {
      const dev = new DeviceSim({ url: srv.wsUrl });
      try {
        await dev.hello();
        llm.script(
          fakeText('This answer is long. It has several sentences. Each one takes a while. The end is far away.', {
            chunkSize: 8,
            delayMs: 120,
          }),
        );
        dev.listen('detect', { text: 'tell me something long' });
        await dev.waitFor('speaking', () => dev.audio.length >= 8, 20_000);
        dev.abort();
        const stop = await dev.waitFor(
          'tts stop',
          () => dev.json.find((j) => j.msg.type === 'tts' && j.msg.state === 'stop'),
          5000,
        );
        await sleep(800);
        assert.equal(dev.audio.filter((a) => a.at > stop.at).length, 0, 'nothing after tts stop');
        assert.ok(vendor.cancelled(vendor.last().ended), `the vendor's session ended ${vendor.last().ended}`);
        const from = dev.json.length;
        llm.script(fakeText('Okay.'));
        dev.listen('detect', { text: 'never mind' });
        await dev.waitJson('tts', 'stop', 15_000, from);
        assert.deepEqual(captions(dev, from), ['Okay.']);
      } finally {
        dev.close();
      }
    });

    test('the vendor drops its socket mid-answer: one apology in the embedded voice, and the next turn works', async () => {
      const dev = new DeviceSim({ url: srv.wsUrl });
      try {
        await dev.hello();
        const before = vendor.sessions();
        vendor.dropNext();
        llm.script(fakeText('The first part is fine. The second part breaks.'));
        dev.listen('detect', { text: 'go on' });
        await dev.waitJson('tts', 'stop', 20_000);
        vendor.healthy();
        const apology = srv.config.conversation.apologies.tts;
        const shown = captions(dev);
        assert.equal(shown.filter((c) => c === apology).length, 1, `one apology: ${JSON.stringify(shown)}`);
        assert.equal(shown.at(-1), apology, 'the apology comes last');
        assert.equal(vendor.sessions(), before + 1, 'the failed vendor was not asked for the apology');
        assert.equal(logs.find('turn failed; apologising').at(-1)?.part, 'tts');
        const from = dev.json.length;
        llm.script(fakeText('All good now.'));
        dev.listen('detect', { text: 'again' });
        await dev.waitJson('tts', 'stop', 15_000, from);
        assert.deepEqual(captions(dev, from), ['All good now.']);
        assert.equal(vendor.last().ended && vendor.cancelled(vendor.last().ended), false);
      } finally {
        vendor.healthy();
        dev.close();
      }
    });
  });
}
