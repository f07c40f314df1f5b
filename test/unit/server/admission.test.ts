/** AdmissionControl's decision on the media-queue signal: limits, hysteresis, a broken source, close. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdmissionControl } from '../../../server/admission.ts';

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
