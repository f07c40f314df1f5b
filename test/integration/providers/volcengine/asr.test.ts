/**
 * The Volcengine streaming recogniser against the sauc stand-in (a real WebSocket server on
 * 127.0.0.1): partials and the final, audio pushed before the connection is open, cancel, every
 * fault the brief names, the batch path, and that nothing (socket, timer) outlives a stream.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Asr, AsrStream } from '../../../../audio/asr/asr.ts';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import type { Logger } from '../../../../core/logger.ts';
import { silentLogger } from '../../../../core/logger.ts';
import { createAsr } from '../../../../providers/index.ts';
import { createLogger } from '../../../../server/logger.ts';
import { FAKE_VOLCENGINE_TEXT, startFakeVolcengine, type FakeVolcengine } from '../../../fixtures/fake-volcengine.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';
import { sleep, waitFor, within } from '../../../helpers/wait.ts';

const KEYS = { appKey: 'test-app-key', accessKey: 'test-access-key' };
const WORDS = ['打开', '客厅', '的', '灯', '然后', '播放', '音乐', '谢谢'];
/** One word per 200 ms of audio: each packet of the default size grows the hypothesis. */
const byLength = (pcm: Int16Array): string =>
  WORDS.slice(0, Math.min(WORDS.length, Math.floor(pcm.length / 3200))).join('');

function tone(ms: number, amplitude = 6000): Int16Array {
  const out = new Int16Array((ms * 16000) / 1000);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 220 * i) / 16000));
  return out;
}

/** 60 ms frames, as the uplink delivers them. */
function frames(pcm: Int16Array): Int16Array[] {
  const out: Int16Array[] = [];
  for (let at = 0; at < pcm.length; at += 960) out.push(pcm.slice(at, at + 960));
  return out;
}

function equalPcm(a: Int16Array, b: Int16Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Timers and sockets this process holds (requests in flight are not holdings). */
function holdings(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'TCPSocketWrap').length;
}

async function rejection(p: Promise<unknown>): Promise<VoiceError> {
  const err = await within(
    p.then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    ),
    10_000,
    'the stream to settle',
  );
  assert.ok(err instanceof VoiceError, String(err));
  return err;
}

let fake: FakeVolcengine;
const asrs: Asr[] = [];
async function volcengine(o: Record<string, unknown> = {}, log: Logger = silentLogger): Promise<Asr> {
  const asr = await createAsr({ provider: 'volcengine', url: fake.url, ...KEYS, ...o }, log);
  asrs.push(asr);
  return asr;
}
function open(asr: Asr, onPartial: (t: string) => void = () => {}, signal = new AbortController().signal): AsrStream {
  assert.ok(asr.openStream);
  return asr.openStream({ sampleRate: 16000, signal, onPartial, log: silentLogger });
}

before(async () => {
  fake = await startFakeVolcengine({ transcribe: byLength });
});
beforeEach(() => {
  fake.fault = 'none';
});
after(async () => {
  for (const a of asrs) await a.close();
  await fake.close();
});

describe('volcengine streaming ASR', () => {
  test('partials while the audio streams, each the whole hypothesis and only when it changes; then the final', async () => {
    const asr = await volcengine();
    const partials: string[] = [];
    const stream = open(asr, (t) => partials.push(t));
    const audio = tone(1500);
    for (const f of frames(audio)) {
      stream.push(f);
      await sleep(2);
    }
    await waitFor(() => partials.length >= 5, { what: 'partials while streaming' });
    const final = await within(stream.finish(), 5000, 'the final');
    assert.equal(final, byLength(audio));
    assert.deepEqual(partials, [1, 2, 3, 4, 5, 6, 7].map((n) => WORDS.slice(0, n).join('')).slice(0, partials.length));

    const s = fake.sessions.at(-1);
    assert.ok(s);
    assert.equal(s.path, '/api/v3/sauc/bigmodel_async');
    assert.equal(s.headers.appKey, KEYS.appKey);
    assert.equal(s.headers.accessKey, KEYS.accessKey);
    assert.equal(s.headers.resourceId, 'volc.bigasr.sauc.duration');
    assert.match(s.headers.connectId ?? '', /^[0-9a-f-]{36}$/);
    assert.deepEqual(s.request, {
      user: { uid: 'xiaozhi-ts-server' },
      audio: { format: 'pcm', codec: 'raw', rate: 16000, bits: 16, channel: 1 },
      request: { model_name: 'bigmodel', enable_itn: true, enable_punc: true, result_type: 'full' },
    });
    assert.ok(equalPcm(s.audio, audio), 'the stand-in received the audio exactly');
    // 200 ms packets (6400 bytes) and the rest in the last packet, which ends the input.
    const audioFrames = s.frames.filter((f) => f.type === 0b0010);
    assert.deepEqual(
      audioFrames.map((f) => f.bytes),
      [6400, 6400, 6400, 6400, 6400, 6400, 6400, 3200],
    );
    assert.deepEqual(
      audioFrames.map((f) => f.flags),
      [0, 0, 0, 0, 0, 0, 0, 0b0010],
    );
    assert.equal(s.end, 'last-packet');
    assert.deepEqual(s.errors, []);
  });

  test('on the bigmodel endpoint (an answer per packet) a repeated hypothesis is not a new partial', async () => {
    const slow = await startFakeVolcengine({ transcribe: (pcm) => `第${Math.floor(pcm.length / 8000)}段` });
    try {
      const asr = await volcengine({ url: slow.urlFor('bigmodel'), packetMs: 100 });
      const partials: string[] = [];
      const stream = open(asr, (t) => partials.push(t));
      for (const f of frames(tone(1200))) stream.push(f);
      await waitFor(() => (slow.sessions[0]?.responses.length ?? 0) >= 12, { what: 'the answers to 12 packets' });
      assert.equal(await within(stream.finish(), 5000, 'the final'), '第2段');
      assert.deepEqual(partials, ['第0段', '第1段', '第2段']);
    } finally {
      await slow.close();
    }
  });

  test('on bigmodel_nostream there are no partials, only the final', async () => {
    const asr = await volcengine({ url: fake.urlFor('bigmodel_nostream') });
    const partials: string[] = [];
    const stream = open(asr, (t) => partials.push(t));
    for (const f of frames(tone(1000))) stream.push(f);
    assert.equal(await within(stream.finish(), 5000, 'the final'), byLength(tone(1000)));
    assert.deepEqual(partials, []);
  });

  test('audio pushed before the connection is open is kept and sent in order once it is', async () => {
    const asr = await volcengine();
    const stream = open(asr);
    const audio = tone(2000);
    // All of it before the event loop turns: the socket cannot have opened yet.
    const sessions = fake.sessions.length;
    for (const f of frames(audio)) stream.push(f);
    assert.equal(fake.sessions.length, sessions, 'not connected yet');
    assert.equal(await within(stream.finish(), 5000, 'the final'), byLength(audio));
    assert.ok(equalPcm(fake.sessions.at(-1)?.audio ?? new Int16Array(), audio));
  });

  test('past 60 s of audio before the connection opens, the rest is dropped with a warning', async () => {
    const sink = createLogSink();
    const log = createLogger({ level: 'debug', logContent: true, destination: sink.stream });
    const asr = await volcengine({}, log);
    assert.ok(asr.openStream);
    const stream = asr.openStream({
      sampleRate: 16000,
      signal: new AbortController().signal,
      onPartial: () => {},
      log,
    });
    const second = tone(1000);
    for (let i = 0; i < 61; i++) stream.push(second);
    await within(stream.finish(), 10_000, 'the final');
    assert.equal(fake.sessions.at(-1)?.audio.length, 60 * 16000);
    assert.equal(sink.find('volcengine is not connected yet and its audio buffer is full: dropping audio').length, 1);
    assert.equal(sink.find('volcengine audio dropped')[0]?.droppedMs, 1000);
  });

  test('the batch path (transcribe) streams the whole utterance; other rates are resampled to 16 kHz', async () => {
    const asr = await volcengine();
    const signal = new AbortController().signal;
    assert.equal(await asr.transcribe(tone(1000), { signal, sampleRate: 16000 }), byLength(tone(1000)));
    const at8k = new Int16Array(8000).fill(1000);
    await asr.transcribe(at8k, { signal, sampleRate: 8000 });
    const got = fake.sessions.at(-1)?.audio.length ?? 0;
    assert.ok(Math.abs(got - 16000) <= 32, `${got} samples at 16 kHz for 1 s at 8 kHz`);
  });

  test('settings reach the request: resource id, ITN, punctuation, and language on bigmodel_nostream', async () => {
    const asr = await volcengine({
      url: fake.urlFor('bigmodel_nostream'),
      resourceId: 'volc.seedasr.sauc.concurrent',
      enableItn: false,
      enablePunc: false,
      language: 'en-US',
    });
    await asr.transcribe(tone(400), { signal: new AbortController().signal, sampleRate: 16000 });
    const s = fake.sessions.at(-1);
    assert.equal(s?.headers.resourceId, 'volc.seedasr.sauc.concurrent');
    const request = s?.request as { audio: { language?: string }; request: Record<string, unknown> };
    assert.equal(request.audio.language, 'en-US');
    assert.equal(request.request.enable_itn, false);
    assert.equal(request.request.enable_punc, false);
  });

  test('cancel mid-stream: the socket closes at once, finish rejects Aborted, no partial after', async () => {
    const asr = await volcengine();
    const ac = new AbortController();
    const partials: string[] = [];
    const stream = open(asr, (t) => partials.push(t), ac.signal);
    const audio = frames(tone(3000));
    for (const f of audio.slice(0, 10)) stream.push(f);
    await waitFor(() => partials.length > 0, { what: 'a first partial' });
    const session = fake.sessions.at(-1);
    ac.abort();
    const seen = partials.length;
    for (const f of audio.slice(10)) stream.push(f);
    const err = await rejection(stream.finish());
    assert.equal(err.code, ErrorCode.Aborted);
    await waitFor(() => session?.closed, { what: 'the stand-in to see the socket closed' });
    await sleep(100);
    assert.equal(partials.length, seen, 'no partial after the abort');
    assert.equal(session?.end, 'closed', 'no last packet after the abort');
  });

  test('a signal aborted before the stream opens: no connection, finish rejects Aborted', async () => {
    const asr = await volcengine();
    const ac = new AbortController();
    ac.abort();
    const before = fake.sessions.length;
    const stream = open(asr, () => {}, ac.signal);
    stream.push(tone(100));
    assert.equal((await rejection(stream.finish())).code, ErrorCode.Aborted);
    await sleep(50);
    assert.equal(fake.sessions.length, before);
  });

  test('closing the recogniser cancels its open streams', async () => {
    const asr = await volcengine();
    const sessions = fake.sessions.length;
    const stream = open(asr);
    stream.push(tone(400));
    await waitFor(() => fake.sessions[sessions]?.request, { what: 'the request' });
    await asr.close();
    assert.equal((await rejection(stream.finish())).code, ErrorCode.Aborted);
  });

  test('finish is idempotent and push after it is ignored', async () => {
    const asr = await volcengine();
    const stream = open(asr);
    stream.push(tone(600));
    const a = stream.finish();
    stream.push(tone(600));
    assert.equal(stream.finish(), a);
    assert.equal(await a, byLength(tone(600)));
    assert.equal(fake.sessions.at(-1)?.audio.length, 9600);
  });

  test('nothing outlives a stream: no timer, no socket (either side)', async () => {
    const asr = await volcengine();
    await sleep(50);
    const held = holdings();
    const outcomes = [];
    for (const fault of ['none', 'error', 'drop'] as const) {
      fake.fault = fault;
      const stream = open(asr);
      for (const f of frames(tone(800))) stream.push(f);
      outcomes.push(
        await stream.finish().then(
          (t) => t,
          (e: VoiceError) => e.code,
        ),
      );
    }
    assert.deepEqual(outcomes, [byLength(tone(800)), ErrorCode.ProviderRejected, ErrorCode.ProviderFailed]);
    await waitFor(() => fake.openSockets() === 0, { what: 'every connection closed' });
    await waitFor(() => holdings() <= held, { what: `timers and sockets back to ${held}` });
  });
});

describe('volcengine streaming ASR faults', () => {
  test('nothing listening: provider_unavailable', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const asr = await volcengine({ url: `ws://127.0.0.1:${port}/api/v3/sauc/bigmodel_async` });
    const stream = open(asr);
    stream.push(tone(200));
    const err = await rejection(stream.finish());
    assert.equal(err.code, ErrorCode.ProviderUnavailable);
    assert.match(err.message, /ECONNREFUSED/);
  });

  test('a wrong key (401) or a refused resource (403): provider_unavailable naming the settings, without the key', async () => {
    const wrong = await volcengine({ accessKey: 'wrong-access-key-123' });
    const s1 = open(wrong);
    const e1 = await rejection(s1.finish());
    assert.equal(e1.code, ErrorCode.ProviderUnavailable);
    assert.match(
      e1.message,
      /HTTP 401 \(check asr\.appKey, asr\.accessKey and asr\.resourceId\): \{"error":"invalid auth token"\}/,
    );
    assert.ok(!e1.message.includes('wrong-access-key-123'));

    fake.fault = 'refuse';
    const s2 = open(await volcengine());
    const e2 = await rejection(s2.finish());
    assert.equal(e2.code, ErrorCode.ProviderUnavailable);
    assert.match(e2.message, /HTTP 403/);

    const s3 = open(await volcengine({ url: fake.url.replace('bigmodel_async', 'nothing') }));
    assert.match((await rejection(s3.finish())).message, /HTTP 404 \(check asr\.url\)/);
  });

  test("the vendor's error frame: provider_rejected for a 45xxxxxx code, provider_failed for a 55xxxxxx one", async () => {
    for (const [code, expected] of [
      [45000151, ErrorCode.ProviderRejected],
      [55000031, ErrorCode.ProviderFailed],
    ] as const) {
      const coded = await startFakeVolcengine({ errorCode: code });
      try {
        coded.fault = 'error';
        const stream = open(await volcengine({ url: coded.url }));
        for (const f of frames(tone(600))) stream.push(f);
        const err = await rejection(stream.finish());
        assert.equal(err.code, expected);
        assert.equal(err.message, `volcengine error ${code}: fault injected by the test`);
      } finally {
        await coded.close();
      }
    }
  });

  test('a stalled final: timeout after finalTimeoutMs, and the socket is closed', async () => {
    fake.fault = 'stall';
    const sessions = fake.sessions.length;
    const stream = open(await volcengine({ finalTimeoutMs: 300 }));
    for (const f of frames(tone(600))) stream.push(f);
    await waitFor(() => fake.sessions[sessions]?.request, { what: 'the request' });
    const err = await rejection(stream.finish());
    assert.equal(err.code, ErrorCode.Timeout);
    assert.match(err.message, /no final transcript within 300 ms/);
    await waitFor(() => fake.sessions.at(-1)?.closed, { what: 'the socket closed' });
  });

  test('no answer to the handshake or to the request: timeout after connectTimeoutMs', async () => {
    for (const fault of ['stall-handshake', 'no-init'] as const) {
      fake.fault = fault;
      const stream = open(await volcengine({ connectTimeoutMs: 300 }));
      stream.push(tone(200));
      const err = await rejection(stream.finish());
      assert.equal(err.code, ErrorCode.Timeout, fault);
      assert.match(err.message, /no answer to the recognition request within 300 ms/);
    }
    await waitFor(() => fake.openSockets() === 0, { what: 'the stalled connections closed' });
  });

  test('a connection dropped mid-stream: provider_failed', async () => {
    fake.fault = 'drop';
    const partials: string[] = [];
    const stream = open(await volcengine(), (t) => partials.push(t));
    for (const f of frames(tone(1000))) stream.push(f);
    const err = await rejection(stream.finish());
    assert.equal(err.code, ErrorCode.ProviderFailed);
    assert.match(err.message, /closed the connection \(1006\) before the final/);
  });

  test('malformed and hostile frames: provider_failed, each with its reason', async () => {
    const cases = [
      ['garbage', /malformed frame: unknown protocol version/],
      ['oversize', /a frame over 262144 bytes/],
      ['gzip-bomb', /malformed frame: gzip payload inflates past 262144 bytes/],
      ['long-text', /a transcript of 10000 characters \(more than 4000\)/],
      ['flood', /more than 4000 frames on one connection/],
      ['text-frame', /a text frame instead of a binary one: \{"error":"text instead of binary"\}/],
    ] as const;
    for (const [fault, message] of cases) {
      fake.fault = fault;
      const partials: string[] = [];
      const stream = open(await volcengine(), (t) => partials.push(t));
      for (const f of frames(tone(400))) stream.push(f);
      const err = await rejection(stream.finish());
      assert.equal(err.code, ErrorCode.ProviderFailed, fault);
      assert.match(err.message, message, fault);
      if (fault === 'long-text') assert.deepEqual(partials, [], 'an oversize partial is not passed on');
    }
    await waitFor(() => fake.openSockets() === 0, { what: 'every connection closed' });
  });

  test('partials and the final are logged at debug under pii (dropped when logContent is off); failures at warn', async () => {
    const sink = createLogSink();
    const log = createLogger({ level: 'debug', logContent: true, destination: sink.stream });
    const asr = await volcengine({}, log);
    await asr.transcribe(tone(600), { signal: new AbortController().signal, sampleRate: 16000 });
    assert.deepEqual(
      sink.find('volcengine final').map((l) => l.pii),
      [{ text: byLength(tone(600)) }],
    );
    fake.fault = 'error';
    await asr.transcribe(tone(600), { signal: new AbortController().signal, sampleRate: 16000 }).catch(() => {});
    const failed = sink.find('volcengine stream failed');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.level, 40);
    assert.equal(failed[0]?.code, ErrorCode.ProviderRejected);
  });

  test('the default stand-in sentence comes back through the batch path', async () => {
    const plain = await startFakeVolcengine();
    try {
      const asr = await volcengine({ url: plain.url });
      assert.equal(
        await asr.transcribe(tone(300), { signal: new AbortController().signal, sampleRate: 16000 }),
        FAKE_VOLCENGINE_TEXT,
      );
    } finally {
      await plain.close();
    }
  });
});
