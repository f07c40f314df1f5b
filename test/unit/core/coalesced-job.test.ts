// The throttle of the MCP endpoint's relisting and publishing, on a clock moved by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoalescedJob } from '../../../core/coalesced-job.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

/** A job whose runs the test finishes by hand; `starts` holds the clock time of each run's start. */
function harness(minIntervalMs: number, skip: () => boolean = () => false) {
  const clock = new ManualClock(0);
  const starts: number[] = [];
  const finishers: Array<() => void> = [];
  const job = new CoalescedJob({
    clock,
    minIntervalMs,
    run: () => {
      if (skip()) return undefined;
      starts.push(clock.now());
      return new Promise<void>((r) => finishers.push(r));
    },
  });
  const finish = async (): Promise<void> => {
    finishers.shift()?.();
    await clock.advance(0);
  };
  return { clock, starts, job, finish };
}

test('a flood of requests during a run costs one more run, an interval after the first started', async () => {
  const { clock, starts, job, finish } = harness(1000);
  job.request();
  assert.deepEqual(starts, [0], 'the first request runs at once');
  await clock.advance(100);
  for (let i = 0; i < 200; i++) job.request();
  await finish();
  assert.deepEqual(starts, [0], 'the folded run waits for the interval');
  assert.equal(job.idle, false);
  await clock.advance(899);
  assert.deepEqual(starts, [0]);
  await clock.advance(1);
  assert.deepEqual(starts, [0, 1000], 'one run for the 200 requests');
  await finish();
  assert.equal(job.idle, true);
  assert.equal(clock.pending, 0, 'nothing left waiting');
});

test('requests while it waits for the interval are answered by the run that waited', async () => {
  const { clock, starts, job, finish } = harness(1000);
  job.request();
  await finish();
  job.request();
  job.request();
  await clock.advance(1000);
  await finish();
  await clock.advance(5000);
  assert.deepEqual(starts, [0, 1000]);
});

test('a run with nothing to do does not count as a start', async () => {
  let skip = false;
  const { clock, starts, job, finish } = harness(1000, () => skip);
  job.request();
  await finish();
  await clock.advance(1000);
  skip = true;
  job.request();
  await clock.advance(500);
  skip = false;
  job.request();
  assert.deepEqual(starts, [0, 1500], 'the skipped run at 1000 did not restart the interval');
  await finish();
});

test('started() counts a run made outside: the next one waits the interval from it', async () => {
  const { clock, starts, job, finish } = harness(1000);
  await clock.advance(50);
  job.started();
  job.request();
  assert.deepEqual(starts, []);
  await clock.advance(1000);
  assert.deepEqual(starts, [1050]);
  await finish();
});

test('holdFor holds runs off until its work ends, then runs what was requested meanwhile; refused when not idle', async () => {
  const { clock, starts, job, finish } = harness(0);
  let done: () => void = () => {};
  assert.equal(
    job.holdFor(() => new Promise<void>((r) => (done = r))),
    true,
  );
  assert.equal(
    job.holdFor(async () => assert.fail('not called while held')),
    false,
  );
  job.request();
  assert.deepEqual(starts, [], 'held off');
  done();
  await clock.advance(0);
  assert.deepEqual(starts, [0]);
  assert.equal(
    job.holdFor(async () => assert.fail('not called while running')),
    false,
  );
  await finish();
  assert.equal(job.idle, true);
});

test('a run that fails does not stop later ones', async () => {
  const clock = new ManualClock(0);
  let runs = 0;
  const job = new CoalescedJob({
    clock,
    minIntervalMs: 0,
    run: () => (++runs === 1 ? Promise.reject(new Error('store down')) : Promise.resolve()),
  });
  job.request();
  job.request();
  await clock.advance(0);
  assert.equal(runs, 2);
});

test('stop() clears the wait, waits for the running run and starts no other', async () => {
  const { clock, starts, job, finish } = harness(1000);
  job.request();
  job.request();
  let stopped = false;
  const stopping = job.stop().then(() => (stopped = true));
  await clock.advance(0);
  assert.equal(stopped, false, 'the run is still going');
  await finish();
  await stopping;
  job.request();
  await clock.advance(5000);
  assert.deepEqual(starts, [0]);
  assert.equal(clock.pending, 0);
});
