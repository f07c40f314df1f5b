/**
 * The Volcengine bidirectional synthesiser against its stand-in (a real WebSocket server on
 * 127.0.0.1): text pushed in fragments gives sentence marks then PCM at the asked rate, text
 * pushed before the session started, several answers on one kept connection, cancel mid-answer,
 * every fault the brief names, the whole-text `synthesize`, `maxChars`, and that nothing (socket,
 * timer) outlives an answer or the provider.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { canStreamText, type TtsStreamEvent, type TextStreamingTts, type Tts } from '../../../../audio/tts/tts.ts';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import { silentLogger, type Logger } from '../../../../core/logger.ts';
import { createTts } from '../../../../providers/index.ts';
import { createLogger } from '../../../../server/logger.ts';
import {
  startFakeVolcengineTts,
  type FakeVolcengineTts,
  type FakeVolcengineTtsOptions,
} from '../../../fixtures/fake-volcengine-tts.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';
import { sleep, waitFor, within } from '../../../helpers/wait.ts';

const KEYS = { appKey: 'test-app-key', accessKey: 'test-access-key' };
const FRAGMENTS = ['今天', '天气', '很好。', '我们去', '公园吧', '！最后', '一句'];
const SENTENCES = ['今天天气很好。', '我们去公园吧！', '最后一句'];

/** Timers and sockets this process holds. */
function holdings(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'TCPSocketWrap').length;
}

let fake: FakeVolcengineTts;
const made: Tts[] = [];
async function volcengine(o: Record<string, unknown> = {}, f: FakeVolcengineTts = fake): Promise<TextStreamingTts> {
  const tts = await createTts({ provider: 'volcengine', url: f.url, ...KEYS, ...o }, silentLogger);
  made.push(tts);
  assert.ok(canStreamText(tts), 'a bidirectional provider takes text in pieces');
  return tts;
}

/** Every event of one answer: the fragments pushed, then finish; `{error}` when `events` threw. */
async function speak(
  tts: TextStreamingTts,
  fragments: string[],
  log: Logger = silentLogger,
): Promise<{ events: TtsStreamEvent[]; error?: VoiceError }> {
  const stream = tts.openTextStream({ signal: new AbortController().signal, log });
  for (const f of fragments) stream.push(f);
  stream.finish();
  const events: TtsStreamEvent[] = [];
  try {
    await within(
      (async () => {
        for await (const e of stream.events) events.push(e);
      })(),
      15_000,
      'the answer to end',
    );
    return { events };
  } catch (err) {
    assert.ok(err instanceof VoiceError, String(err));
    return { events, error: err };
  }
}

const audioBytes = (events: TtsStreamEvent[]): number =>
  events.reduce((n, e) => n + (e.type === 'audio' ? e.data.length : 0), 0);

before(async () => {
  fake = await startFakeVolcengineTts();
});
beforeEach(() => {
  fake.fault = 'none';
});
after(async () => {
  for (const t of made) await t.close();
  await fake.close();
});

describe('volcengine tts: answers', () => {
  test('fragments pushed as written come back as the vendor’s sentence marks, each before its audio, in order', async () => {
    const tts = await volcengine({
      sampleRate: 16_000,
      speechRate: 20,
      emotion: 'happy',
      additions: { silence_duration: 100 },
    });
    assert.deepEqual(tts.outputFormat, { container: 'pcm', sampleRate: 16_000 });
    const before = fake.sessions.length;
    const { events, error } = await speak(tts, FRAGMENTS);
    assert.equal(error, undefined);
    const s = fake.sessions[before];
    assert.ok(s);
    assert.equal(s.end, 'finished');
    assert.deepEqual(s.errors, []);
    assert.deepEqual(s.sentences, SENTENCES);
    // Marks, then that sentence's audio; the PCM is all the stand-in sent, at the asked rate.
    const marks = events.flatMap((e, i) => (e.type === 'sentence' ? [[e.text, i]] : [])) as Array<[string, number]>;
    assert.deepEqual(
      marks.map(([t]) => t),
      SENTENCES,
    );
    assert.equal(events[0]?.type, 'sentence');
    for (const [k, [, at]] of marks.entries()) {
      const next = marks[k + 1]?.[1] ?? events.length;
      assert.ok(
        events.slice(at + 1, next).some((e) => e.type === 'audio'),
        `audio after mark ${k}`,
      );
    }
    assert.equal(audioBytes(events), s.audioBytes);
    // The stand-in's tone is 120 ms per character at the session's rate: the first sentence's 7.
    const firstAudio = events.slice(1, marks[1]?.[1]).reduce((n, e) => n + (e.type === 'audio' ? e.data.length : 0), 0);
    assert.equal(firstAudio, Math.round((16_000 * 7 * 120) / 1000) * 2);
    // What the vendor was asked: the settings in StartSession, `additions` as a JSON string.
    const req = s.params.req_params as Record<string, unknown>;
    assert.equal(s.params.event, 100);
    assert.equal(s.params.namespace, 'BidirectionalTTS');
    assert.equal(req.speaker, 'zh_female_wanwanxiaohe_moon_bigtts');
    assert.deepEqual(req.audio_params, { format: 'pcm', sample_rate: 16_000, speech_rate: 20, emotion: 'happy' });
    assert.equal(typeof req.additions, 'string');
    assert.deepEqual(s.additions, { silence_duration: 100 });
    assert.equal(s.texts.join(''), FRAGMENTS.join(''));
    assert.equal(s.afterStartConnection, true);
    assert.equal(s.headers.appKey, KEYS.appKey);
    assert.equal(s.headers.accessKey, KEYS.accessKey);
    assert.equal(s.headers.resourceId, 'seed-tts-1.0');
    assert.match(s.headers.connectId ?? '', /^[0-9a-f-]{36}$/);
  });

  test('text pushed before the session started is kept and sent once SessionStarted comes', async () => {
    const slow = await startFakeVolcengineTts({ sessionStartMs: 150 });
    try {
      const tts = await volcengine({}, slow);
      const { events, error } = await speak(tts, FRAGMENTS);
      assert.equal(error, undefined);
      const s = slow.sessions[0];
      assert.ok(s);
      assert.equal(s.earlyTexts, 0, 'nothing sent before SessionStarted');
      assert.equal(s.texts.join(''), FRAGMENTS.join(''));
      assert.deepEqual(
        events.filter((e) => e.type === 'sentence').map((e) => e.text),
        SENTENCES,
      );
    } finally {
      await slow.close();
    }
  });

  test('answers one after another share one connection (StartConnection once); keepAliveMs 0 opens one per answer', async () => {
    const own = await startFakeVolcengineTts();
    try {
      const kept = await volcengine({}, own);
      for (let i = 0; i < 3; i++) assert.equal((await speak(kept, [`第${i}句。`])).error, undefined);
      assert.equal(own.connections, 1);
      assert.deepEqual(
        own.sessions.map((s) => [s.connection, s.afterStartConnection, s.end]),
        [
          [0, true, 'finished'],
          [0, true, 'finished'],
          [0, true, 'finished'],
        ],
      );
      assert.equal(own.openSockets(), 1, 'the kept connection');
      await kept.close();
      await waitFor(() => own.openSockets() === 0, { what: 'the kept connection to close' });

      const each = await volcengine({ keepAliveMs: 0 }, own);
      for (let i = 0; i < 2; i++) assert.equal((await speak(each, [`第${i}句。`])).error, undefined);
      assert.equal(own.connections, 3);
      await waitFor(() => own.openSockets() === 0, { what: 'each answer’s connection to close' });
    } finally {
      await own.close();
    }
  });

  test('overlapping answers get a connection each (never two sessions on one); both are kept for the next', async () => {
    const own = await startFakeVolcengineTts({ chunkIntervalMs: 5 });
    try {
      const tts = await volcengine({}, own);
      const [a, b] = await Promise.all([speak(tts, ['甲的回答。']), speak(tts, ['乙的回答。'])]);
      assert.equal(a.error, undefined);
      assert.equal(b.error, undefined);
      assert.equal(own.connections, 2);
      assert.notEqual(own.sessions[0]?.connection, own.sessions[1]?.connection);
      assert.equal((await speak(tts, ['丙。'])).error, undefined);
      assert.equal(own.connections, 2, 'the third answer took a kept one');
      assert.deepEqual(
        own.sessions.map((s) => s.errors),
        [[], [], []],
      );
    } finally {
      await own.close();
    }
  });

  test('a kept connection the vendor closed while idle: the next answer opens a new one and succeeds', async () => {
    const own = await startFakeVolcengineTts();
    try {
      own.fault = 'close-after-session';
      const tts = await volcengine({}, own);
      assert.equal((await speak(tts, ['一。'])).error, undefined);
      await waitFor(() => own.openSockets() === 0, { what: 'the vendor to close the idle connection' });
      const second = await speak(tts, ['二。']);
      assert.equal(second.error, undefined);
      assert.deepEqual(
        second.events.filter((e) => e.type === 'sentence').map((e) => e.text),
        ['二。'],
      );
      assert.equal(own.connections, 2);
    } finally {
      await own.close();
    }
  });

  test('the stand-in can speak real speech (espeak-ng), at the asked rate', async () => {
    const speaking = await startFakeVolcengineTts({ speech: 'espeak' });
    try {
      const tts = await volcengine({ sampleRate: 24_000 }, speaking);
      const { events, error } = await speak(tts, ['Hello there. ', 'How are you?']);
      assert.equal(error, undefined);
      assert.deepEqual(
        events.filter((e) => e.type === 'sentence').map((e) => e.text),
        ['Hello there.', 'How are you?'],
      );
      const pcm = Buffer.concat(events.flatMap((e) => (e.type === 'audio' ? [e.data] : [])));
      const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
      // Two short sentences: more than half a second, less than ten, and not silence.
      assert.ok(samples.length > 12_000 && samples.length < 240_000, String(samples.length));
      assert.ok(
        samples.some((v) => Math.abs(v) > 3000),
        'speech, not silence',
      );
    } finally {
      await speaking.close();
    }
  });

  test('a kept connection the vendor no longer serves (closed at StartSession): the answer is retried once on a new one', async () => {
    const own = await startFakeVolcengineTts();
    try {
      own.fault = 'refuse-reuse';
      const tts = await volcengine({}, own);
      assert.equal((await speak(tts, ['一。'])).error, undefined);
      const second = await speak(tts, ['二。']);
      assert.equal(second.error, undefined);
      assert.deepEqual(
        second.events.filter((e) => e.type === 'sentence').map((e) => e.text),
        ['二。'],
      );
      assert.equal(own.connections, 2);
      assert.deepEqual(
        own.sessions.map((s) => [s.connection, s.end]),
        [
          [0, 'finished'],
          [1, 'finished'],
        ],
      );
    } finally {
      await own.close();
    }
  });

  test('the whole-text synthesize is one session: its audio, without marks', async () => {
    const tts = await volcengine();
    const before = fake.sessions.length;
    let bytes = 0;
    for await (const chunk of tts.synthesize('你好。再见。', { signal: new AbortController().signal }))
      bytes += chunk.length;
    const s = fake.sessions[before];
    assert.deepEqual(s?.sentences, ['你好。', '再见。']);
    assert.equal(bytes, s?.audioBytes);
    assert.ok(bytes > 0);
  });

  test('a 2.0 resource (one sentence start per session) gives no marks, only audio', async () => {
    const tts = await volcengine({ resourceId: 'seed-tts-2.0', voice: 'zh_female_vv_uranus_bigtts' });
    const { events, error } = await speak(tts, FRAGMENTS);
    assert.equal(error, undefined);
    assert.deepEqual(
      events.filter((e) => e.type === 'sentence'),
      [],
    );
    assert.ok(audioBytes(events) > 0);
  });

  test('the new console’s API key alone is sent as X-Api-Key', async () => {
    const tts = await createTts({ provider: 'volcengine', url: fake.url, apiKey: 'test-api-key' }, silentLogger);
    made.push(tts);
    assert.ok(canStreamText(tts));
    const before = fake.sessions.length;
    assert.equal((await speak(tts, ['好的。'])).error, undefined);
    const h = fake.sessions[before]?.headers;
    assert.equal(h?.apiKey, 'test-api-key');
    assert.equal(h?.appKey, undefined);
    assert.equal(h?.accessKey, undefined);
  });

  test('text past maxChars is dropped with a warning; what fits is spoken', async () => {
    const sink = createLogSink();
    const tts = await volcengine({ maxChars: 5 });
    const before = fake.sessions.length;
    const log = createLogger({ level: 'debug', logContent: false, destination: sink.stream });
    assert.equal((await speak(tts, ['一二三', '四五六', '七八'], log)).error, undefined);
    assert.equal(fake.sessions[before]?.texts.join(''), '一二三四五');
    assert.ok(
      sink.lines.some((l) => /longer than tts.maxChars/.test(String(l.msg))),
      sink.text(),
    );
  });
});

describe('volcengine tts: cancel', () => {
  test('an abort mid-answer sends CancelSession, yields nothing more, throws Aborted, and keeps the connection', async () => {
    const own = await startFakeVolcengineTts({ chunkIntervalMs: 20 });
    try {
      const tts = await volcengine({}, own);
      const ac = new AbortController();
      const stream = tts.openTextStream({ signal: ac.signal, log: silentLogger });
      stream.push('这是一句很长很长很长很长很长的话。');
      stream.finish();
      const events: TtsStreamEvent[] = [];
      let thrown: unknown;
      try {
        for await (const e of stream.events) {
          events.push(e);
          if (e.type === 'audio') ac.abort();
        }
      } catch (err) {
        thrown = err;
      }
      assert.ok(thrown instanceof VoiceError && thrown.code === ErrorCode.Aborted, String(thrown));
      assert.deepEqual(
        events.map((e) => e.type),
        ['sentence', 'audio'],
      );
      await waitFor(() => own.sessions[0]?.end === 'cancelled', { what: 'the vendor to hear the cancel' });
      // The connection waited for SessionCanceled and serves the next answer.
      await sleep(200);
      assert.equal((await speak(tts, ['下一句。'])).error, undefined);
      assert.equal(own.connections, 1);
    } finally {
      await own.close();
    }
  });

  test('an abort before the session started drops the connection; an already aborted signal opens nothing', async () => {
    const own = await startFakeVolcengineTts({ sessionStartMs: 2000 });
    try {
      const tts = await volcengine({}, own);
      const ac = new AbortController();
      const stream = tts.openTextStream({ signal: ac.signal, log: silentLogger });
      stream.push('你好。');
      await waitFor(() => own.sessions.length === 1, { what: 'StartSession' });
      ac.abort();
      await assert.rejects(
        (async () => {
          for await (const _ of stream.events);
        })(),
        (e: unknown) => e instanceof VoiceError && e.code === ErrorCode.Aborted,
      );
      await waitFor(() => own.openSockets() === 0, { what: 'the connection to be dropped' });

      const gone = tts.openTextStream({ signal: AbortSignal.abort(), log: silentLogger });
      gone.push('x');
      await assert.rejects(
        (async () => {
          for await (const _ of gone.events);
        })(),
        (e: unknown) => e instanceof VoiceError && e.code === ErrorCode.Aborted,
      );
      assert.equal(own.connections, 1);
    } finally {
      await own.close();
    }
  });
});

describe('volcengine tts: faults', () => {
  const cases: Array<{
    name: string;
    fault?: FakeVolcengineTts['fault'];
    o?: Record<string, unknown>;
    fake?: FakeVolcengineTtsOptions;
    code: string;
    message: RegExp;
    audio?: boolean;
  }> = [
    {
      name: 'refused at the handshake (403)',
      fault: 'refuse',
      code: ErrorCode.ProviderUnavailable,
      message: /HTTP 403.*tts\.resourceId/,
    },
    {
      name: 'a wrong access key (401)',
      o: { accessKey: 'wrong' },
      code: ErrorCode.ProviderUnavailable,
      message: /HTTP 401.*tts\.appKey/,
    },
    {
      name: 'ConnectionFailed',
      fault: 'connection-failed',
      code: ErrorCode.ProviderUnavailable,
      message: /unauthorized/,
    },
    {
      name: 'an unknown voice',
      o: { voice: 'no_such_voice' },
      fake: { voices: ['zh_female_wanwanxiaohe_moon_bigtts'] },
      code: ErrorCode.ProviderRejected,
      message: /45000001.*no_such_voice/,
    },
    {
      name: 'a 2.0 voice on a 1.0 resource',
      o: { voice: 'zh_female_vv_uranus_bigtts' },
      code: ErrorCode.ProviderRejected,
      message: /mismatched/,
    },
    {
      name: 'SessionFailed mid-answer',
      fault: 'session-failed',
      code: ErrorCode.ProviderFailed,
      message: /55000000/,
      audio: true,
    },
    {
      name: 'an error frame mid-answer',
      fault: 'error-frame',
      code: ErrorCode.ProviderFailed,
      message: /55000001/,
      audio: true,
    },
    {
      name: 'a stall past timeoutMs',
      fault: 'stall',
      o: { timeoutMs: 300 },
      code: ErrorCode.Timeout,
      message: /300 ms/,
      audio: true,
    },
    {
      name: 'a dropped socket',
      fault: 'drop',
      code: ErrorCode.ProviderFailed,
      message: /closed the connection/,
      audio: true,
    },
    {
      name: 'a garbage frame',
      fault: 'garbage',
      code: ErrorCode.ProviderFailed,
      message: /malformed frame/,
      audio: true,
    },
    {
      name: 'an oversize frame',
      fault: 'oversize',
      code: ErrorCode.ProviderFailed,
      message: /over 1048576 bytes/,
      audio: true,
    },
    { name: 'a text frame', fault: 'text-frame', code: ErrorCode.ProviderFailed, message: /text frame/, audio: true },
    {
      name: 'no SessionStarted within connectTimeoutMs',
      fault: 'no-session-start',
      o: { connectTimeoutMs: 300 },
      code: ErrorCode.Timeout,
      message: /SessionStarted/,
    },
    {
      name: 'a handshake never answered',
      fault: 'stall-handshake',
      o: { connectTimeoutMs: 300 },
      code: ErrorCode.Timeout,
      message: /SessionStarted/,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: events throw ${c.code} after the audio that came, and nothing is left open`, async () => {
      const own = await startFakeVolcengineTts({ chunkIntervalMs: 10, ...c.fake });
      try {
        own.fault = c.fault ?? 'none';
        const tts = await volcengine(c.o ?? {}, own);
        const { events, error } = await speak(tts, ['第一句话说完了。', '第二句。']);
        assert.ok(error, 'the answer fails');
        assert.equal(error.code, c.code, error.message);
        assert.match(error.message, c.message);
        assert.equal(audioBytes(events) > 0, c.audio === true, 'the audio that came before the failure');
        own.fault = 'none';
        await tts.close();
        await waitFor(() => own.openSockets() === 0, { what: 'every connection to close' });
      } finally {
        await own.close();
      }
    });
  }
});

describe('volcengine tts: nothing outlives an answer', () => {
  test('after answers, a cancel and a failure, closing the provider leaves no socket or timer', async () => {
    const own = await startFakeVolcengineTts({ chunkIntervalMs: 5 });
    const start = holdings();
    try {
      const tts = await createTts({ provider: 'volcengine', url: own.url, ...KEYS }, silentLogger);
      assert.ok(canStreamText(tts));
      try {
        assert.equal((await speak(tts, FRAGMENTS)).error, undefined);
        const ac = new AbortController();
        const s = tts.openTextStream({ signal: ac.signal, log: silentLogger });
        s.push('一句话。');
        s.finish();
        await assert.rejects(
          (async () => {
            for await (const e of s.events) if (e.type === 'audio') ac.abort();
          })(),
          (e: unknown) => e instanceof VoiceError && e.code === ErrorCode.Aborted,
        );
        own.fault = 'drop';
        assert.ok((await speak(tts, ['坏了。'])).error);
        own.fault = 'none';
      } finally {
        await tts.close();
      }
    } finally {
      await own.close();
    }
    await waitFor(() => holdings() <= start, { what: `holdings back to ${start} (now ${holdings()})` });
  });
});
