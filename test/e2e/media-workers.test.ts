/**
 * The real server with two media worker threads (`audio.workers: 2`): a typed turn of several
 * sentences is synthesised without starting a single process; a worker that dies (terminated)
 * ends exactly the sessions it held (close code 4006) while the other worker's devices keep
 * talking, and its replacement serves new devices.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { MediaEngine } from '../../audio/media/media.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { trackWorkers } from '../helpers/track-workers.ts';
import { waitFor, within } from '../helpers/wait.ts';
import { untilWorkerIdle } from '../helpers/worker-idle.ts';

/** Worker start-up (tsx in each worker, onnxruntime, espeak WASM) takes seconds on a small box. */
const SETUP_MS = 90_000;
const TURN_MS = 30_000;

function sentences(dev: DeviceSim, from = 0): string[] {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
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
  const pool = (): MediaEngine => server().deps.media;
  /** The running media worker of each slot, by label (`media worker 0`, `media worker 1`). */
  const running = new Map<string, Worker>();
  /** Kills media worker `i` as a crash would (once it is idle: see `untilWorkerIdle`). */
  const crash = async (i: number): Promise<void> => {
    const w = running.get(`media worker ${i}`);
    assert.ok(w, `media worker ${i} running`);
    await untilWorkerIdle(w);
    await w.terminate();
  };

  let workerThreads: ReturnType<typeof trackWorkers> | undefined;

  before(
    async () => {
      workerThreads = trackWorkers();
      llm = await startFakeOpenAi();
      // Admission by event-loop delay is off: on a busy test box it may refuse a device with 503
      // for a second, and it is not what these tests are about.
      srv = await startVoiceApp(
        llm.url,
        { audio: { workers: 2 }, server: { admission: { maxEventLoopDelayMs: 0 } } },
        undefined,
        {
          onWorker: (w, label) => running.set(label, w),
        },
      );
    },
    { timeout: SETUP_MS },
  );
  after(
    async () => {
      try {
        await srv?.close();
        await llm?.close();
      } finally {
        // The server's close ends its media workers; any left would keep this file from ending.
        const left = await workerThreads?.restore();
        assert.equal(left, 0, 'worker threads left running after the server closed');
      }
    },
    { timeout: 30_000 },
  );

  test('a typed turn of several sentences starts no process (espeak runs in the media workers)', {
    timeout: 60_000,
  }, async () => {
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
      assert.ok(
        [...kids.seen.values()].some((c) => c.startsWith('sleep')),
        `children seen: ${JSON.stringify([...kids.seen.values()])}`,
      );
    }

    const dev = new DeviceSim({ url: server().wsUrl, deviceId: 'e3:00:00:00:00:01' });
    try {
      await within(dev.hello(), 20_000, 'hello');
      fakeLlm().script(
        fakeText(
          'The first thing is the sky. The second thing is the sea. The third thing is the land, and that is all.',
        ),
      );
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

  test('a worker that dies ends exactly its sessions (4006); the others keep talking; the replacement serves a new device', {
    timeout: 150_000,
  }, async () => {
    const p = pool();
    // The previous test's session is gone, so the least-loaded placement starts from 0 / 0.
    await waitFor(() => p.stats().sessions === 0, { what: 'no media session left', timeoutMs: 10_000 });
    const devs = [1, 2, 3, 4].map((i) => new DeviceSim({ url: server().wsUrl, deviceId: `e3:00:00:00:01:0${i}` }));
    const lostLines = (): number => server().logs.find('media worker lost; ending the session').length;
    try {
      for (const d of devs) await within(d.hello(), 20_000, 'hello');
      // A session opens its media on first use: one typed turn each, all at once.
      const firstTurns = await Promise.all(devs.map((d, i) => typedTurn(d, `hello number ${i + 1}`)));
      assert.ok(firstTurns.every((t) => t.frames > 0));
      assert.equal(p.stats().sessions, 4);
      const restarts = p.stats().workerRestarts;
      const linesBefore = lostLines();

      await crash(0);
      // Two sessions per worker: exactly two devices are closed, with 4006.
      await waitFor(() => devs.filter((d) => d.closeCode !== null).length >= 2, {
        what: 'the sessions of worker 0 closed',
        timeoutMs: 20_000,
      });
      const victims = devs.filter((d) => d.closeCode !== null);
      const survivors = devs.filter((d) => d.closeCode === null);
      assert.equal(victims.length, 2, `closed: ${JSON.stringify(devs.map((d) => d.closeCode))}`);
      for (const d of victims) assert.equal(d.closeCode, CloseCode.MediaLost);
      assert.equal(lostLines() - linesBefore, 2);
      assert.equal(p.stats().workerRestarts, restarts + 1);

      for (const d of survivors) {
        const turn = await typedTurn(d, 'are you still there');
        assert.deepEqual(turn.sentences, ['You said: are you still there.']);
        assert.ok(turn.frames > 0, 'audio after the crash');
        assert.equal(d.closeCode, null, 'a device on the other worker stays connected');
      }

      // A new device once the replacement is up: it lands on the (empty) replacement and talks.
      await waitFor(() => p.stats().workers === 2, { what: 'the replacement worker', timeoutMs: 30_000 });
      const fresh = new DeviceSim({ url: server().wsUrl, deviceId: 'e3:00:00:00:01:05' });
      devs.push(fresh);
      await within(fresh.hello(), 30_000, 'hello after the crash');
      const turn = await typedTurn(fresh, 'hello again');
      assert.deepEqual(turn.sentences, ['You said: hello again.']);
      assert.ok(turn.frames > 0);
      // It was on the replacement: killing that one ends it, and not the survivors.
      await crash(0);
      assert.equal(await within(fresh.closed, 20_000, 'the fresh device closed'), CloseCode.MediaLost);
      for (const d of survivors) assert.equal(d.closeCode, null);
      assert.equal(p.stats().workerRestarts, restarts + 2);
    } finally {
      for (const d of devs) d.close();
    }
  });
});
