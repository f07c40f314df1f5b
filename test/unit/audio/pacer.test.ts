import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createPacer, rampSendTime } from '../../../audio/pacer/pacer.ts';
import { sleep } from '../../../core/abort.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** `n` one-byte frames; with `everyMs`, each waits that long on `clock` before it is yielded. */
async function* frames(n: number, everyMs = 0, clock?: ManualClock): AsyncGenerator<Buffer> {
  for (let i = 0; i < n; i++) {
    if (everyMs > 0) await sleep(everyMs, undefined, clock);
    yield Buffer.from([i & 0xff]);
  }
}

/**
 * When the pacer sends frame `i` of a stream that starts on an empty device queue: the schedule
 * `rampSendTime`, from which the shared timer fires up to 2 ms early (timers are late by ~1 ms in
 * real life, so a frame due that soon goes in the current tick). On the manual clock the timer
 * fires exactly, so this is exact.
 */
const EARLY_MS = 2;
function planned(i: number, preMs: number, leadMs: number, frameMs: number): number {
  return Math.max(0, rampSendTime(i, preMs, leadMs, frameMs) - EARLY_MS);
}

describe('pacer', () => {
  test('sends the pre-buffer at once, then real-time cadence; never more than the lead queued', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const sentAt: number[] = [];
    const t0 = clock.now();
    const pacer = createPacer({
      frameMs: 60,
      preBufferFrames: 3,
      send: () => sentAt.push(clock.now() - t0),
      signal: ac.signal,
      clock,
    });
    const result = await clock.run(pacer.play(frames(84)), 'play'); // 5.04 s of audio
    ac.abort();
    assert.deepEqual(result, { framesSent: 84, stopped: false });
    assert.deepEqual(sentAt.slice(0, 3), [0, 0, 0], 'the pre-buffer goes at once');
    // Then one frame per 60 ms, each as soon as it fits the 180 ms lead: the last of 84 at
    // (84 - 3) × 60 ms, less the 2 ms a frame may go early.
    assert.deepEqual(
      sentAt,
      sentAt.map((_, i) => planned(i, 180, 180, 60)),
    );
    assert.equal(sentAt.at(-1), 81 * 60 - EARLY_MS);
    sentAt.forEach((t, i) => assert.ok((i + 1) * 60 - t <= 180 + EARLY_MS, `frame ${i}: lead ${(i + 1) * 60 - t} ms`));
    assert.equal(pacer.stats.maxLateMs, 0, 'no frame left after it was due');
    assert.equal(pacer.stats.lateIntervals, 0);
    assert.equal(pacer.playbackEndsAt() - t0, 84 * 60, 'playback ends when all 84 frames have played');
  });

  test('a lead above the pre-buffer is built up: pre-buffer at once, then a frame per half frame, then real time', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const sentAt: number[] = [];
    const t0 = clock.now();
    const pacer = createPacer({
      frameMs: 60,
      preBufferFrames: 3,
      leadMs: 600,
      send: () => sentAt.push(clock.now() - t0),
      signal: ac.signal,
      clock,
    });
    await clock.run(pacer.play(frames(30)), 'play'); // all available at once: only the pacer decides when they leave
    ac.abort();
    assert.deepEqual(sentAt.slice(0, 4), [0, 0, 0, 30 - EARLY_MS], 'the 4th frame waits for the ramp, half a frame');
    // The media workers encode against rampSendTime: it must be the schedule the pacer keeps.
    assert.deepEqual(
      sentAt,
      sentAt.map((_, i) => planned(i, 180, 600, 60)),
    );
    // The schedule itself never leaves a gap over a frame (the device's late measure) ...
    for (let i = 1; i < 30; i++)
      assert.ok(
        rampSendTime(i, 180, 600, 60) - rampSendTime(i - 1, 180, 600, 60) <= 60,
        `schedule gap before frame ${i}`,
      );
    // ... and reaches the full lead, which the pacer never exceeds.
    assert.equal(rampSendTime(29, 180, 600, 60), 30 * 60 - 600);
    const leads = sentAt.map((t, i) => (i + 1) * 60 - t);
    assert.equal(Math.max(...leads), 600 + EARLY_MS, 'the lead is built up to the target and no further');
  });

  test('counts send intervals and those over a frame + 5 ms, as the device would see them', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const sentAt: number[] = [];
    const pacer = createPacer({
      frameMs: 60,
      preBufferFrames: 2,
      send: () => {
        sentAt.push(clock.now());
        // Once, mid-stream, this thread is busy for 150 ms: the next frame leaves late.
        if (sentAt.length === 8) clock.busy(150);
      },
      signal: ac.signal,
      clock,
    });
    await clock.run(pacer.play(frames(15)), 'play');
    ac.abort();
    assert.equal(pacer.stats.intervals, 14, 'one interval between each two frames sent');
    const over = sentAt.slice(1).filter((t, i) => t - (sentAt[i] as number) > 65).length;
    assert.equal(over, 1, 'the busy stretch made one interval over 65 ms');
    assert.equal(pacer.stats.lateIntervals, over, 'the pacer counted the late interval the device saw');
  });

  test('an interval is timed when its frame is sent, not when the shared tick began', async () => {
    // Two devices' pacers share one clock, so one tick sends both of their due frames. When the
    // first send of a tick holds the thread (a preempted or slow write), the second device's frame
    // leaves that much later, and that device sees a long interval: its pacer must count it.
    const clock = new ManualClock();
    const ac = new AbortController();
    const sentAt: number[][] = [[], []];
    const make = (i: number): ReturnType<typeof createPacer> =>
      createPacer({
        frameMs: 60,
        preBufferFrames: 1,
        send: () => {
          sentAt[i]?.push(clock.now());
          if (i === 0 && sentAt[0]?.length === 8) clock.busy(15);
        },
        signal: ac.signal,
        clock,
      });
    const [a, b] = [make(0), make(1)];
    await clock.run(Promise.all([a.play(frames(12)), b.play(frames(12))]), 'both plays');
    ac.abort();
    const over = (ts: number[]): number => ts.slice(1).filter((t, i) => t - (ts[i] as number) > 65).length;
    assert.equal(over(sentAt[1] as number[]), 1, "the held tick delayed the second device's frame");
    assert.equal(b.stats.lateIntervals, 1, 'the second pacer counted what its device saw');
    assert.equal(over(sentAt[0] as number[]), 0, "the first device's frame left on time");
    assert.equal(a.stats.lateIntervals, 0, 'the first pacer counted what its device saw');
  });

  test('cadence continues across play calls and queued calls run in order', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const got: number[] = [];
    const sentAt: number[] = [];
    const t0 = clock.now();
    const pacer = createPacer({
      frameMs: 20,
      preBufferFrames: 2,
      send: (f) => {
        got.push(f[0] as number);
        sentAt.push(clock.now() - t0);
      },
      signal: ac.signal,
      clock,
    });
    const [a, b] = await clock.run(Promise.all([pacer.play(frames(10)), pacer.play(frames(10))]), 'two plays');
    ac.abort();
    assert.equal(a.framesSent + b.framesSent, 20);
    assert.deepEqual(got, [...Array(10).keys(), ...Array(10).keys()]);
    // One stream of 20 frames × 20 ms with 2 pre-buffered, not two streams with a second pre-buffer burst.
    assert.deepEqual(
      sentAt,
      sentAt.map((_, i) => planned(i, 40, 40, 20)),
    );
  });

  test('one play call holds nothing per frame already sent (a long sentence does not grow the heap)', async () => {
    const ac = new AbortController();
    // 0.01 ms frames: 50,000 of them leave within a second, all through one play call.
    const pacer = createPacer({ frameMs: 0.01, leadMs: 2400, send: () => {}, signal: ac.signal });
    const heapAt: number[] = [];
    async function* measured(): AsyncGenerator<Buffer> {
      const frame = Buffer.alloc(1);
      for (let i = 0; i < 50_000; i++) {
        if (i === 5_000 || i === 45_000) {
          collectGarbage();
          heapAt.push(process.memoryUsage().heapUsed);
        }
        yield frame;
      }
    }
    const result = await pacer.play(measured());
    ac.abort();
    assert.equal(result.framesSent, 50_000);
    const grown = (heapAt[1] as number) - (heapAt[0] as number);
    // Retaining even ~50 bytes per frame would be 2 MB over these 40,000 frames.
    assert.ok(grown < 2_000_000, `heap grew ${(grown / 1e6).toFixed(1)} MB over 40,000 frames of one play call`);
  });

  test('stop() drops pending frames and resolves the running play as stopped', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    let sent = 0;
    const pacer = createPacer({ frameMs: 60, send: () => sent++, signal: ac.signal, clock });
    const p = pacer.play(frames(50));
    await clock.advance(200);
    pacer.stop();
    const r = await p;
    await clock.advance(1000);
    ac.abort();
    assert.equal(r.stopped, true);
    // The 3-frame pre-buffer at 0 ms, then frames at 58, 118 and 178 ms.
    assert.equal(r.framesSent, 6);
    assert.equal(sent, 6, 'nothing sent after stop');
    assert.equal(clock.pending, 0, 'no timer left armed');
  });

  test('abort rejects play, even while the producer is stalled', async () => {
    const ac = new AbortController();
    const pacer = createPacer({ frameMs: 60, send: () => {}, signal: ac.signal });
    async function* stalled(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(1);
      await new Promise(() => {}); // never yields again
    }
    const p = pacer.play(stalled());
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(p, /aborted/);
    await assert.rejects(pacer.play(frames(1)), /aborted/);
  });

  test('a throwing send stops the pacer with an error', async () => {
    const ac = new AbortController();
    const pacer = createPacer({
      frameMs: 20,
      send: () => {
        throw new Error('socket closed');
      },
      signal: ac.signal,
    });
    await assert.rejects(pacer.play(frames(5)), /send failed/);
    ac.abort();
  });

  test('a slow producer is sent as it arrives and counted as underrun, not as scheduler lateness', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const pacer = createPacer({ frameMs: 20, preBufferFrames: 1, send: () => {}, signal: ac.signal, clock });
    await clock.run(pacer.play(frames(5, 60, clock)), 'play'); // frames arrive every 60 ms for 20 ms of audio each
    ac.abort();
    assert.equal(pacer.stats.framesSent, 5);
    assert.equal(pacer.stats.underruns, 4, 'every frame after the first found the device dry');
    assert.equal(pacer.stats.maxLateMs, 0, 'each frame left as it arrived');
  });
});
