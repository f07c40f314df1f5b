/**
 * The real server with two media worker threads (`audio.workers: 2`): a typed turn of several
 * sentences is synthesised without starting a single process; a crashed worker ends exactly the
 * sessions it held (close code 4006) while the other worker's devices keep talking, and its
 * replacement serves new devices; a session survives its worker being recycled between turns.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia, SessionMediaOptions } from '../../audio/media/media.ts';
import type { WorkerPool } from '../../audio/media/worker-pool.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { trackWorkers } from '../helpers/track-workers.ts';
import { waitFor, within } from '../helpers/wait.ts';

/** Worker start-up (tsx in each worker, onnxruntime, espeak WASM) takes seconds on a small box. */
const SETUP_MS = 90_000;
const TURN_MS = 30_000;


function sentences(dev: DeviceSim, from = 0): string[] {
  return dev.json.slice(from).filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start').map((j) => String(j.msg.text));
}

/** A typed turn (`listen detect` with text); resolves with the number of audio frames it brought. */
async function typedTurn(dev: DeviceSim, text: string): Promise<{ frames: number; sentences: string[] }> {
  const from = dev.json.length;
  const audioFrom = dev.audio.length;
  dev.listen('detect', { text });
  await dev.waitJson('tts', 'stop', TURN_MS, from);
  return { frames: dev.audio.length - audioFrom, sentences: sentences(dev, from) };
}

/**
 * Counts every child process this thread starts: `spawn`, `exec`, `execFile` and `fork` all go
 * through `ChildProcess.prototype.spawn`.
 */
function countSpawns(): { files: string[]; restore(): void } {
  type SpawnFn = (this: ChildProcess, ...args: unknown[]) => unknown;
  const proto = ChildProcess.prototype as unknown as { spawn: SpawnFn };
  const original = proto.spawn;
  const files: string[] = [];
  proto.spawn = function (this: ChildProcess, ...args: unknown[]): unknown {
    files.push(String((args[0] as { file?: unknown } | undefined)?.file));
    return original.apply(this, args);
  };
  return {
    files,
    restore: () => {
      proto.spawn = original;
    },
  };
}

/** Children of this process, whichever thread started them (Linux: /proc/<pid>/task/<tid>/children). */
function childPids(): number[] {
  const tasks = `/proc/${process.pid}/task`;
  const out: number[] = [];
  for (const tid of readdirSync(tasks)) {
    try {
      for (const p of readFileSync(`${tasks}/${tid}/children`, 'utf8').trim().split(/\s+/)) if (p) out.push(Number(p));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/**
 * Samples this process's children every few ms: catches a process started by a worker thread
 * (which the prototype patch above cannot see) when it lives for more than a few ms, as an
 * espeak-ng per sentence does.
 */
function watchChildren(): { seen: Map<number, string>; stop(): void } {
  const before = new Set(childPids());
  const seen = new Map<number, string>();
  const t = setInterval(() => {
    for (const pid of childPids()) {
      if (before.has(pid) || seen.has(pid)) continue;
      let cmd = '?';
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      } catch {
        // already gone
      }
      seen.set(pid, cmd);
    }
  }, 4);
  return { seen, stop: () => clearInterval(t) };
}

/** Records every media session the server opens, with the session id of the device it serves. */
function captureOpens(pool: WorkerPool): { opened: Array<{ sessionId: string; media: SessionMedia }>; restore(): void } {
  const original = pool.open.bind(pool);
  const opened: Array<{ sessionId: string; media: SessionMedia }> = [];
  pool.open = async (opts: SessionMediaOptions, log: Logger): Promise<SessionMedia> => {
    const media = await original(opts, log);
    const bindings = (log as unknown as { bindings?: () => Record<string, unknown> }).bindings?.() ?? {};
    opened.push({ sessionId: String(bindings.sessionId), media });
    return media;
  };
  return {
    opened,
    restore: () => {
      pool.open = original;
    },
  };
}


describe('media workers end to end', () => {
  let llm: FakeOpenAi | undefined;
  let srv: VoiceApp | undefined;
  const server = (): VoiceApp => {
    assert.ok(srv, 'server started');
    return srv;
  };
  const fakeLlm = (): FakeOpenAi => {
    assert.ok(llm, 'fake LLM started');
    return llm;
  };
  const pool = (): WorkerPool => {
    const p = server().deps.media as WorkerPool;
    assert.equal(typeof p.workerOf, 'function', 'deps.media is the worker pool');
    return p;
  };

  let workerThreads: ReturnType<typeof trackWorkers> | undefined;

  before(async () => {
    workerThreads = trackWorkers();
    llm = await startFakeOpenAi();
    // Admission by event-loop delay is off: on a busy test box it may refuse a device with 503
    // for a second, and it is not what these tests are about.
    srv = await startVoiceApp(llm.url, { audio: { workers: 2 }, server: { admission: { maxEventLoopDelayMs: 0 } } });
  }, { timeout: SETUP_MS });
  after(async () => {
    try {
      await srv?.close();
      await llm?.close();
    } finally {
      // The server's close ends its media workers; any left would keep this file from ending.
      const left = await workerThreads?.restore();
      assert.equal(left, 0, 'worker threads left running after the server closed');
    }
  }, { timeout: 30_000 });

  test('a typed turn of several sentences starts no process (espeak runs in the media workers)', { timeout: 60_000 }, async () => {
    assert.equal(pool().stats().workers, 2);
    // The counters work: a real spawn is seen by both.
    {
      const spawns = countSpawns();
      const kids = watchChildren();
      try {
        const child = spawn('sleep', ['0.3'], { stdio: 'ignore' });
        await within(new Promise((r) => child.once('exit', r)), 5000, 'sleep exits');
      } finally {
        spawns.restore();
        kids.stop();
      }
      assert.deepEqual(spawns.files, ['sleep']);
      assert.ok([...kids.seen.values()].some((c) => c.startsWith('sleep')), `children seen: ${JSON.stringify([...kids.seen.values()])}`);
    }

    const dev = new DeviceSim({ url: server().wsUrl, deviceId: 'e3:00:00:00:00:01' });
    try {
      await within(dev.hello(), 20_000, 'hello');
      fakeLlm().script(fakeText('The first thing is the sky. The second thing is the sea. The third thing is the land, and that is all.'));
      const spawns = countSpawns();
      const kids = watchChildren();
      let turn: Awaited<ReturnType<typeof typedTurn>>;
      try {
        turn = await typedTurn(dev, 'Tell me three things.');
      } finally {
        spawns.restore();
        kids.stop();
      }
      assert.ok(turn.sentences.length >= 3, `sentences: ${JSON.stringify(turn.sentences)}`);
      assert.ok(turn.frames > 0, 'audio frames arrived');
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.equal(decoded.bad, 0);
      assert.ok(decoded.ms > 2000 && decoded.rms > 300, `${decoded.ms} ms of audio, rms ${decoded.rms}`);
      assert.deepEqual(spawns.files, [], 'processes spawned by the main thread during the turn');
      assert.deepEqual([...kids.seen.values()], [], 'child processes seen during the turn');
    } finally {
      dev.close();
    }
  });

  test('a crashed worker ends exactly its sessions (4006); the others keep talking; the replacement serves a new device', { timeout: 150_000 }, async () => {
    const p = pool();
    // The previous test's session is gone, so the least-loaded placement starts from 0 / 0.
    await waitFor(() => p.stats().sessions === 0, { what: 'no media session left', timeoutMs: 10_000 });
    const capture = captureOpens(p);
    const devs = [1, 2, 3, 4].map((i) => new DeviceSim({ url: server().wsUrl, deviceId: `e3:00:00:00:01:0${i}` }));
    try {
      for (const d of devs) await within(d.hello(), 20_000, 'hello');
      // A session opens its media on first use: one typed turn each, all at once.
      const firstTurns = await Promise.all(devs.map((d, i) => typedTurn(d, `hello number ${i + 1}`)));
      assert.ok(firstTurns.every((t) => t.frames > 0));
      assert.equal(capture.opened.length, 4);
      const workerOfDev = (d: DeviceSim): number => {
        const o = capture.opened.find((x) => x.sessionId === d.sessionId);
        assert.ok(o, `media session of ${d.sessionId}`);
        return p.workerOf(o.media);
      };
      const where = devs.map(workerOfDev);
      const crashed = 0;
      const victims = devs.filter((_, i) => where[i] === crashed);
      const survivors = devs.filter((_, i) => where[i] !== crashed);
      assert.equal(victims.length, 2, `workers of the sessions: ${JSON.stringify(where)}`);
      assert.equal(survivors.length, 2, `workers of the sessions: ${JSON.stringify(where)}`);
      const restarts = p.stats().workerRestarts;

      p.crashForTest(crashed);
      for (const d of victims) assert.equal(await within(d.closed, 20_000, 'victim closed'), CloseCode.MediaLost);
      assert.equal(server().logs.find('media worker lost; ending the session').length, victims.length);
      assert.equal(p.stats().workerRestarts, restarts + 1);

      for (const d of survivors) {
        assert.equal(d.closeCode, null, 'a device on the other worker stays connected');
        const turn = await typedTurn(d, 'are you still there');
        assert.deepEqual(turn.sentences, ['You said: are you still there.']);
        assert.ok(turn.frames > 0, 'audio after the crash');
      }

      // A new device once the replacement is up: it lands on the (empty) replacement and talks.
      await waitFor(() => p.stats().workers === 2, { what: 'the replacement worker', timeoutMs: 30_000 });
      const fresh = new DeviceSim({ url: server().wsUrl, deviceId: 'e3:00:00:00:01:05' });
      devs.push(fresh);
      await within(fresh.hello(), 30_000, 'hello after the crash');
      const turn = await typedTurn(fresh, 'hello again');
      assert.deepEqual(turn.sentences, ['You said: hello again.']);
      assert.ok(turn.frames > 0);
      assert.equal(capture.opened.length, 5);
      assert.equal(workerOfDev(fresh), crashed);
      for (const d of [...survivors, fresh]) assert.equal(d.closeCode, null);
    } finally {
      capture.restore();
      for (const d of devs) d.close();
    }
  });

  test('a session keeps working when every worker is recycled between its turns', { timeout: 150_000 }, async () => {
    const p = pool();
    const dev = new DeviceSim({ url: server().wsUrl, deviceId: 'e3:00:00:00:02:01' });
    try {
      await within(dev.hello(), 20_000, 'hello');
      const lostBefore = server().logs.find('media worker lost; ending the session').length;
      const restarts = p.stats().workerRestarts;
      const first = await typedTurn(dev, 'first question');
      assert.ok(first.frames > 0);

      for (let i = 0; i < 2; i++) await within(p.recycle(i), 60_000, `recycle worker ${i}`);
      assert.equal(p.stats().workers, 2);

      const audioFrom = dev.audio.length;
      const second = await typedTurn(dev, 'second question');
      assert.deepEqual(second.sentences, ['You said: second question.']);
      const decoded = await decodeDownlink(dev.audio.slice(audioFrom).map((a) => a.payload));
      assert.equal(decoded.bad, 0);
      assert.ok(decoded.ms > 500 && decoded.rms > 300, `${decoded.ms} ms of audio after the recycle, rms ${decoded.rms}`);
      assert.equal(dev.closeCode, null, 'the device stayed connected');
      assert.equal(server().logs.find('media worker lost; ending the session').length, lostBefore);
      assert.equal(p.stats().workerRestarts, restarts, 'a recycle is not a restart');
    } finally {
      dev.close();
    }
  });
});
