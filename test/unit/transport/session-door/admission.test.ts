/** AdmissionControl's decision on the media-queue signal: limits, hysteresis, a broken source, close. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdmissionControl } from '../../../../transport/session-door/admission.ts';

test('media queue: refused over the limit, admitted again only under 80 % of it', () => {
  const load = { queueDepth: 0 };
  const a = new AdmissionControl({ maxEventLoopDelayMs: 0, maxMediaQueue: 10, load: () => load });
  try {
    assert.deepEqual(a.check(), { ok: true });
    load.queueDepth = 10;
    assert.deepEqual(a.check(), { ok: true }, 'at the limit is not over it');
    load.queueDepth = 11;
    assert.deepEqual(a.check(), { ok: false, signal: 'media_queue', value: 11, limit: 10 });
    load.queueDepth = 9;
    assert.equal(a.check().ok, false, 'hysteresis: 9 is over 80 % of 10');
    load.queueDepth = 8;
    assert.equal(a.check().ok, true);
    load.queueDepth = 9;
    assert.equal(a.check().ok, true, 'not over the limit again yet');
  } finally {
    a.close();
  }
});

test('disabled signals, a missing or throwing load source, and close() never refuse', () => {
  const deep = new AdmissionControl({ maxEventLoopDelayMs: 0, maxMediaQueue: 0, load: () => ({ queueDepth: 1e9 }) });
  assert.equal(deep.check().ok, true, 'maxMediaQueue 0 disables the signal');
  deep.close();
  const none = new AdmissionControl({ maxEventLoopDelayMs: 0, maxMediaQueue: 1 });
  assert.equal(none.mediaQueueDepth(), undefined);
  assert.equal(none.check().ok, true);
  none.close();
  const broken = new AdmissionControl({
    maxEventLoopDelayMs: 0,
    maxMediaQueue: 1,
    load: () => {
      throw new Error('pool gone');
    },
  });
  assert.equal(broken.check().ok, true);
  broken.close();
  const closed = new AdmissionControl({ maxEventLoopDelayMs: 100, maxMediaQueue: 1, load: () => ({ queueDepth: 5 }) });
  assert.equal(closed.check().ok, false);
  closed.close();
  closed.close();
  assert.equal(closed.check().ok, true);
  assert.equal(closed.eventLoopDelayMs(), 0);
});

/** Holds the main thread for `ms` (what a synchronous burst of work does to the event loop). */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('event-loop delay: one stall (one window) refuses nobody; a stall in two windows running does', async () => {
  const a = new AdmissionControl({ maxEventLoopDelayMs: 150, maxMediaQueue: 0, windowMs: 300 });
  try {
    await sleep(700);
    stall(500);
    // Checked through the next three windows: the stalled one is never judged alone.
    for (let i = 0; i < 6; i++) {
      assert.equal(a.check().ok, true, `a single stall refused a device (windows judged ${a.eventLoopDelayMs()} ms)`);
      await sleep(150);
    }
    // A loop that stalls window after window is refused.
    let refused = false;
    for (let i = 0; i < 8 && !refused; i++) {
      stall(400);
      // A breath between stalls: the delay monitor samples only when its own timer gets to run.
      await sleep(200);
      refused = !a.check().ok;
    }
    assert.equal(refused, true, 'stalls in consecutive windows refuse');
  } finally {
    a.close();
  }
});
