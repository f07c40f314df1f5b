import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createPacer, rampSendTime } from '../../../audio/pacer.ts';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

async function* frames(n: number, delayEveryMs = 0): AsyncGenerator<Buffer> {
  for (let i = 0; i < n; i++) {
    if (delayEveryMs > 0) await new Promise((r) => setTimeout(r, delayEveryMs));
    yield Buffer.from([i & 0xff]);
  }
}

describe('pacer', () => {
  test('sends the pre-buffer at once, then real-time cadence; never more than maxAhead queued', async () => {
    const ac = new AbortController();
    const sentAt: number[] = [];
    const t0 = performance.now();
    const pacer = createPacer({ frameMs: 60, preBufferFrames: 3, send: () => sentAt.push(performance.now() - t0), signal: ac.signal });
    const result = await pacer.play(frames(84)); // 5.04 s of audio
    const elapsed = performance.now() - t0;
    ac.abort();
    assert.deepEqual(result, { framesSent: 84, stopped: false });
    assert.ok((sentAt[2] ?? Infinity) < 100, `pre-buffer sent at once (${sentAt[2]} ms)`);
    // 84 frames with a 3-frame pre-buffer: the last is sent ~ (84 - 3) × 60 ms after the start.
    assert.ok(elapsed > 4500 && elapsed < 7000, `elapsed ${elapsed}`);
    // Lead = audio sent minus time elapsed; must never exceed the 3-frame target (+ timer slack).
    sentAt.forEach((t, i) => {
      const lead = (i + 1) * 60 - t;
      assert.ok(lead <= 180 + 5, `frame ${i}: lead ${lead} ms`);
    });
    // Generous: other test files load the CPU at the same time; the bench measures the real figure.
    assert.ok(pacer.stats.maxLateMs < 250, `max late ${pacer.stats.maxLateMs}`);
    assert.ok(Math.abs(pacer.playbackEndsAt() - (t0 + elapsed + 120)) < 200, 'playback ends ~ 2 frames after the last send');
  });

  test('a lead above the pre-buffer is built up: pre-buffer at once, then a frame per half frame, then real time', async () => {
    const ac = new AbortController();
    const sentAt: number[] = [];
    const t0 = performance.now();
    const pacer = createPacer({ frameMs: 60, preBufferFrames: 3, leadMs: 600, send: () => sentAt.push(performance.now() - t0), signal: ac.signal });
    await pacer.play(frames(30)); // all available at once: only the pacer decides when they leave
    ac.abort();
    assert.ok((sentAt[2] as number) < 100, `pre-buffer at once (${sentAt[2]} ms)`);
    assert.ok((sentAt[3] as number) >= 20, `the 4th frame waits for the ramp (${sentAt[3]} ms), not sent with the pre-buffer`);
    // The media workers encode against rampSendTime: it must be the schedule the pacer keeps.
    // Never earlier (exact); later only by what a loaded machine delays a timer (generous bound).
    sentAt.forEach((t, i) => {
      const planned = rampSendTime(i, 180, 600, 60);
      assert.ok(t >= planned - 5 && t < planned + 500, `frame ${i}: sent at ${t.toFixed(0)} ms, schedule ${planned} ms`);
    });
    // The schedule itself never leaves a gap over a frame (the device's late measure) ...
    for (let i = 1; i < 30; i++) assert.ok(rampSendTime(i, 180, 600, 60) - rampSendTime(i - 1, 180, 600, 60) <= 60, `schedule gap before frame ${i}`);
    // ... and reaches the full lead, which the pacer never exceeds.
    assert.equal(rampSendTime(29, 180, 600, 60), 30 * 60 - 600);
    const leads = sentAt.map((t, i) => (i + 1) * 60 - t);
    assert.ok(Math.max(...leads) <= 605, `lead never above the target (${Math.max(...leads).toFixed(0)} ms)`);
    assert.ok(Math.max(...leads) > 400, `the lead was built up (${Math.max(...leads).toFixed(0)} ms)`);
  });

  test('counts send intervals and those over a frame + 5 ms, as the device would see them', async () => {
    const ac = new AbortController();
    const sentAt: number[] = [];
    let blocked = false;
    const pacer = createPacer({
      frameMs: 60,
      preBufferFrames: 2,
      send: () => {
        sentAt.push(performance.now());
        // Once, mid-stream, this thread is busy for 150 ms: the next frame leaves late.
        if (sentAt.length === 8 && !blocked) {
          blocked = true;
          const until = performance.now() + 150;
          while (performance.now() < until);
        }
      },
      signal: ac.signal,
    });
    await pacer.play(frames(15));
    ac.abort();
    assert.equal(pacer.stats.intervals, 14, 'one interval between each two frames sent');
    const over = sentAt.slice(1).filter((t, i) => t - (sentAt[i] as number) > 65).length;
    assert.ok(over >= 1, 'the busy stretch made at least one interval over 65 ms');
    assert.equal(pacer.stats.lateIntervals, over, `the pacer counted the same late intervals as measured (${over})`);
  });

  test('an interval is timed when its frame is sent, not when the shared tick began', async () => {
    // Two devices' pacers share one clock, so one tick sends both of their due frames. When the
    // first send of a tick holds the thread (a preempted or slow write), the second device's frame
    // leaves that much later, and that device sees a long interval: its pacer must count it.
    const ac = new AbortController();
    const sentAt: number[][] = [[], []];
    let held = false;
    const make = (i: number): ReturnType<typeof createPacer> =>
      createPacer({
        frameMs: 60,
        preBufferFrames: 1,
        send: () => {
          sentAt[i]?.push(performance.now());
          if (i === 0 && sentAt[0]?.length === 8 && !held) {
            held = true;
            const until = performance.now() + 15;
            while (performance.now() < until);
          }
        },
        signal: ac.signal,
      });
    const [a, b] = [make(0), make(1)];
    await Promise.all([a.play(frames(12)), b.play(frames(12))]);
    ac.abort();
    const over = (ts: number[]): number => ts.slice(1).filter((t, i) => t - (ts[i] as number) > 65).length;
    const [overA, overB] = [over(sentAt[0] as number[]), over(sentAt[1] as number[])];
    assert.ok(overB >= 1, `the held tick delayed the second device's frame (${overB} intervals over 65 ms)`);
    assert.equal(b.stats.lateIntervals, overB, 'the second pacer counted what its device saw');
    assert.equal(a.stats.lateIntervals, overA, 'the first pacer counted what its device saw');
  });

  test('cadence continues across play calls and queued calls run in order', async () => {
    const ac = new AbortController();
    const got: number[] = [];
    const pacer = createPacer({ frameMs: 20, preBufferFrames: 2, send: (f) => got.push(f[0] as number), signal: ac.signal });
    const t0 = performance.now();
    const [a, b] = await Promise.all([pacer.play(frames(10)), pacer.play(frames(10))]);
    const elapsed = performance.now() - t0;
    ac.abort();
    assert.equal(a.framesSent + b.framesSent, 20);
    assert.deepEqual(got, [...Array(10).keys(), ...Array(10).keys()]);
    // 20 frames × 20 ms with 2 pre-buffered: ≈ 360 ms, not 2 × 160 ms + a restart burst.
    assert.ok(elapsed > 300 && elapsed < 1000, `elapsed ${elapsed}`);
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
    const ac = new AbortController();
    let sent = 0;
    const pacer = createPacer({ frameMs: 60, send: () => sent++, signal: ac.signal });
    const p = pacer.play(frames(50));
    await new Promise((r) => setTimeout(r, 200));
    pacer.stop();
    const r = await p;
    const atStop = sent;
    await new Promise((r2) => setTimeout(r2, 200));
    ac.abort();
    assert.equal(r.stopped, true);
    assert.ok(r.framesSent >= 3 && r.framesSent < 10, `sent ${r.framesSent}`);
    assert.equal(sent, atStop, 'nothing sent after stop');
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
    const pacer = createPacer({ frameMs: 20, send: () => { throw new Error('socket closed'); }, signal: ac.signal });
    await assert.rejects(pacer.play(frames(5)), /send failed/);
    ac.abort();
  });

  test('a slow producer is sent as it arrives and counted as underrun, not as scheduler lateness', async () => {
    const ac = new AbortController();
    const pacer = createPacer({ frameMs: 20, preBufferFrames: 1, send: () => {}, signal: ac.signal });
    await pacer.play(frames(5, 60)); // frames arrive every 60 ms for 20 ms of audio each
    ac.abort();
    assert.equal(pacer.stats.framesSent, 5);
    assert.ok(pacer.stats.underruns >= 3, `underruns ${pacer.stats.underruns}`);
    assert.ok(pacer.stats.maxLateMs < 150, `late ${pacer.stats.maxLateMs}`);
  });
});
