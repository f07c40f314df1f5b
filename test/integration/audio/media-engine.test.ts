/**
 * The media engine with real parts (native Opus, Silero VAD, espeak-ng native and WASM): the
 * worker-thread engine gives bit-identical results to the in-process one (uplink decode + VAD with
 * corrupt and DTX packets and a VAD reset, framed encode, embedded TTS with either espeak-ng); sessions spread over the workers; a
 * worker that dies (terminated) ends only its own sessions, failing their requests in flight with
 * one error, and is replaced; close terminates the workers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { AsyncQueue } from '../../../core/async-queue.ts';
import { silentLogger } from '../../../core/logger.ts';
import { VoiceError } from '../../../core/errors.ts';
import { createMediaEngine } from '../../../audio/media/engine.ts';
import type {
  EspeakEngineChoice,
  MediaEngine,
  SessionMedia,
  SessionMediaOptions,
  UplinkResult,
} from '../../../audio/media/media.ts';
import { threadNames } from '../../helpers/threads.ts';
import type { VadEvent } from '../../../audio/vad/vad.ts';
import { resample } from '../../../audio/pcm/resample.ts';
import { decodeDownlink, speak16k, utterancePackets } from '../../helpers/speech.ts';
import type { Worker } from 'node:worker_threads';
import { trackWorkers } from '../../helpers/track-workers.ts';
import { sleep, waitFor, within } from '../../helpers/wait.ts';
import { untilWorkerIdle } from '../../helpers/worker-idle.ts';

const OPTS: SessionMediaOptions = {
  vad: { threshold: 0.5, minSilenceMs: 700, minSpeechMs: 250 },
  downlinkSampleRate: 24000,
  complexity: 5,
};
const FRAME_24K = 1440;
/** Worker start-up (tsx in the worker, onnxruntime, espeak WASM) takes several seconds on a small box. */
const SETUP_MS = 90_000;

/** `native` unless asked: the helper is built by scripts/setup.sh, and a missing one must fail here. */
function engine(workers: number, workerNice = 0, espeakEngine: EspeakEngineChoice = 'native'): Promise<MediaEngine> {
  return createMediaEngine({
    workers,
    workerNice,
    vadProvider: 'silero',
    espeak: { voice: 'en-us' },
    espeakEngine,
    log: silentLogger,
  });
}

/** Niceness of every thread of this process, by task id (Linux `/proc/self/task/<tid>/stat`, field 19). */
function threadNiceness(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at state, field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[19 - 3]));
  }
  return out;
}

/** Deterministic bytes (xorshift32), so a failure reproduces. */
function prng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

function randomPacket(next: () => number, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = next() & 0xff;
  return b;
}

async function collect(it: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const p of it) out.push(Buffer.from(p));
  return out;
}

async function* chunks(pcm: Int16Array, sizes: readonly number[]): AsyncGenerator<Int16Array> {
  let at = 0;
  for (const n of sizes) {
    yield pcm.slice(at, at + n);
    at += n;
  }
}

function speechEvents(rs: readonly UplinkResult[]): VadEvent[] {
  return rs.flatMap((r) => r.events);
}

function hasStartAndEnd(events: readonly VadEvent[]): boolean {
  return events.some((e) => e.type === 'speech_start') && events.some((e) => e.type === 'speech_end');
}

/** Sends every packet at once (as the session's listener does) and waits for all the answers. */
function uplinkAll(media: SessionMedia, packets: readonly Buffer[]): Promise<UplinkResult[]> {
  return Promise.all(packets.map((p) => media.uplink(p)));
}

function assertSameUplink(a: readonly UplinkResult[], b: readonly UplinkResult[], label: string): void {
  assert.equal(a.length, b.length, `${label}: result count`);
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as UplinkResult;
    const y = b[i] as UplinkResult;
    assert.equal(x.corrupt, y.corrupt, `${label}: packet ${i} corrupt flag`);
    assert.deepEqual(x.events, y.events, `${label}: packet ${i} VAD events`);
    assert.equal(x.pcm.length, y.pcm.length, `${label}: packet ${i} PCM length`);
    assert.ok(
      Buffer.from(x.pcm.buffer, x.pcm.byteOffset, x.pcm.byteLength).equals(
        Buffer.from(y.pcm.buffer, y.pcm.byteOffset, y.pcm.byteLength),
      ),
      `${label}: packet ${i} PCM differs`,
    );
  }
}

function assertSamePackets(a: readonly Buffer[], b: readonly Buffer[], label: string): void {
  assert.equal(a.length, b.length, `${label}: packet count`);
  for (let i = 0; i < a.length; i++)
    assert.ok((a[i] as Buffer).equals(b[i] as Buffer), `${label}: packet ${i} differs`);
}

/**
 * Waits until every thread is done with the engines' background work: the espeak warm-up runs one
 * synthesis per macrotask after load, in the main thread (in-process engine) and in each worker.
 * It matters for `speak`: espeak-ng carries state from one synthesis to the next (the same text
 * twice gives slightly different PCM), so two threads give the same packets only after the same
 * syntheses, here the warm-up's and the test's.
 */
async function untilThreadsIdle(workers: readonly Worker[], ms: number): Promise<void> {
  // The main thread's warm-up is a chain of setImmediate steps: let them all run.
  for (let i = 0; i < 100; i++) await new Promise((r) => setImmediate(r));
  const deadline = Date.now() + ms;
  let last = workers.map((w) => w.performance.eventLoopUtilization());
  for (let quiet = 0; quiet < 3; ) {
    if (Date.now() > deadline) throw new Error(`worker threads still busy after ${ms} ms`);
    await sleep(200);
    const now = workers.map((w) => w.performance.eventLoopUtilization());
    const busiest = Math.max(
      0,
      ...workers.map((w, i) => w.performance.eventLoopUtilization(now[i], last[i]).utilization),
    );
    quiet = busiest < 0.05 ? quiet + 1 : 0;
    last = now;
  }
}

let utterance: Buffer[];
/** Duration of `utterance` in ms. */
let utteranceMs: number;

let workerThreads: ReturnType<typeof trackWorkers>;

before(
  async () => {
    workerThreads = trackWorkers();
    utterance = await utterancePackets(speak16k('what is the weather today'));
    utteranceMs = utterance.length * 60;
  },
  { timeout: 30_000 },
);
after(
  async () => {
    assert.equal(await workerThreads.restore(), 0, 'worker threads left running after every engine closed');
  },
  { timeout: 30_000 },
);

/**
 * Once the threads are idle (the espeak warm-up done), one session of each engine speaks the same
 * sentence: the packets must be identical and decode to speech.
 */
async function assertSameSpeech(
  engines: readonly MediaEngine[],
  open: (e: MediaEngine) => Promise<SessionMedia>,
  what: string,
): Promise<void> {
  await untilThreadsIdle(
    workerThreads.tracked.filter((t) => !t.exited).map((t) => t.worker),
    30_000,
  );
  const outs: Buffer[][] = [];
  for (const e of engines) {
    const m = await open(e);
    outs.push(
      await within(collect(m.speak('Hello there, how are you?', new AbortController().signal)), 30_000, 'speak'),
    );
  }
  const [ref, work] = outs as [Buffer[], Buffer[]];
  assertSamePackets(ref, work, what);
  const decoded = await decodeDownlink(work, 24000);
  assert.equal(decoded.bad, 0);
  assert.ok(decoded.ms > 500, `speech lasts ${decoded.ms} ms`);
  assert.ok(decoded.rms > 300, `speech has energy (rms ${decoded.rms})`);
}

describe('media engine: workers give bit-identical results to the in-process engine', () => {
  let inProcess: MediaEngine | undefined;
  let worker: MediaEngine | undefined;
  const opened: SessionMedia[] = [];
  const both = (): [MediaEngine, MediaEngine] => {
    assert.ok(inProcess && worker, 'engines started');
    return [inProcess, worker];
  };
  const open = async (e: MediaEngine): Promise<SessionMedia> => {
    const m = await within(e.open(OPTS, silentLogger), 30_000, 'open');
    opened.push(m);
    return m;
  };

  before(
    async () => {
      [inProcess, worker] = await Promise.all([engine(0), engine(1)]);
    },
    { timeout: SETUP_MS },
  );
  after(
    async () => {
      for (const m of opened) m.close();
      await Promise.allSettled([inProcess?.close(), worker?.close()]);
    },
    { timeout: 30_000 },
  );

  test('engines report what they are', () => {
    const [a, b] = both();
    assert.equal(a.stats().workers, 0);
    assert.equal(b.stats().workers, 1);
  });

  test('uplink: decoded PCM, VAD events and corrupt flags match, with corrupt and DTX packets and a VAD reset mid-way', {
    timeout: 60_000,
  }, async () => {
    const next = prng(0x5eed);
    const corrupt = [
      randomPacket(next, 57),
      randomPacket(next, 123),
      randomPacket(next, 9),
      Buffer.from([0x03, 0x00]),
      Buffer.alloc(0),
    ];
    const dtx = [Buffer.from([0xf8]), Buffer.from([0x78])];
    // Corrupt and DTX packets before the speech and in the tail, the speech itself intact. Eight
    // before it (480 ms, a whole number of Silero's 32 ms frames), so the model sees the speech
    // with the same frame alignment as without them.
    const part1 = [
      corrupt[0],
      dtx[0],
      corrupt[1],
      ...utterance.slice(0, 2),
      corrupt[3],
      dtx[1],
      corrupt[4],
      ...utterance.slice(2, 4),
      corrupt[2],
      dtx[0],
      ...utterance.slice(4),
      dtx[1],
      corrupt[2],
      corrupt[0],
      dtx[0],
    ] as Buffer[];
    /** Indices in part 1 of the packets put before the speech. */
    const insertedBefore = [0, 1, 2, 5, 6, 7, 10, 11];
    const part2 = utterance;

    const results: Array<{ part1: UplinkResult[]; part2: UplinkResult[] }> = [];
    for (const e of both()) {
      const m = await open(e);
      // Everything sent without waiting, the reset between: it is ordered after part 1's packets.
      const p1 = uplinkAll(m, part1);
      m.resetVad();
      const p2 = uplinkAll(m, part2);
      results.push({ part1: await within(p1, 30_000, 'part 1'), part2: await within(p2, 30_000, 'part 2') });
    }
    const [ref, work] = results as [(typeof results)[0], (typeof results)[0]];

    // Not a comparison of nothing: the speech was found before and after the reset, some packets
    // were corrupt, and DTX packets gave one frame of silence.
    const ev1 = speechEvents(ref.part1);
    const ev2 = speechEvents(ref.part2);
    assert.ok(hasStartAndEnd(ev1), `part 1 events ${JSON.stringify(ev1)}`);
    assert.ok(hasStartAndEnd(ev2), `part 2 events ${JSON.stringify(ev2)}`);
    // After the reset positions restart at 0: the second utterance starts where the first one
    // did, less the packets put before it in part 1.
    const s1 = ev1.find((e) => e.type === 'speech_start')?.atMs ?? -1;
    const s2 = ev2.find((e) => e.type === 'speech_start')?.atMs ?? -1;
    const insertedMs = insertedBefore.reduce((ms, i) => ms + (ref.part1[i] as UplinkResult).pcm.length / 16, 0);
    assert.equal(insertedMs, 480);
    assert.ok(s2 < utteranceMs, `positions restarted at the reset (speech start ${s2} ms)`);
    assert.ok(
      Math.abs(s1 - insertedMs - s2) <= 100,
      `speech start ${s1} ms before the reset (${insertedMs} ms of it inserted packets), ${s2} ms after it`,
    );
    assert.equal(
      ref.part1.filter((r) => r.corrupt).length,
      7,
      `corrupt flags ${JSON.stringify(ref.part1.map((r) => r.corrupt))}`,
    );
    for (const i of [1, 6, part1.length - 1]) {
      const r = ref.part1[i] as UplinkResult;
      assert.equal(r.pcm.length, 960);
      assert.ok(
        r.pcm.every((s) => s === 0),
        'a DTX packet decodes to silence',
      );
    }
    assert.ok(
      ref.part2.some((r) => r.pcm.some((s) => Math.abs(s) > 1000)),
      'speech decoded with energy',
    );

    assertSameUplink(ref.part1, work.part1, 'before reset');
    assertSameUplink(ref.part2, work.part2, 'after reset');
  });

  test('encode: the same odd-sized PCM chunks give the same Opus packets, ceil(samples / 1440) of them, last frame padded', {
    timeout: 60_000,
  }, async () => {
    const pcm = resample(speak16k('the quick brown fox'), 16000, 24000);
    const sizes = [1, 1439, 1441, 7, 3001, 999, 2881, 333];
    const total = sizes.reduce((a, b) => a + b, 0);
    assert.ok(pcm.length >= total);
    assert.ok(total % FRAME_24K !== 0, 'the last frame needs padding');
    const expected = Math.ceil(total / FRAME_24K);

    const outs: Buffer[][] = [];
    for (const e of both()) {
      const m = await open(e);
      outs.push(await within(collect(m.encode(chunks(pcm, sizes), new AbortController().signal)), 30_000, 'encode'));
    }
    const [ref, work] = outs as [Buffer[], Buffer[]];
    assert.equal(ref.length, expected);
    assertSamePackets(ref, work, 'encode');
    // Every packet, the padded last one included, is a whole 60 ms frame.
    const decoded = await decodeDownlink(work, 24000);
    assert.equal(decoded.bad, 0);
    assert.equal(decoded.pcm.length, expected * FRAME_24K);
    assert.ok(decoded.rms > 300, `encoded speech has energy (rms ${decoded.rms})`);
  });

  test('encode: two streams of one session interleaved keep their own framers', { timeout: 60_000 }, async () => {
    const rest = async (it: AsyncIterator<Buffer>): Promise<number> => {
      let n = 0;
      while (!(await within(it.next(), 10_000, 'encode stream')).done) n++;
      return n;
    };
    for (const e of both()) {
      const m = await open(e);
      const qa = new AsyncQueue<Int16Array>();
      const qb = new AsyncQueue<Int16Array>();
      const a = m.encode(qa, new AbortController().signal)[Symbol.asyncIterator]();
      const b = m.encode(qb, new AbortController().signal)[Symbol.asyncIterator]();
      // 2000 samples each: one 1440-sample packet now and 560 samples left in the stream's framer
      // (one framer for both would hold 1120 after B's chunk and give B's tail to A).
      const next = [a.next(), b.next()];
      qa.push(new Int16Array(2000).fill(500));
      assert.equal((await within(next[0] as Promise<IteratorResult<Buffer>>, 10_000, 'a first packet')).done, false);
      qb.push(new Int16Array(2000).fill(-500));
      assert.equal((await within(next[1] as Promise<IteratorResult<Buffer>>, 10_000, 'b first packet')).done, false);
      qa.close();
      assert.equal(await rest(a), 1, "A's padded tail");
      qb.close();
      assert.equal(await rest(b), 1, "B's padded tail");
    }
  });

  test('speak: espeak straight to Opus gives the same packets on both, decodable speech', {
    timeout: 60_000,
  }, async () => {
    await assertSameSpeech(both(), open, 'speak');
  });

  test('speak with a voice given per request: that voice, on both engines; an unknown voice fails with config_invalid', {
    timeout: 60_000,
  }, async () => {
    const text = 'Hello there, how are you?';
    for (const e of both()) {
      const m = await open(e);
      const plain = await within(collect(m.speak(text, new AbortController().signal)), 30_000, 'speak');
      const asDefault = await within(
        collect(m.speak(text, new AbortController().signal, false, { voice: 'en-us' })),
        30_000,
        'speak en-us',
      );
      const other = await within(
        collect(m.speak(text, new AbortController().signal, false, { voice: 'en-us+f3', pitch: 80 })),
        30_000,
        'speak en-us+f3',
      );
      const plainAgain = await within(collect(m.speak(text, new AbortController().signal)), 30_000, 'speak again');
      assert.equal(asDefault.length, plain.length, "the thread's voice asked for by name speaks alike");
      assert.notDeepEqual(
        other.map((p) => p.toString('hex')),
        plain.map((p) => p.toString('hex')),
        'another voice sounds different',
      );
      assert.equal(plainAgain.length, plain.length, "the next request without a voice is back to the thread's voice");
      const decoded = await decodeDownlink(other, 24000);
      assert.ok(decoded.ms > 500 && decoded.rms > 300, 'the other voice is speech');
      await assert.rejects(
        collect(m.speak(text, new AbortController().signal, false, { voice: 'no-such-voice' })),
        (err: unknown) => err instanceof VoiceError && err.code === 'config_invalid',
      );
    }
  });
});

describe('media engine: the WebAssembly espeak-ng (audio.espeakEngine: wasm) gives the same packets in a worker and in-process', () => {
  const engines: MediaEngine[] = [];
  const opened: SessionMedia[] = [];
  before(
    async () => {
      engines.push(...(await Promise.all([engine(0, 0, 'wasm'), engine(1, 0, 'wasm')])));
    },
    { timeout: SETUP_MS },
  );
  after(
    async () => {
      for (const m of opened) m.close();
      await Promise.allSettled(engines.map((e) => e.close()));
    },
    { timeout: 30_000 },
  );

  test('speak: same packets on both, decodable speech', { timeout: 60_000 }, async () => {
    assert.equal(engines.length, 2, 'engines started');
    const open = async (e: MediaEngine): Promise<SessionMedia> => {
      const m = await within(e.open(OPTS, silentLogger), 30_000, 'open');
      opened.push(m);
      return m;
    };
    await assertSameSpeech(engines, open, 'speak (wasm)');
  });
});

describe('media engine: worker pool', () => {
  let pool: MediaEngine | undefined;
  const opened: SessionMedia[] = [];
  /** The running worker of each slot, by label (`media worker 0`, `media worker 1`). */
  const running = new Map<string, Worker>();
  const p = (): MediaEngine => {
    assert.ok(pool, 'pool started');
    return pool;
  };
  const open = async (): Promise<SessionMedia> => {
    const m = await within(p().open(OPTS, silentLogger), 30_000, 'open');
    opened.push(m);
    return m;
  };
  /**
   * Kills worker `i` as a crash would, once it is idle (`beforeDeath` runs just before: requests
   * then in flight), and waits until its replacement is serving.
   */
  const crash = async (i: number, beforeDeath: () => void = () => {}): Promise<void> => {
    const w = running.get(`media worker ${i}`);
    assert.ok(w, `worker ${i} running`);
    await untilWorkerIdle(w);
    beforeDeath();
    await w.terminate();
    await waitFor(() => running.get(`media worker ${i}`) !== w && p().stats().workers === 2, {
      what: `worker ${i} replaced`,
      timeoutMs: 60_000,
    });
  };
  /** Tracks which of `sessions` were told their media is lost. */
  const watchLost = (sessions: readonly SessionMedia[]): Array<VoiceError | undefined> => {
    const lost: Array<VoiceError | undefined> = sessions.map(() => undefined);
    sessions.forEach((m, i) => m.onLost((err) => (lost[i] = err)));
    return lost;
  };
  /** A whole utterance through one session: resolves with its VAD events. */
  const hear = async (m: SessionMedia): Promise<VadEvent[]> => {
    m.resetVad();
    return speechEvents(await within(uplinkAll(m, utterance), 30_000, 'uplink utterance'));
  };
  const say = async (m: SessionMedia, text: string): Promise<number> => {
    const packets = await within(collect(m.speak(text, new AbortController().signal)), 30_000, 'speak');
    const d = await decodeDownlink(packets, 24000);
    assert.equal(d.bad, 0);
    assert.ok(d.rms > 300, `speech has energy (rms ${d.rms})`);
    return d.ms;
  };

  const NICE = 7;
  let nicenessBefore = new Map<number, number>();
  before(
    async () => {
      nicenessBefore = threadNiceness();
      pool = await createMediaEngine({
        workers: 2,
        workerNice: NICE,
        vadProvider: 'silero',
        espeak: { voice: 'en-us' },
        espeakEngine: 'native',
        onWorker: (w, label) => running.set(label, w),
        log: silentLogger,
      });
    },
    { timeout: SETUP_MS },
  );
  after(
    async () => {
      for (const m of opened) m.close();
      await pool?.close();
    },
    { timeout: 30_000 },
  );

  test('each worker thread lowers its own priority (audio.workerNice); the main thread keeps its own', {
    skip: process.platform !== 'linux' && 'per-thread niceness is Linux-only',
  }, () => {
    const now = threadNiceness();
    const started = [...now].filter(([tid]) => !nicenessBefore.has(tid));
    // Threads a worker starts after lowering itself inherit its niceness, so at least the two workers.
    assert.ok(
      started.filter(([, nice]) => nice === NICE).length >= 2,
      `the two worker threads at nice ${NICE}: ${JSON.stringify(started)}`,
    );
    assert.equal(now.get(process.pid), nicenessBefore.get(process.pid), 'main thread unchanged');
  });

  test('each worker thread names itself xz-media-<index>, for top -H and /proc', {
    skip: process.platform !== 'linux' && 'thread names are read from Linux /proc',
  }, () => {
    const names = threadNames();
    assert.equal(names.filter((n) => n === 'xz-media-0').length, 1, `one xz-media-0 among ${JSON.stringify(names)}`);
    assert.equal(names.filter((n) => n === 'xz-media-1').length, 1, 'one xz-media-1');
  });

  test('sessions are spread: four sessions on two workers, two each, opened one by one or all at once', {
    timeout: 150_000,
  }, async () => {
    // Killing one worker ends exactly the sessions placed on it.
    const check = async (label: string, sessions: SessionMedia[]): Promise<void> => {
      assert.equal(p().stats().sessions, 4);
      const lost = watchLost(sessions);
      await crash(0);
      assert.equal(
        lost.filter(Boolean).length,
        2,
        `${label}: sessions lost with worker 0: ${JSON.stringify(lost.map(Boolean))}`,
      );
      for (const m of sessions) m.close();
      assert.equal(p().stats().sessions, 0);
    };
    await check('one by one', [await open(), await open(), await open(), await open()]);
    // Devices reconnecting together after a restart open their sessions at the same moment.
    await check('at once', await Promise.all([open(), open(), open(), open()]));
  });

  test('closing a session mid-answer leaves nothing pending: queued syntheses are dropped and answered', {
    timeout: 60_000,
  }, async () => {
    const m = await open();
    const long = Array.from(
      { length: 6 },
      (_, i) => `Sentence number ${i + 1} of a rather long answer that nobody will hear.`,
    ).join(' ');
    const ac = new AbortController();
    // Several syntheses queued on one worker, their consumers still waiting.
    const readers = Array.from({ length: 6 }, () => collect(m.speak(long, ac.signal)).catch(() => []));
    assert.ok(p().stats().queueDepth >= 6, `queued: ${p().stats().queueDepth}`);
    m.close();
    ac.abort();
    await within(Promise.all(readers), 30_000, 'the readers end');
    await waitFor(() => p().stats().queueDepth === 0, { what: 'no request left pending', timeoutMs: 20_000 });
  });

  test('a worker that dies fails its sessions only, their requests in flight with one error, and is replaced', {
    timeout: 150_000,
  }, async () => {
    // Opened one after the other on an idle pool: one on each worker (see the test above).
    const sessions = [await open(), await open()];
    const lost = watchLost(sessions);
    const restartsBefore = p().stats().workerRestarts;

    // Both have syntheses in flight when worker 0 dies (sent the moment before: a synthesis
    // reaches native code only after espeak-ng has answered, so the thread dies in JavaScript).
    let inFlight: Array<Promise<unknown[]>> = [];
    await crash(0, () => {
      inFlight = sessions.map((m) =>
        Promise.all(
          ['One.', 'Two.', 'Three.'].map((text) =>
            collect(m.speak(text, new AbortController().signal)).then(
              () => 'ok' as const,
              (err: unknown) => err,
            ),
          ),
        ),
      );
    });
    const v = lost.findIndex(Boolean);
    assert.ok(v >= 0, 'the session on worker 0 was told');
    const [victim, survivor] = [sessions[v], sessions[1 - v]] as [SessionMedia, SessionMedia];
    assert.equal(lost[1 - v], undefined, "the other worker's session was not told");
    const err = lost[v];
    assert.ok(err instanceof VoiceError, `onLost got ${String(err)}`);
    assert.match(err.message, /exited|worker/);
    const settled = await within(inFlight[v] as Promise<unknown[]>, 20_000, "the victim's syntheses settle");
    assert.ok(settled.at(-1) instanceof Error, "the victim's last synthesis in flight failed");
    assert.ok(
      settled.every((r) => r === 'ok' || r === err),
      'every failed request failed with the one error the session was told',
    );
    assert.deepEqual(
      new Set(await within(inFlight[1 - v] as Promise<unknown[]>, 20_000, "the survivor's syntheses")),
      new Set(['ok']),
    );
    await assert.rejects(within(victim.uplink(utterance[0] as Buffer), 5000, "the victim's next uplink"), VoiceError);
    await assert.rejects(
      within(collect(victim.speak('Still there?', new AbortController().signal)), 5000, "the victim's next speak"),
      VoiceError,
    );
    assert.equal(p().stats().workerRestarts, restartsBefore + 1);

    // The survivor never noticed.
    assert.ok(hasStartAndEnd(await hear(survivor)), 'the survivor still decodes and detects speech');
    assert.ok((await say(survivor, 'I am fine.')) > 300);

    // The replacement serves new sessions: a new one goes to it (the empty worker), which the
    // replacement's own death shows.
    const c = await open();
    const lostC = watchLost([c]);
    assert.ok(hasStartAndEnd(await hear(c)), 'a session on the replacement detects speech');
    assert.ok((await say(c, 'Hello there, how are you?')) > 500);
    await crash(0);
    assert.ok(lostC[0] instanceof VoiceError, 'the new session was on the replacement');
    assert.equal(lost[1 - v], undefined, 'the survivor is still fine');
    assert.equal(p().stats().workerRestarts, restartsBefore + 2);
    for (const m of [...sessions, c]) m.close();
  });

  test('close terminates the workers and does not hang', { timeout: 30_000 }, async () => {
    const m = await open();
    let lost: VoiceError | undefined;
    m.onLost((err) => {
      lost = err;
    });
    await within(p().close(), 15_000, 'engine close');
    assert.equal(p().stats().workers, 0);
    // Every worker thread of every engine in this file has ended: the closed ones and the
    // killed ones.
    assert.ok(workerThreads.tracked.length >= 5, `${workerThreads.tracked.length} worker threads started`);
    await waitFor(() => workerThreads.tracked.every((t) => t.exited), {
      what: 'every worker thread exited',
      timeoutMs: 5000,
    });
    await assert.rejects(p().open(OPTS, silentLogger), VoiceError);
    await assert.rejects(within(m.uplink(utterance[0] as Buffer), 5000, 'uplink after close'), VoiceError);
    assert.ok(lost, 'open sessions are told their media is gone');
  });
});

/** Counts a synthesis's packets, recording in `order` whose packet arrived when. */
function takeInto(order: string[]): (who: string, it: AsyncIterable<Buffer>) => Promise<number> {
  return async (who, it) => {
    let n = 0;
    for await (const _ of it) {
      order.push(who);
      n++;
    }
    return n;
  };
}

describe('media engine: a worker serves syntheses by deadline, a few frames at a time', () => {
  let pool: MediaEngine | undefined;
  const opened: SessionMedia[] = [];
  before(
    async () => {
      pool = await engine(1);
    },
    { timeout: SETUP_MS },
  );
  after(
    async () => {
      for (const m of opened) m.close();
      await pool?.close();
    },
    { timeout: 30_000 },
  );
  /** Two sessions, both on the one worker. */
  const openTwo = async (): Promise<[SessionMedia, SessionMedia]> => {
    assert.ok(pool, 'pool started');
    const a = await within(pool.open(OPTS, silentLogger), 30_000, 'open a');
    const b = await within(pool.open(OPTS, silentLogger), 30_000, 'open b');
    opened.push(a, b);
    return [a, b];
  };

  test('a turn that starts while another session speaks a long sentence gets its first audio before that sentence ends', {
    timeout: 60_000,
  }, async () => {
    const [a, b] = await openTwo();
    // Both on the one worker. The old worker spoke a whole sentence in one go, so every packet
    // of A's arrived before the first of B's.
    const order: string[] = [];
    const take = takeInto(order);
    const long =
      'This is a long sentence that goes on and on about the weather, the wind, the clouds and the rain, for many seconds of speech.';
    const signal = new AbortController().signal;
    const [na, nb] = await within(
      Promise.all([take('a', a.speak(long, signal, true)), take('b', b.speak('Hello there.', signal, true))]),
      30_000,
      'speak both',
    );
    assert.ok(na > 60, `the long sentence is several seconds (${na} frames)`);
    assert.ok(nb > 5, `the short one is spoken (${nb} frames)`);
    const firstB = order.indexOf('b');
    const lastA = order.lastIndexOf('a');
    assert.ok(firstB < lastA, `B's first packet (#${firstB}) came before A's last (#${lastA})`);
    // A's first slice is the whole send-ahead (600 ms = 10 frames): its device is never left waiting.
    assert.ok(
      order.slice(0, 10).every((w) => w === 'a'),
      `A's send-ahead came first: ${order.slice(0, 12).join('')}`,
    );
    // B's first slice then goes ahead of A's next frames, which the pacer needs only 240 ms and
    // more after A's first (without the head start they went first, up to ~400 ms: 16+ frames).
    assert.ok(firstB <= 12, `B's first packet (#${firstB}) right after A's send-ahead: ${order.slice(0, 24).join('')}`);
  });

  test('a held answer (an early start) yields after its first slice: another answer is made whole first', {
    timeout: 60_000,
  }, async () => {
    const [a, b] = await openTwo();
    const order: string[] = [];
    const take = takeInto(order);
    const signal = new AbortController().signal;
    // A's device has not been told anything yet: its frames past the first slice can wait.
    a.holdPlayback(true);
    const both = Promise.all([
      take('a', a.speak('This sentence is held back until the end of speech is confirmed.', signal, true)),
      take('b', b.speak('Hello there, how are you?', signal, true)),
    ]);
    const [na, nb] = await within(both, 30_000, 'speak both');
    a.holdPlayback(false);
    assert.ok(na > 40 && nb > 10, `both spoken (${na}, ${nb} frames)`);
    const seq = order.join('');
    // A's send-ahead, then all of B (without the hold A's next frames were due before B's), then A's rest.
    assert.equal(seq, 'a'.repeat(10) + 'b'.repeat(nb) + 'a'.repeat(na - 10), seq);
    // Released, the session plays as usual: its next answer starts at once.
    const again = await within(take('a', a.speak('Released.', signal, true)), 30_000, 'speak again');
    assert.ok(again > 3);
  });
});
