/**
 * The `openai-realtime` streaming recogniser (the openai SDK's WebSocket client inside) against the
 * stand-in (test/fixtures/fake-openai-realtime.ts) over real sockets: TLS with a test CA made here,
 * plain ws, Azure's variant; partials, finals, audio before the connection, cancellation, every
 * fault and every bound, and nothing left open afterwards.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import type { Logger } from '../../../../core/logger.ts';
import type { AsrStream } from '../../../../audio/asr/asr.ts';
import { createAsr, AsrSchema } from '../../../../providers/index.ts';
import { OpenAiRealtimeAsr } from '../../../../providers/openai-realtime/asr.ts';
import { OpenAiRealtimeAsrSchema } from '../../../../providers/openai-realtime/options.ts';
import { MAX_TRANSCRIPT_CHARS } from '../../../../providers/openai-realtime/stream.ts';
import { createLogger } from '../../../../server/logger.ts';
import {
  startFakeOpenAiRealtime,
  type FakeRealtime,
  type FakeRealtimeOptions,
} from '../../../fixtures/fake-openai-realtime.ts';
import { tone } from '../../../fixtures/audio/make-audio.ts';
import { createLogSink, type LogSink } from '../../../helpers/log-sink.ts';
import { makeTestCa, type TestCa } from '../../../helpers/test-ca.ts';
import { sleep, waitFor, within } from '../../../helpers/wait.ts';

const KEY = 'sk-realtime-test-key';
const WORDS = ['what', 'is', 'the', 'weather', 'like', 'in', 'Berlin', 'today'];
/** One word per 150 ms of audio: partials grow as the audio does. */
const byLength = (pcm16k: Int16Array): string => WORDS.slice(0, Math.ceil(pcm16k.length / 2400)).join(' ');
/** 60 ms frames of 16 kHz audio, `ms` long. */
const frames = (ms: number): Int16Array[] => {
  const pcm = tone(ms, 16_000, 300);
  const out: Int16Array[] = [];
  for (let i = 0; i < pcm.length; i += 960) out.push(pcm.subarray(i, i + 960));
  return out;
};

let ca: TestCa;
const fakes: FakeRealtime[] = [];
before(() => {
  ca = makeTestCa();
});
after(async () => {
  for (const f of fakes) await f.close();
  ca.close();
});

async function fake(opts: Omit<FakeRealtimeOptions, 'tls'> & { plain?: boolean } = {}): Promise<FakeRealtime> {
  const f = await startFakeOpenAiRealtime({
    apiKey: KEY,
    transcribe: byLength,
    ...opts,
    ...(opts.plain ? {} : { tls: ca }),
  });
  fakes.push(f);
  return f;
}

function logged(): { log: Logger; sink: LogSink } {
  const sink = createLogSink();
  return { log: createLogger({ level: 'debug', logContent: true, destination: sink.stream }), sink };
}

function asrFor(f: FakeRealtime | string, extra: Record<string, unknown> = {}, log?: Logger): OpenAiRealtimeAsr {
  const baseURL = typeof f === 'string' ? f : f.url;
  const options = OpenAiRealtimeAsrSchema.parse({
    provider: 'openai-realtime',
    baseURL,
    apiKey: KEY,
    ...(baseURL.startsWith('https') ? { ca: ca.caFile } : {}),
    finalTimeoutMs: 2000,
    ...extra,
  });
  return new OpenAiRealtimeAsr(options, log ?? logged().log);
}

interface Opened {
  stream: AsrStream;
  partials: string[];
  ac: AbortController;
  sink: LogSink;
}

function open(asr: OpenAiRealtimeAsr, sink?: LogSink): Opened {
  const partials: string[] = [];
  const ac = new AbortController();
  const l = sink
    ? { log: createLogger({ level: 'debug', logContent: true, destination: sink.stream }), sink }
    : logged();
  const stream = asr.openStream({
    sampleRate: 16_000,
    signal: ac.signal,
    onPartial: (t) => partials.push(t),
    log: l.log,
  });
  return { stream, partials, ac, sink: l.sink };
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
  assert.ok(err instanceof VoiceError, `a VoiceError, got ${String(err)}`);
  return err;
}

const noOpenSockets = (f: FakeRealtime): Promise<boolean> =>
  waitFor(() => f.openSockets() === 0, { what: 'the stand-in to see every connection closed' });

/** Pushes frames at twice real time, so the vendor's partials arrive while audio still flows. */
async function pushPaced(stream: AsrStream, ms: number): Promise<void> {
  for (const f of frames(ms)) {
    stream.push(f);
    await sleep(30);
  }
}

describe('openai-realtime streaming ASR', { timeout: 120_000 }, () => {
  test('partials while the audio flows, then the final; the session is configured as the SDK types it', async () => {
    const f = await fake();
    const asr = asrFor(f, { model: 'gpt-realtime-whisper', language: 'en', prompt: 'weather, Berlin' });
    const o = open(asr);
    await pushPaced(o.stream, 1200);
    const partialsBeforeFinish = o.partials.length;
    const text = await within(o.stream.finish(), 5000, 'the final');
    assert.equal(text, WORDS.join(' '));
    assert.ok(partialsBeforeFinish >= 3, `partials while speaking: ${JSON.stringify(o.partials)}`);
    // Each partial is the whole hypothesis so far, and differs from the one before.
    for (let i = 1; i < o.partials.length; i++) {
      assert.ok(o.partials[i]!.startsWith(o.partials[i - 1]!), JSON.stringify(o.partials));
      assert.notEqual(o.partials[i], o.partials[i - 1]);
    }
    const s = f.sessions[0]!;
    assert.equal(s.url, '/v1/realtime?intent=transcription');
    assert.equal(s.headers.authorization, `Bearer ${KEY}`);
    assert.deepEqual(s.updates[0]!.session, {
      type: 'transcription',
      audio: {
        input: {
          format: { type: 'audio/pcm', rate: 24000 },
          transcription: { model: 'gpt-realtime-whisper', language: 'en', prompt: 'weather, Berlin' },
          turn_detection: null,
        },
      },
    });
    assert.equal(s.commits, 1);
    // 1.2 s at 24 kHz, s16: the resampled audio, whole.
    assert.ok(Math.abs(s.audio.length - 1.2 * 24_000 * 2) <= 2 * 48, `bytes ${s.audio.length}`);
    assert.ok(o.sink.find('openai-realtime partial').length >= 3);
    const final = o.sink.find('openai-realtime final');
    assert.equal(final.length, 1);
    assert.equal(final[0]!.level, 20);
    assert.deepEqual(final[0]!.pii, { text: WORDS.join(' ') });
    await noOpenSockets(f);
    assert.equal(s.closeCode, 1000, 'a close frame after the final');
  });

  test('audio pushed before the connection opens is kept and sent once open, in appends of at most a second', async () => {
    const f = await fake({ partialEveryMs: 100_000 });
    const o = open(asrFor(f));
    for (const fr of frames(2500)) o.stream.push(fr); // all of it before the socket can be open
    const text = await within(o.stream.finish(), 5000, 'the final');
    assert.equal(text, WORDS.join(' '));
    const s = f.sessions[0]!;
    assert.ok(Math.abs(s.audio.length - 2.5 * 24_000 * 2) <= 2 * 48, `bytes ${s.audio.length}`);
    assert.equal(s.appends, 3, 'the kept 2.5 s as three appends');
    assert.equal(s.updates.length, 1, 'the session.update went first');
  });

  test('past 60 s of audio kept while connecting, the rest is dropped with one warning', async () => {
    const f = await fake({ partialEveryMs: 100_000, transcribe: () => 'long' });
    const o = open(asrFor(f));
    for (const fr of frames(61_000)) o.stream.push(fr);
    assert.equal(await within(o.stream.finish(), 10_000, 'the final'), 'long');
    const bytes = f.sessions[0]!.audio.length;
    assert.ok(bytes <= 60 * 24_000 * 2 && bytes > 59.9 * 24_000 * 2, `bytes ${bytes}`);
    assert.equal(o.sink.find('openai-realtime: still connecting, audio past the bound dropped').length, 1);
  });

  test('cancel mid-stream: the socket is cut at once, finish rejects Aborted, no partial after', async () => {
    const f = await fake();
    const o = open(asrFor(f));
    await pushPaced(o.stream, 600);
    await waitFor(() => o.partials.length > 0, { what: 'a first partial' });
    o.ac.abort();
    const seen = o.partials.length;
    const err = await rejection(o.stream.finish());
    assert.equal(err.code, ErrorCode.Aborted);
    await noOpenSockets(f);
    for (const fr of frames(600)) o.stream.push(fr); // ignored
    await sleep(300);
    assert.equal(o.partials.length, seen);
    assert.equal(f.sessions[0]!.commits, 0);
    assert.equal(f.sessions[0]!.closeCode, 1006, 'cut, not closed politely');
    assert.equal(o.sink.find('openai-realtime stream failed').length, 0, 'an abort is not a failure');
  });

  test('a signal aborted before the connection opens: no connection is left', async () => {
    const f = await fake();
    const o = open(asrFor(f));
    o.stream.push(frames(60)[0]!);
    o.ac.abort();
    assert.equal((await rejection(o.stream.finish())).code, ErrorCode.Aborted);
    await sleep(200);
    assert.equal(f.openSockets(), 0);
  });

  test('finish is idempotent and push after it is ignored', async () => {
    const f = await fake();
    const o = open(asrFor(f));
    for (const fr of frames(500)) o.stream.push(fr);
    const a = o.stream.finish();
    o.stream.push(frames(500)[0]!);
    assert.equal(o.stream.finish(), a);
    assert.equal(await a, WORDS.slice(0, 4).join(' '));
    assert.ok(Math.abs(f.sessions[0]!.audio.length - 0.5 * 24_000 * 2) <= 2 * 48);
  });

  test('under 100 ms of audio: an empty transcript, no commit (the API refuses one)', async () => {
    const f = await fake();
    const o = open(asrFor(f));
    o.stream.push(frames(60)[0]!);
    assert.equal(await o.stream.finish(), '');
    await noOpenSockets(f);
    assert.equal(f.sessions[0]?.commits ?? 0, 0);
  });

  test('transcribe (the batch path) is one stream with the whole utterance', async () => {
    const f = await fake();
    const text = await asrFor(f).transcribe(tone(900, 16_000, 300), {
      signal: new AbortController().signal,
      sampleRate: 16_000,
    });
    assert.equal(text, WORDS.slice(0, 6).join(' '));
    await noOpenSockets(f);
  });

  test('a plain server (http: or ws: base URL) is reached without TLS, through the same SDK client', async () => {
    const f = await fake({ plain: true });
    for (const baseURL of [f.url, f.url.replace('http:', 'ws:')]) {
      const text = await asrFor(baseURL).transcribe(tone(300, 16_000, 300), {
        signal: new AbortController().signal,
        sampleRate: 16_000,
      });
      assert.equal(text, 'what is');
    }
    assert.equal(f.sessions.length, 2);
    assert.equal(f.sessions[1]!.url, '/v1/realtime?intent=transcription');
  });

  test('Azure: the SDK Azure variant, /openai/v1/realtime with the key in api-key', async () => {
    const f = await fake();
    const baseURL = f.url.replace('/v1', '/openai/v1');
    const text = await asrFor(baseURL, { azure: true, model: 'my-transcribe-deployment' }).transcribe(
      tone(300, 16_000, 300),
      { signal: new AbortController().signal, sampleRate: 16_000 },
    );
    assert.equal(text, 'what is');
    const s = f.sessions[0]!;
    assert.equal(s.url, '/openai/v1/realtime?intent=transcription');
    assert.equal(s.headers['api-key'], KEY);
    assert.equal(s.headers.authorization, undefined);
  });

  test('no key configured: no Authorization header is sent', async () => {
    const f = await startFakeOpenAiRealtime({ tls: ca, transcribe: byLength });
    fakes.push(f);
    const text = await asrFor(f, { apiKey: '' }).transcribe(tone(300, 16_000, 300), {
      signal: new AbortController().signal,
      sampleRate: 16_000,
    });
    assert.equal(text, 'what is');
    assert.equal(f.sessions[0]!.headers.authorization, undefined);
  });

  describe('faults', () => {
    async function failureOf(f: FakeRealtime | string, extra: Record<string, unknown> = {}, ms = 600) {
      const { log, sink } = logged();
      const o = open(asrFor(f, extra, log), sink);
      for (const fr of frames(ms)) o.stream.push(fr);
      const err = await rejection(o.stream.finish());
      assert.equal(sink.find('openai-realtime stream failed').length, 1, 'one warning');
      assert.ok(!sink.text().includes(KEY), 'the key is never logged');
      return { err, partials: o.partials };
    }

    test('connection refused: provider_unavailable', async () => {
      const f = await fake();
      const url = f.url;
      await f.close();
      const { err } = await failureOf(url);
      assert.equal(err.code, ErrorCode.ProviderUnavailable);
      assert.match(err.message, /ECONNREFUSED/);
    });

    test('the key refused at the upgrade (401): provider_unavailable naming the status', async () => {
      const f = await fake();
      const { err } = await failureOf(f, { apiKey: 'sk-wrong' });
      assert.equal(err.code, ErrorCode.ProviderUnavailable);
      assert.match(err.message, /401/);
      assert.equal(f.refused, 1);
    });

    test('a certificate the client does not trust: provider_unavailable', async () => {
      const f = await fake();
      const other = makeTestCa();
      try {
        const { err } = await failureOf(f, { ca: other.caFile });
        assert.equal(err.code, ErrorCode.ProviderUnavailable);
        assert.match(err.message, /certificate/i);
      } finally {
        other.close();
      }
    });

    test('an error event about the request (a model it does not have): provider_rejected', async () => {
      const f = await fake({ fault: 'error' });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderRejected);
      assert.match(err.message, /no-such-model/);
      await noOpenSockets(f);
    });

    test('the transcription failed event: provider_failed', async () => {
      const f = await fake({ fault: 'failed' });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /audio_unintelligible/);
    });

    test('no final (stall): timeout once finalTimeoutMs has passed, the socket cut', async () => {
      const f = await fake({ fault: 'stall' });
      const started = performance.now();
      const { err } = await failureOf(f, { finalTimeoutMs: 400 });
      assert.equal(err.code, ErrorCode.Timeout);
      assert.ok(performance.now() - started >= 400);
      await noOpenSockets(f);
    });

    test('a server that never completes the upgrade: timeout after connectTimeoutMs', async () => {
      const held: Socket[] = [];
      const silent: Server = createServer((s) => held.push(s.on('error', () => {}).resume()));
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      try {
        const port = (silent.address() as AddressInfo).port;
        const { err } = await failureOf(`http://127.0.0.1:${port}/v1`, { connectTimeoutMs: 300, finalTimeoutMs: 5000 });
        assert.equal(err.code, ErrorCode.Timeout);
        assert.match(err.message, /no connection within 300 ms/);
        await waitFor(() => held.every((s) => s.destroyed || s.readableEnded), {
          what: 'the held socket to be closed',
        });
      } finally {
        for (const s of held) s.destroy();
        await new Promise<void>((r) => silent.close(() => r()));
      }
    });

    test('the socket dropped mid-stream: provider_failed', async () => {
      const f = await fake({ fault: 'drop' });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /closed the connection/);
    });

    test('a frame that is not JSON: provider_failed', async () => {
      const f = await fake({ fault: 'garbage' });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /parse/);
      await noOpenSockets(f);
    });

    test('a frame over the size bound: provider_failed', async () => {
      const f = await fake({ fault: 'oversize', oversizeBytes: 300 * 1024 });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /Max payload size exceeded/);
      await noOpenSockets(f);
    });

    test('a flood of events: provider_failed past the bound', async () => {
      const f = await fake({ fault: 'flood', floodEvents: 6000 });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /more than 5000 events/);
      await noOpenSockets(f);
    });

    test('a hypothesis over the length bound: provider_failed', async () => {
      const f = await fake({ transcribe: () => 'x'.repeat(MAX_TRANSCRIPT_CHARS + 1) });
      const { err, partials } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /over 4000 characters/);
      assert.deepEqual(partials, []);
    });

    test('a known event of the wrong shape: provider_failed', async () => {
      const f = await fake({ fault: 'malformed' });
      const { err } = await failureOf(f);
      assert.equal(err.code, ErrorCode.ProviderFailed);
      assert.match(err.message, /malformed conversation.item.input_audio_transcription.delta event/);
      await noOpenSockets(f);
    });
  });

  test('nothing is left behind: no socket on the stand-in, no timer in this process', async () => {
    const f = await fake({ fault: 'stall' });
    const ok = await fake();
    await sleep(50);
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    // Long bounds: a timer the streams forgot to clear would still be pending at the end.
    const long = { finalTimeoutMs: 60_000, connectTimeoutMs: 60_000 };
    const asr = asrFor(ok, long);
    await asr.transcribe(tone(400, 16_000, 300), { signal: new AbortController().signal, sampleRate: 16_000 });
    await rejection(
      asrFor(f, { ...long, finalTimeoutMs: 300 }).transcribe(tone(400, 16_000, 300), {
        signal: new AbortController().signal,
        sampleRate: 16_000,
      }),
    );
    const aborted = open(asrFor(ok, long));
    aborted.stream.push(frames(300)[0]!);
    aborted.ac.abort();
    await rejection(aborted.stream.finish());
    // A stream left open when the recogniser closes is cut.
    const left = open(asr);
    for (const fr of frames(300)) left.stream.push(fr);
    await waitFor(() => ok.openSockets() === 1, { what: 'the left stream to connect' });
    await asr.close();
    assert.equal((await rejection(left.stream.finish())).code, ErrorCode.Aborted);
    await noOpenSockets(ok);
    await noOpenSockets(f);
    await waitFor(() => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length <= timersBefore, {
      what: 'the streams’ timers to be cleared',
      timeoutMs: 3000,
    });
  });

  test('the registry builds it and gives the start-up check an http(s) endpoint', async () => {
    const f = await fake();
    const asr = await createAsr(
      { provider: 'openai-realtime', baseURL: f.url, apiKey: KEY, ca: ca.caFile },
      logged().log,
    );
    assert.equal(asr.name, 'openai-realtime');
    assert.equal(typeof asr.openStream, 'function');
    assert.equal(
      await asr.transcribe(tone(300, 16_000, 300), { signal: new AbortController().signal, sampleRate: 16_000 }),
      'what is',
    );
    const parsed = AsrSchema.parse({ provider: 'openai-realtime', baseURL: 'wss://asr.example/v1', apiKey: KEY });
    const { asrProvider } = await import('../../../../providers/index.ts');
    assert.deepEqual(asrProvider(parsed).endpoint(parsed), { baseURL: 'https://asr.example/v1', apiKey: KEY });
    assert.equal(asrProvider(parsed).runsIn, 'caller');
  });
});
