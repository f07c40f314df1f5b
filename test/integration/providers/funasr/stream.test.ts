/**
 * The FunASR streaming recogniser against the stand-in server (a real WebSocket on 127.0.0.1):
 * partials and the final in each mode and for each server's quirks, audio before the connection
 * opens, cancellation, every fault, TLS, and nothing left open afterwards.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import pino from 'pino';
import type { Asr, AsrStream } from '../../../../audio/asr/asr.ts';
import { resample } from '../../../../audio/pcm/resample.ts';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import { silentLogger } from '../../../../core/logger.ts';
import { createAsr } from '../../../../providers/index.ts';
import { MAX_PENDING_MS } from '../../../../providers/funasr/stream.ts';
import { startFakeFunasr, type FakeFunasr, type FakeFunasrOptions } from '../../../fixtures/fake-funasr.ts';
import {
  piecesOf,
  scripted,
  SENTENCE_1,
  STREAMED_TEXT,
  twoSentences,
  WHOLE_TEXT,
} from '../../../fixtures/funasr/utterance.ts';
import { closeAll } from '../../../helpers/close-all.ts';
import { createLogSink } from '../../../helpers/log-sink.ts';
import { makeTestCa, type TestCa } from '../../../helpers/test-ca.ts';
import { sleep, waitFor, within } from '../../../helpers/wait.ts';

const never = (): AbortSignal => new AbortController().signal;

interface Opened {
  fake: FakeFunasr;
  asr: Asr;
  close(): Promise<void>;
}

async function rig(fakeOpts: FakeFunasrOptions = {}, asrOpts: Record<string, unknown> = {}): Promise<Opened> {
  const fake = await startFakeFunasr({ transcribe: scripted, ...fakeOpts });
  const asr = await createAsr({ provider: 'funasr', url: fake.url, ...asrOpts }, silentLogger);
  return { fake, asr, close: () => closeAll(asr, fake) };
}

function open(asr: Asr, partials: string[] = [], signal = never(), sampleRate = 16000): AsrStream {
  assert.ok(asr.openStream, 'FunASR streams');
  return asr.openStream({ sampleRate, signal, onPartial: (t) => partials.push(t), log: silentLogger });
}

function pushAll(stream: AsrStream, pcm: Int16Array): void {
  for (const piece of piecesOf(pcm)) stream.push(piece);
}

async function rejectsWith(p: Promise<unknown>, code: string, message?: RegExp): Promise<VoiceError> {
  const err = await within(
    p.then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    ),
    10_000,
    `a ${code} rejection`,
  );
  assert.ok(err instanceof VoiceError, String(err));
  assert.equal(err.code, code, err.message);
  if (message) assert.match(err.message, message);
  return err;
}

/** All stand-in sockets closed, and the process holds no more timers than before the test. */
async function nothingLeft(fake: FakeFunasr, timersBefore: number): Promise<void> {
  await waitFor(() => fake.openSockets() === 0, { what: 'the stand-in to see every socket closed' });
  await waitFor(() => timers() <= timersBefore, { what: 'the stream timers to be cleared' });
}

function timers(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
}

describe('funasr: partials and the final', () => {
  test('2pass: streaming pieces, each sentence replaced by its offline result, the final once the server says so', async () => {
    const r = await rig();
    try {
      const partials: string[] = [];
      const before = timers();
      const turn = new AbortController();
      const stream = open(r.asr, partials, turn.signal);
      assert.equal(getEventListeners(turn.signal, 'abort').length, 1, 'the stream listens to its turn');
      const pcm = twoSentences();
      pushAll(stream, pcm);
      assert.equal(await within(stream.finish(), 5000, 'the final'), WHOLE_TEXT);
      assert.equal(partials.at(-1), WHOLE_TEXT, 'the last partial is the final');
      assert.ok(partials.includes('今天的天气'), 'the streamed first sentence');
      const replaced = partials.indexOf(SENTENCE_1);
      assert.ok(replaced > partials.indexOf('今天的天气'), 'then its offline text in its place');
      assert.ok(partials.includes('今天的天气，怎么'), 'the second sentence streams after the first');
      assert.ok(!partials.some((p) => p.includes('天气今天')), 'never the words twice');
      for (let i = 1; i < partials.length; i++) assert.notEqual(partials[i], partials[i - 1], 'only changes');

      const s = r.fake.sessions[0];
      assert.ok(s);
      assert.deepEqual(s.offeredProtocols, ['binary']);
      assert.equal(s.config?.mode, '2pass');
      assert.deepEqual(s.config?.chunk_size, [5, 10, 5]);
      assert.equal(s.config?.wav_format, 'pcm');
      assert.equal(s.config?.audio_fs, 16000);
      assert.deepEqual(
        Buffer.from(s.audio),
        Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength),
        'every sample, in order',
      );
      assert.ok(
        s.frameSizes.slice(0, -1).every((n) => n === 1920),
        `60 ms frames: ${s.frameSizes.slice(0, 5).join(',')}`,
      );
      assert.deepEqual(s.end, { is_speaking: false, is_end: true, wav_name: `${String(s.config?.wav_name)}-end` });
      await nothingLeft(r.fake, before);
      assert.equal(getEventListeners(turn.signal, 'abort').length, 0, 'and lets go of it once done');
    } finally {
      await r.close();
    }
  });

  // Every mode against each server's quirks: the same words come out.
  const table: Array<{
    flavour: 'python' | 'cpp';
    mode: '2pass' | 'online' | 'offline';
    final: string;
    partials: boolean;
  }> = [
    { flavour: 'python', mode: '2pass', final: WHOLE_TEXT, partials: true },
    { flavour: 'cpp', mode: '2pass', final: WHOLE_TEXT, partials: true },
    { flavour: 'python', mode: 'online', final: STREAMED_TEXT, partials: true },
    { flavour: 'cpp', mode: 'online', final: STREAMED_TEXT, partials: true },
    // The Python server's offline mode closes sentences too; the C++ offline server answers once.
    { flavour: 'python', mode: 'offline', final: WHOLE_TEXT, partials: true },
    { flavour: 'cpp', mode: 'offline', final: WHOLE_TEXT, partials: false },
  ];
  for (const row of table) {
    test(`${row.mode} on the ${row.flavour} server: final "${row.final}"`, async () => {
      const r = await rig({ flavour: row.flavour }, { mode: row.mode });
      try {
        const partials: string[] = [];
        const stream = open(r.asr, partials);
        pushAll(stream, twoSentences());
        assert.equal(await within(stream.finish(), 5000, 'the final'), row.final);
        const beforeEnd = partials.slice(0, -1);
        assert.equal(beforeEnd.length > 0, row.partials, `partials before the last: ${JSON.stringify(partials)}`);
        assert.equal(r.fake.sessions.at(-1)?.config?.mode, row.mode);
      } finally {
        await r.close();
      }
    });
  }

  test('partials and the final are logged at debug with their text', async () => {
    const r = await rig();
    const sink = createLogSink();
    const log = pino({ level: 'debug' }, sink.stream);
    try {
      assert.ok(r.asr.openStream);
      const stream = r.asr.openStream({ sampleRate: 16000, signal: never(), onPartial: () => {}, log });
      pushAll(stream, twoSentences());
      await within(stream.finish(), 5000, 'the final');
      assert.ok(sink.find('funasr partial').length > 3);
      assert.deepEqual(
        sink.find('funasr final').map((l) => [l.level, l.text]),
        [[20, WHOLE_TEXT]],
      );
    } finally {
      await r.close();
    }
  });

  test('a sentence the Python server closed mid-stream, arriving after the end marker, does not end the utterance', async () => {
    // The server is behind: the first sentence's result (is_final:true) is on its way when the
    // end marker goes out. Only the results stamped with the end marker's name end it.
    const r = await rig({ replyDelayMs: 150 });
    try {
      const stream = open(r.asr);
      pushAll(stream, twoSentences());
      const final = stream.finish();
      assert.equal(await within(final, 5000, 'the final'), WHOLE_TEXT);
      const s = r.fake.sessions[0];
      const finals = s?.results.filter((m) => m.is_final === true && m.mode === '2pass-offline') ?? [];
      assert.equal(finals.length, 2, 'two sentences, each said final');
      assert.equal(finals[0]?.wav_name, s?.config?.wav_name, 'the first under the first name');
    } finally {
      await r.close();
    }
  });

  test('a server that answers the end and closes without is_final gives its text', async () => {
    for (const flavour of ['python', 'cpp'] as const) {
      const r = await rig({ fault: 'close-after-final', flavour });
      try {
        const stream = open(r.asr);
        pushAll(stream, twoSentences());
        assert.equal(await within(stream.finish(), 5000, `the final (${flavour})`), WHOLE_TEXT);
      } finally {
        await r.close();
      }
    }
  });

  test('audio pushed before the connection opens is kept and sent, in FunASR frames, after the config', async () => {
    const r = await rig();
    try {
      const stream = open(r.asr);
      const pcm = twoSentences();
      pushAll(stream, pcm); // synchronously: the socket cannot be open yet
      assert.equal(r.fake.sessions.length, 0, 'not connected while pushing');
      assert.equal(await within(stream.finish(), 5000, 'the final'), WHOLE_TEXT);
      const s = r.fake.sessions[0];
      assert.equal(s?.audio.length, pcm.byteLength);
      assert.equal(s?.texts[0], s?.configText, 'the config first');
    } finally {
      await r.close();
    }
  });

  test('past 60 s of audio before the connection opens, the rest is dropped with one warning', async () => {
    // A server that never completes the handshake: nothing is sent, the audio waits.
    const held = new Set<Socket>();
    const silentServer = createServer((socket) => {
      held.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => silentServer.listen(0, '127.0.0.1', resolve));
    const port = (silentServer.address() as AddressInfo).port;
    const sink = createLogSink();
    const asr = await createAsr(
      { provider: 'funasr', url: `ws://127.0.0.1:${port}`, connectTimeoutMs: 300 },
      silentLogger,
    );
    try {
      assert.ok(asr.openStream);
      const stream = asr.openStream({
        sampleRate: 16000,
        signal: never(),
        onPartial: () => {},
        log: pino({ level: 'debug' }, sink.stream),
      });
      const second = new Int16Array(16000);
      for (let i = 0; i < MAX_PENDING_MS / 1000 + 5; i++) stream.push(second);
      assert.equal(sink.find('funasr not connected yet: audio past the limit dropped').length, 1);
      await rejectsWith(stream.finish(), ErrorCode.Timeout, /no connection within 300 ms/);
    } finally {
      await asr.close();
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silentServer.close(() => resolve()));
    }
  });

  test('8 kHz audio is resampled to the 16 kHz FunASR takes', async () => {
    const r = await rig();
    try {
      const pcm16 = twoSentences();
      const stream = open(r.asr, [], never(), 8000);
      pushAll(stream, resample(pcm16, 16000, 8000));
      assert.equal(await within(stream.finish(), 5000, 'the final'), WHOLE_TEXT);
      const bytes = r.fake.sessions[0]?.audio.length ?? 0;
      assert.ok(Math.abs(bytes - pcm16.byteLength) <= 64, `${bytes} bytes for ${pcm16.byteLength}`);
    } finally {
      await r.close();
    }
  });

  test('an utterance without audio: the empty text, from either server', async () => {
    for (const flavour of ['python', 'cpp'] as const) {
      const r = await rig({ flavour });
      try {
        const partials: string[] = [];
        const stream = open(r.asr, partials);
        assert.equal(await within(stream.finish(), 5000, `the final (${flavour})`), '');
        assert.deepEqual(partials, []);
        assert.equal(r.fake.sessions.at(-1)?.audio.length, 0);
      } finally {
        await r.close();
      }
    }
  });

  test('transcribe (the batch path) streams the utterance and returns the final', async () => {
    const r = await rig();
    try {
      assert.equal(await r.asr.transcribe(twoSentences(), { signal: never(), sampleRate: 16000 }), WHOLE_TEXT);
      assert.equal(r.fake.sessions.length, 1);
    } finally {
      await r.close();
    }
  });

  test('the C++ server selects no subprotocol: one retry without it, then the next utterances connect at once', async () => {
    const r = await rig({ flavour: 'cpp' });
    try {
      for (let i = 0; i < 2; i++) {
        const stream = open(r.asr);
        pushAll(stream, twoSentences());
        assert.equal(await within(stream.finish(), 5000, 'the final'), WHOLE_TEXT);
      }
      assert.deepEqual(
        r.fake.sessions.map((s) => [s.offeredProtocols, s.configText !== undefined]),
        [
          [['binary'], false],
          [[], true],
          [[], true],
        ],
      );
    } finally {
      await r.close();
    }
  });
});

describe('funasr: cancellation and faults', () => {
  test('abort mid-stream: the socket closes at once, finish rejects as aborted, no partial after', async () => {
    const r = await rig({ partialEveryMs: 60 });
    try {
      const before = timers();
      const ac = new AbortController();
      const partials: string[] = [];
      const stream = open(r.asr, partials, ac.signal);
      const pieces = piecesOf(twoSentences());
      for (const p of pieces.slice(0, 20)) stream.push(p);
      await waitFor(() => partials.length > 0, { what: 'a first partial' });
      ac.abort();
      const seen = partials.length;
      for (const p of pieces.slice(20)) stream.push(p);
      await rejectsWith(stream.finish(), ErrorCode.Aborted);
      await nothingLeft(r.fake, before);
      await sleep(100);
      assert.equal(partials.length, seen, 'no callback after the abort');
      assert.equal(r.fake.sessions[0]?.end, undefined, 'no end marker sent');
    } finally {
      await r.close();
    }
  });

  test('a signal aborted before opening: no connection at all', async () => {
    const r = await rig();
    try {
      const ac = new AbortController();
      ac.abort();
      const stream = open(r.asr, [], ac.signal);
      stream.push(twoSentences());
      await rejectsWith(stream.finish(), ErrorCode.Aborted);
      await sleep(50);
      assert.equal(r.fake.sessions.length, 0);
    } finally {
      await r.close();
    }
  });

  test('closing the provider ends its open streams', async () => {
    const r = await rig({ fault: 'stall' });
    try {
      const stream = open(r.asr);
      pushAll(stream, twoSentences());
      const final = stream.finish();
      await waitFor(() => r.fake.sessions[0]?.end, { what: 'the end marker' });
      await r.asr.close();
      await rejectsWith(final, ErrorCode.Aborted);
      await waitFor(() => r.fake.openSockets() === 0, { what: 'the socket closed' });
    } finally {
      await r.close();
    }
  });

  test('finish is idempotent', async () => {
    const r = await rig();
    try {
      const stream = open(r.asr);
      pushAll(stream, twoSentences());
      const a = stream.finish();
      assert.equal(stream.finish(), a);
      assert.equal(await a, WHOLE_TEXT);
      assert.equal(await stream.finish(), WHOLE_TEXT);
      assert.equal(
        r.fake.sessions[0]?.texts.filter((t) => t.includes('is_speaking": false') || t.includes('"is_speaking":false'))
          .length,
        1,
      );
    } finally {
      await r.close();
    }
  });

  test('refused handshake (403) and a closed port: provider_unavailable', async () => {
    const r = await rig({ fault: 'refuse' });
    try {
      const stream = open(r.asr);
      pushAll(stream, twoSentences());
      await rejectsWith(stream.finish(), ErrorCode.ProviderUnavailable, /HTTP 403/);
    } finally {
      await r.close();
    }
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const asr = await createAsr({ provider: 'funasr', url: `ws://127.0.0.1:${port}` }, silentLogger);
    try {
      await rejectsWith(
        asr.transcribe(twoSentences(), { signal: never(), sampleRate: 16000 }),
        ErrorCode.ProviderUnavailable,
        /ECONNREFUSED/,
      );
    } finally {
      await asr.close();
    }
  });

  test('the server reports a failure: provider_rejected (Python acknowledgement with error; C++ ERROR text)', async () => {
    for (const [flavour, message] of [
      ['python', /could not decode the utterance: offline inference failed/],
      ['cpp', /refused the stream: ERROR\. Real-time transcription service ONLY SUPPORT PCM/],
    ] as const) {
      const r = await rig({ fault: 'error', flavour });
      try {
        const stream = open(r.asr);
        pushAll(stream, twoSentences());
        await rejectsWith(stream.finish(), ErrorCode.ProviderRejected, message);
      } finally {
        await r.close();
      }
    }
  });

  test('a server that never answers the end: timeout after finalTimeoutMs, socket closed', async () => {
    const r = await rig({ fault: 'stall' }, { finalTimeoutMs: 300 });
    try {
      const before = timers();
      const turn = new AbortController();
      const stream = open(r.asr, [], turn.signal);
      pushAll(stream, twoSentences());
      await rejectsWith(stream.finish(), ErrorCode.Timeout, /no final transcript within 300 ms/);
      await nothingLeft(r.fake, before);
      assert.equal(getEventListeners(turn.signal, 'abort').length, 0, 'no listener left on the turn');
    } finally {
      await r.close();
    }
  });

  const failures: Array<[FakeFunasrOptions['fault'], RegExp]> = [
    ['drop', /closed before the final transcript/],
    ['garbage', /not JSON/],
    ['oversize', /connection failed \(Max payload size exceeded\)/],
    ['flood', /more than 2000 messages/],
  ];
  for (const [fault, message] of failures) {
    test(`${fault}: provider_failed, socket closed`, async () => {
      const r = await rig({ fault });
      try {
        const before = timers();
        const stream = open(r.asr);
        pushAll(stream, twoSentences());
        await rejectsWith(stream.finish(), ErrorCode.ProviderFailed, message);
        await nothingLeft(r.fake, before);
      } finally {
        await r.close();
      }
    });
  }

  test('a transcript past 4,000 characters: provider_failed', async () => {
    const r = await rig({ transcribe: (pcm) => 'x'.repeat(pcm.length / 4) });
    try {
      const stream = open(r.asr);
      pushAll(stream, twoSentences());
      await rejectsWith(stream.finish(), ErrorCode.ProviderFailed, /transcript over 4000 characters/);
    } finally {
      await r.close();
    }
  });

  test('a listener that throws is logged, the stream goes on', async () => {
    const r = await rig();
    try {
      assert.ok(r.asr.openStream);
      const stream = r.asr.openStream({
        sampleRate: 16000,
        signal: never(),
        onPartial: () => {
          throw new Error('listener bug');
        },
        log: silentLogger,
      });
      pushAll(stream, twoSentences());
      assert.equal(await within(stream.finish(), 5000, 'the final'), WHOLE_TEXT);
    } finally {
      await r.close();
    }
  });
});

describe('funasr: TLS (wss://)', () => {
  let ca: TestCa;
  let fake: FakeFunasr;
  before(async () => {
    ca = makeTestCa();
    fake = await startFakeFunasr({ transcribe: scripted, tls: { key: ca.key, cert: ca.cert } });
  });
  after(async () => {
    await fake.close();
    ca.close();
  });

  test('with the CA given in `ca` it connects', async () => {
    const asr = await createAsr({ provider: 'funasr', url: fake.url, ca: ca.caFile }, silentLogger);
    try {
      assert.equal(await asr.transcribe(twoSentences(), { signal: never(), sampleRate: 16000 }), WHOLE_TEXT);
    } finally {
      await asr.close();
    }
  });

  test('an untrusted certificate is refused (provider_unavailable) unless rejectUnauthorized is false', async () => {
    const strict = await createAsr({ provider: 'funasr', url: fake.url }, silentLogger);
    const lax = await createAsr({ provider: 'funasr', url: fake.url, rejectUnauthorized: false }, silentLogger);
    try {
      await rejectsWith(
        strict.transcribe(twoSentences(), { signal: never(), sampleRate: 16000 }),
        ErrorCode.ProviderUnavailable,
        /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|unable to verify/,
      );
      assert.equal(await lax.transcribe(twoSentences(), { signal: never(), sampleRate: 16000 }), WHOLE_TEXT);
    } finally {
      await closeAll(strict, lax);
    }
  });

  test('a `ca` path that cannot be read stops the start-up with config_invalid', async () => {
    await assert.rejects(
      createAsr({ provider: 'funasr', url: fake.url, ca: '/nonexistent/ca.pem' }, silentLogger),
      (err: unknown) =>
        err instanceof VoiceError && err.code === ErrorCode.ConfigInvalid && /asr\.ca/.test(err.message),
    );
  });
});
