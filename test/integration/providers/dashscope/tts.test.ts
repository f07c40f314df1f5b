/**
 * CosyVoice over DashScope's WebSocket protocol against its stand-in (a real WebSocket server on
 * 127.0.0.1): text pushed in fragments, sentence marks before their audio, text kept until the
 * task starts, connections reused one task at a time, cancel, every fault the brief names, the
 * whole-text path, the text bound, and that nothing (socket, timer) outlives an answer.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { rms } from '../../../../audio/pcm/pcm.ts';
import { canStreamText, type TextStreamingTts, type TtsStreamEvent } from '../../../../audio/tts/tts.ts';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import { silentLogger, type Logger } from '../../../../core/logger.ts';
import { createTts } from '../../../../providers/index.ts';
import { createLogger } from '../../../../server/logger.ts';
import { startFakeCosyVoiceTts, type FakeCosyVoice } from '../../../fixtures/fake-cosyvoice-tts.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';
import { sleep, waitFor, within } from '../../../helpers/wait.ts';

/** The stand-in's tone: 120 ms per Han character, 50 ms per other character. */
function toneBytes(text: string, rate: number): number {
  let ms = 0;
  for (const ch of text) ms += /\p{Script=Han}/u.test(ch) ? 120 : 50;
  return Math.round((ms * rate) / 1000) * 2;
}

/** Timers and sockets this process holds. */
function holdings(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'TCPSocketWrap').length;
}

interface Run {
  events: TtsStreamEvent[];
  error?: VoiceError;
}

async function drain(
  events: AsyncIterable<TtsStreamEvent>,
  onEvent: (e: TtsStreamEvent) => void = () => {},
): Promise<Run> {
  const out: Run = { events: [] };
  const reading = (async () => {
    try {
      for await (const e of events) {
        out.events.push(e);
        onEvent(e);
      }
    } catch (err) {
      assert.ok(err instanceof VoiceError, String(err));
      out.error = err;
    }
  })();
  await within(reading, 15_000, 'the answer to end');
  return out;
}

/** Sentence marks and audio per sentence, in the order they came. */
function bySentence(events: TtsStreamEvent[]): Array<{ text: string; bytes: number; frames: number }> {
  const out: Array<{ text: string; bytes: number; frames: number }> = [];
  for (const e of events) {
    if (e.type === 'sentence') out.push({ text: e.text, bytes: 0, frames: 0 });
    else {
      const last = out.at(-1);
      assert.ok(last, 'audio before any sentence mark');
      last.bytes += e.data.length;
      last.frames += 1;
    }
  }
  return out;
}

let fake: FakeCosyVoice;
const made: TextStreamingTts[] = [];
async function cosyvoice(
  o: Record<string, unknown> = {},
  log: Logger = silentLogger,
  on = fake,
): Promise<TextStreamingTts> {
  const tts = await createTts({ provider: 'cosyvoice', url: on.url, apiKey: on.apiKey, ...o }, log);
  assert.ok(canStreamText(tts), 'cosyvoice takes text in pieces');
  made.push(tts);
  return tts;
}
function open(tts: TextStreamingTts, signal = new AbortController().signal) {
  return tts.openTextStream({ signal, log: silentLogger });
}

before(async () => {
  fake = await startFakeCosyVoiceTts({ speech: 'tone' });
});
beforeEach(() => {
  fake.fault = 'none';
});
after(async () => {
  for (const t of made) await t.close();
  await fake.close();
});

describe('cosyvoice streaming TTS', () => {
  test('fragments in: sentence marks from the service, each before its audio, PCM at the asked rate, in frames as made', async () => {
    const tts = await cosyvoice({ voice: 'longhua_v2', rate: 1.2, volume: 60 });
    assert.deepEqual(tts.outputFormat, { container: 'pcm', sampleRate: 24000 });
    const stream = open(tts);
    const reading = drain(stream.events);
    for (const piece of ['你好', '，今天', '天气不错。明天', '会下雨吗？', '谢谢']) {
      stream.push(piece);
      await sleep(5);
    }
    stream.finish();
    const run = await reading;
    assert.equal(run.error, undefined);
    const sentences = bySentence(run.events);
    assert.deepEqual(
      sentences.map((s) => s.text),
      ['你好，今天天气不错。', '明天会下雨吗？', '谢谢'],
    );
    for (const s of sentences) {
      assert.equal(s.bytes, toneBytes(s.text, 24000), `the audio of ${s.text}`);
      // 40 ms frames: streamed as the service sends them, not gathered per sentence.
      assert.equal(s.frames, Math.ceil(s.bytes / 1920));
    }
    const s = fake.sessions.at(-1);
    assert.ok(s);
    assert.equal(s.headers.authorization, `Bearer ${fake.apiKey}`);
    assert.deepEqual(s.run, {
      task_group: 'audio',
      task: 'tts',
      function: 'SpeechSynthesizer',
      model: 'cosyvoice-v2',
      parameters: {
        text_type: 'PlainText',
        voice: 'longhua_v2',
        format: 'pcm',
        sample_rate: 24000,
        rate: 1.2,
        volume: 60,
      },
      input: {},
    });
    assert.match(s.taskId, /^[0-9a-f]{32}$/);
    assert.equal(s.texts.join(''), '你好，今天天气不错。明天会下雨吗？谢谢');
    assert.equal(s.end, 'finish');
    assert.deepEqual(s.errors, []);
  });

  test('another rate is asked for as configured, and its audio has that rate', async () => {
    const tts = await cosyvoice({ sampleRate: 16000, keepAliveMs: 0 });
    assert.deepEqual(tts.outputFormat, { container: 'pcm', sampleRate: 16000 });
    const stream = open(tts);
    stream.push('Hello there.');
    stream.finish();
    const run = await drain(stream.events);
    assert.equal(run.error, undefined);
    assert.deepEqual(
      bySentence(run.events).map((x) => [x.text, x.bytes]),
      [['Hello there.', toneBytes('Hello there.', 16000)]],
    );
    assert.equal((fake.sessions.at(-1)?.run.parameters as Record<string, unknown>).sample_rate, 16000);
  });

  test('text pushed before task-started is kept and sent once the task has started, never early', async () => {
    const slow = await startFakeCosyVoiceTts({ speech: 'tone', startDelayMs: 200 });
    try {
      const tts = await cosyvoice({}, silentLogger, slow);
      const stream = open(tts);
      stream.push('第一句。');
      stream.push('第二句');
      stream.finish();
      const run = await drain(stream.events);
      assert.equal(run.error, undefined);
      assert.deepEqual(
        bySentence(run.events).map((x) => x.text),
        ['第一句。', '第二句'],
      );
      const s = slow.sessions[0];
      assert.ok(s);
      assert.equal(s.early, 0, 'nothing was sent before task-started');
      assert.deepEqual(s.texts, ['第一句。第二句'], 'what was kept goes out as one continue-task');
      assert.equal(s.end, 'finish');
    } finally {
      await slow.close();
    }
  });

  test('answers one after another reuse one connection; two at once get two; a parked one closes after keepAliveMs', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone' });
    try {
      const tts = await cosyvoice({ keepAliveMs: 400 }, silentLogger, own);
      for (const text of ['一。', '二。', '三。']) {
        const stream = open(tts);
        stream.push(text);
        stream.finish();
        const run = await drain(stream.events);
        assert.equal(run.error, undefined);
      }
      assert.equal(own.connections, 1);
      assert.deepEqual(
        own.sessions.map((s) => [s.connection, s.end]),
        [
          [0, 'finish'],
          [0, 'finish'],
          [0, 'finish'],
        ],
      );
      assert.equal(new Set(own.sessions.map((s) => s.taskId)).size, 3, 'a new task id per answer');

      const a = open(tts);
      const b = open(tts);
      a.push('甲。');
      b.push('乙。');
      a.finish();
      b.finish();
      const [ra, rb] = await Promise.all([drain(a.events), drain(b.events)]);
      assert.equal(ra.error, undefined);
      assert.equal(rb.error, undefined);
      assert.equal(own.connections, 2, 'the second answer did not share the busy connection');
      assert.equal((tts as unknown as { parkedConnections: number }).parkedConnections, 2);
      await waitFor(() => own.openSockets() === 0, { what: 'the parked connections to close after keepAliveMs' });
      assert.equal((tts as unknown as { parkedConnections: number }).parkedConnections, 0);
    } finally {
      await own.close();
    }
  });

  test('keepAliveMs 0: a connection per answer, closed at its end', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone' });
    try {
      const tts = await cosyvoice({ keepAliveMs: 0 }, silentLogger, own);
      for (const text of ['一。', '二。']) {
        const stream = open(tts);
        stream.push(text);
        stream.finish();
        assert.equal((await drain(stream.events)).error, undefined);
      }
      assert.equal(own.connections, 2);
      await waitFor(() => own.openSockets() === 0, { what: 'each connection to close at its answer’s end' });
    } finally {
      await own.close();
    }
  });

  test('abort mid-answer: the service is told (cancel), nothing more is yielded, Aborted; the connection is reused once the service confirms', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone', chunkIntervalMs: 15 });
    try {
      const tts = await cosyvoice({}, silentLogger, own);
      const ac = new AbortController();
      const stream = open(tts, ac.signal);
      stream.push('这是一段很长的回答，它会说上好几秒钟才结束。');
      stream.finish();
      let afterAbort = 0;
      const run = await drain(stream.events, (e) => {
        if (ac.signal.aborted) afterAbort += 1;
        else if (e.type === 'audio') ac.abort();
      });
      assert.equal(run.error?.code, ErrorCode.Aborted);
      assert.equal(afterAbort, 0, 'nothing after the abort');
      await waitFor(() => own.sessions[0]?.end === 'cancel', { what: 'the stand-in to get the cancel' });
      const sent = own.sessions[0]?.audioBytes ?? 0;
      assert.ok(
        sent < toneBytes('这是一段很长的回答，它会说上好几秒钟才结束。', 24000),
        'the rest was not synthesised',
      );

      await waitFor(() => (tts as unknown as { parkedConnections: number }).parkedConnections === 1, {
        what: 'the connection to be parked after the task-finished of the cancel',
      });
      const next = open(tts);
      next.push('下一句。');
      next.finish();
      const again = await drain(next.events);
      assert.equal(again.error, undefined);
      assert.equal(own.connections, 1);
    } finally {
      await own.close();
    }
  });

  test('a consumer that stops reading cancels the task like an abort', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone', chunkIntervalMs: 15 });
    try {
      const tts = await cosyvoice({}, silentLogger, own);
      const stream = open(tts);
      stream.push('这是一段很长的回答，它会说上好几秒钟。');
      stream.finish();
      for await (const e of stream.events) if (e.type === 'audio') break;
      await waitFor(() => own.sessions[0]?.end === 'cancel', { what: 'the cancel' });
    } finally {
      await own.close();
    }
  });

  test('an already aborted signal: Aborted at once, no connection', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone' });
    try {
      const tts = await cosyvoice({}, silentLogger, own);
      const ac = new AbortController();
      ac.abort();
      const stream = open(tts, ac.signal);
      stream.push('不会说的。');
      stream.finish();
      assert.equal((await drain(stream.events)).error?.code, ErrorCode.Aborted);
      await sleep(50);
      assert.equal(own.connections, 0);
    } finally {
      await own.close();
    }
  });

  test("the stand-in's default voice is espeak-ng's speech, Chinese and English", async () => {
    const speaking = await startFakeCosyVoiceTts();
    try {
      const tts = await cosyvoice({ sampleRate: 16000 }, silentLogger, speaking);
      const stream = open(tts);
      stream.push('你好，我是小智。Nice to meet you.');
      stream.finish();
      const run = await drain(stream.events);
      assert.equal(run.error, undefined);
      const sentences = bySentence(run.events);
      assert.deepEqual(
        sentences.map((x) => x.text),
        ['你好，我是小智。', 'Nice to meet you.'],
      );
      const all = Buffer.concat(run.events.flatMap((e) => (e.type === 'audio' ? [e.data] : [])));
      const pcm = new Int16Array(all.buffer, all.byteOffset, all.length / 2);
      // Half a second or more per sentence, at a voice's level: speech, not silence.
      for (const x of sentences) assert.ok(x.bytes > 16000, `${x.text}: ${x.bytes} bytes`);
      assert.ok(rms(pcm) > 500, `level ${rms(pcm)}`);
    } finally {
      await speaking.close();
    }
  });

  test('finish without any text: events ends at once and no task is run', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone' });
    try {
      const tts = await cosyvoice({}, silentLogger, own);
      const stream = open(tts);
      stream.push('');
      stream.finish();
      const run = await drain(stream.events);
      assert.equal(run.error, undefined);
      assert.deepEqual(run.events, []);
      await sleep(50);
      assert.equal(own.sessions.length, 0);
    } finally {
      await own.close();
    }
  });

  test('the whole-text path (synthesize) is one task: its audio, without the marks', async () => {
    const tts = await cosyvoice();
    const chunks: Buffer[] = [];
    for await (const c of tts.synthesize('你好。再见。', { signal: new AbortController().signal })) chunks.push(c);
    const bytes = chunks.reduce((n, c) => n + c.length, 0);
    assert.equal(bytes, toneBytes('你好。', 24000) + toneBytes('再见。', 24000));
    assert.deepEqual(fake.sessions.at(-1)?.texts, ['你好。再见。']);
  });

  test('maxChars: text past it is not sent, with one warning', async () => {
    const sink = createLogSink();
    const log = createLogger({ level: 'warn', logContent: false, destination: sink.stream });
    const tts = await cosyvoice({ maxChars: 12 });
    const stream = tts.openTextStream({ signal: new AbortController().signal, log });
    stream.push('一二三四五六七八');
    stream.push('九十一二三四五六');
    stream.push('七八九十。');
    stream.finish();
    const run = await drain(stream.events);
    assert.equal(run.error, undefined);
    assert.equal(fake.sessions.at(-1)?.texts.join(''), '一二三四五六七八九十一二');
    assert.equal(sink.lines.filter((l) => String(l.msg).includes('tts.maxChars')).length, 1);
  });
});

describe('cosyvoice failures: events ends with the VoiceError after the audio that came', () => {
  async function failing(
    o: Record<string, unknown>,
    setFault?: FakeCosyVoice['fault'],
    on = fake,
  ): Promise<{ run: Run; tts: TextStreamingTts }> {
    if (setFault) on.fault = setFault;
    const tts = await cosyvoice(o, silentLogger, on);
    const stream = open(tts);
    stream.push('第一句话。第二句话。');
    stream.finish();
    const run = await drain(stream.events);
    on.fault = 'none';
    assert.ok(run.error, 'the answer failed');
    return { run, tts };
  }
  const parked = (tts: TextStreamingTts): number => (tts as unknown as { parkedConnections: number }).parkedConnections;

  test('a refused handshake (403): provider_unavailable with the status', async () => {
    const { run } = await failing({}, 'refuse');
    assert.equal(run.error?.code, ErrorCode.ProviderUnavailable);
    assert.match(run.error?.message ?? '', /HTTP 403/);
    assert.deepEqual(run.events, []);
  });

  test('a wrong key (401 at the handshake): provider_unavailable, and a log line naming tts.apiKey', async () => {
    const sink = createLogSink();
    const log = createLogger({ level: 'warn', logContent: false, destination: sink.stream });
    const tts = await cosyvoice({ apiKey: 'sk-wrong-key-0123456789' });
    const stream = tts.openTextStream({ signal: new AbortController().signal, log });
    stream.push('你好。');
    stream.finish();
    const run = await drain(stream.events);
    assert.equal(run.error?.code, ErrorCode.ProviderUnavailable);
    assert.match(run.error?.message ?? '', /HTTP 401 \(check tts\.apiKey/);
    const line = sink.find('cosyvoice task failed')[0];
    assert.ok(line, sink.text());
    assert.match(String(line.err), /tts\.apiKey/);
  });

  test('nothing listening: provider_unavailable', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer();
      srv.listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const { run } = await failing({ url: `ws://127.0.0.1:${port}/api-ws/v1/inference` });
    assert.equal(run.error?.code, ErrorCode.ProviderUnavailable);
  });

  test('an unknown voice, and a voice of another model version: provider_rejected naming the settings', async () => {
    for (const [voice, vendor] of [
      ['no-such-voice', /voice not found/],
      ['longxiaochun', /418/],
    ] as const) {
      const { run, tts } = await failing({ voice });
      assert.equal(run.error?.code, ErrorCode.ProviderRejected, voice);
      assert.match(run.error?.message ?? '', vendor);
      assert.match(run.error?.message ?? '', /check tts\.model, tts\.voice/);
      assert.equal(parked(tts), 0, 'no reuse after task-failed');
    }
  });

  test('a task-failed mid-answer: the audio that came, then provider_failed; the connection is not reused', async () => {
    const { run, tts } = await failing({}, 'error');
    assert.equal(run.error?.code, ErrorCode.ProviderFailed);
    assert.match(run.error?.message ?? '', /InternalError: fault injected/);
    assert.deepEqual(
      run.events.map((e) => e.type),
      ['sentence', 'audio'],
    );
    assert.equal(parked(tts), 0);
  });

  test('a stall past timeoutMs once audio is owed: timeout', async () => {
    const { run } = await failing({ timeoutMs: 300 }, 'stall');
    assert.equal(run.error?.code, ErrorCode.Timeout);
    assert.deepEqual(
      run.events.map((e) => e.type),
      ['sentence', 'audio'],
    );
  });

  test('no task-started within connectTimeoutMs: timeout', async () => {
    const { run } = await failing({ connectTimeoutMs: 300 }, 'no-start');
    assert.equal(run.error?.code, ErrorCode.Timeout);
    assert.match(run.error?.message ?? '', /did not start within 300 ms/);
  });

  test('a dropped socket, a close frame, garbage, an event off the protocol, an oversize frame: provider_failed', async () => {
    const cases: Array<[FakeCosyVoice['fault'], RegExp]> = [
      ['drop', /closed the connection/],
      ['close', /closed the connection \(1011 fault injected/],
      ['garbage', /not JSON: this is no JSON event/],
      ['bad-event', /does not match the protocol/],
      ['oversize', /a frame over 524288 bytes/],
    ];
    for (const [f, message] of cases) {
      const { run, tts } = await failing({}, f);
      assert.equal(run.error?.code, ErrorCode.ProviderFailed, f);
      assert.match(run.error?.message ?? '', message, f);
      assert.equal(run.events[0]?.type, 'sentence', f);
      assert.equal(parked(tts), 0, f);
    }
  });

  test("the service's idle rule (no command within a task): provider_rejected with its message", async () => {
    const strict = await startFakeCosyVoiceTts({ speech: 'tone', idleTimeoutMs: 200 });
    try {
      const tts = await cosyvoice({}, silentLogger, strict);
      const stream = open(tts);
      stream.push('没有说完的');
      const run = await drain(stream.events);
      assert.equal(run.error?.code, ErrorCode.ProviderRejected);
      assert.match(run.error?.message ?? '', /request timeout after 0\.2 seconds/);
    } finally {
      await strict.close();
    }
  });

  test('nothing outlives the answers: no timer or socket left once the provider is closed', async () => {
    const own = await startFakeCosyVoiceTts({ speech: 'tone' });
    try {
      await leaveNothing(own);
    } finally {
      await own.close();
    }
  });
});

/**
 * One answer of each ending on one provider (finished, cancelled before and after its start,
 * failed, still open when the provider closes); afterwards no timer or socket of ours is left.
 */
async function leaveNothing(own: FakeCosyVoice): Promise<void> {
  const before = holdings();
  const tts = await createTts({ provider: 'cosyvoice', url: own.url, apiKey: own.apiKey }, silentLogger);
  assert.ok(canStreamText(tts));
  const done = open(tts);
  done.push('一。');
  done.finish();
  assert.equal((await drain(done.events)).error, undefined);

  const early = new AbortController();
  const cancelledEarly = open(tts, early.signal);
  cancelledEarly.push('二。');
  early.abort();
  assert.equal((await drain(cancelledEarly.events)).error?.code, ErrorCode.Aborted);

  const late = new AbortController();
  const cancelledLate = open(tts, late.signal);
  cancelledLate.push('这一句会在说到一半的时候被打断。');
  cancelledLate.finish();
  const lateRun = await drain(cancelledLate.events, (e) => {
    if (e.type === 'audio') late.abort();
  });
  assert.equal(lateRun.error?.code, ErrorCode.Aborted);

  own.fault = 'error';
  const failed = open(tts);
  failed.push('三。');
  failed.finish();
  assert.equal((await drain(failed.events)).error?.code, ErrorCode.ProviderFailed);
  own.fault = 'none';

  const pending = open(tts);
  pending.push('四');
  await sleep(20);
  await tts.close();
  assert.equal((await drain(pending.events)).error?.code, ErrorCode.Aborted);
  await waitFor(() => own.openSockets() === 0, { what: 'every connection to close' });
  await waitFor(() => holdings() <= before, { what: `timers and sockets back to ${before}` });
}

describe('cosyvoice first audio against a stand-in that answers 150 ms after a sentence is complete', () => {
  test('what the client adds: first audio after the first text and after finish, p50 of 20 answers (reported)', async (t) => {
    const timed = await startFakeCosyVoiceTts({ speech: 'tone', firstAudioMs: 150 });
    try {
      const tts = await cosyvoice({}, silentLogger, timed);
      const afterFirstText: number[] = [];
      const afterFinish: number[] = [];
      for (let i = 0; i < 21; i++) {
        const stream = open(tts);
        const t0 = performance.now();
        stream.push('你好，');
        await sleep(20);
        stream.push('今天天气不错。');
        const tFinish = performance.now();
        stream.finish();
        let first: number | undefined;
        await drain(stream.events, (e) => {
          if (e.type === 'audio') first ??= performance.now();
        });
        assert.ok(first !== undefined);
        // The first answer also opens the connection; the others reuse it, as a conversation does.
        if (i === 0) continue;
        afterFirstText.push(first - t0);
        afterFinish.push(first - tFinish);
      }
      const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
      // The stand-in's own 150 ms is a floor (not a bound on our speed): below it, the delay was skipped.
      assert.ok(p50(afterFinish) >= 145, `p50 after finish ${p50(afterFinish)} ms`);
      t.diagnostic(
        `first audio p50 over 20 answers: ${p50(afterFirstText).toFixed(1)} ms after the first text, ${p50(afterFinish).toFixed(1)} ms after finish (stand-in: 150 ms)`,
      );
    } finally {
      await timed.close();
    }
  });
});
