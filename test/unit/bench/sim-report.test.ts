/**
 * The simulator's report warns about a step on a host that took a share of the CPUs for other
 * guests: those timing figures say more about the neighbours than about the server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NOISY_HOST_STEAL_PCT, stealWarning } from '../../bench/sim/report.ts';

test('sim report: a step with the hypervisor taking 2 % or more of the CPUs is flagged, a quiet one is not', () => {
  assert.equal(NOISY_HOST_STEAL_PCT, 2);
  assert.equal(stealWarning(1, 0), null, 'bare metal');
  assert.equal(stealWarning(1, 1.9), null, 'a quiet host');
  assert.equal(stealWarning(2, null), null, 'not measured (not Linux)');
  const w = stealWarning(2, 9.04);
  assert.ok(w !== null && w.startsWith('step 2: the hypervisor took 9.0 % of the CPUs'), String(w));
  assert.ok(stealWarning(3, 2) !== null, 'the threshold itself is flagged');
});
