import { test } from 'node:test';
import assert from 'node:assert/strict';
import { versionAtLeast } from '../../../../features/push/firmware-version.ts';

test('versionAtLeast compares the leading numeric dotted part; unknown versions are not new enough', () => {
  assert.equal(versionAtLeast('2.5.0', '2.5.0'), true);
  assert.equal(versionAtLeast('2.5', '2.5.0'), true);
  assert.equal(versionAtLeast('2.10.1', '2.5.0'), true);
  assert.equal(versionAtLeast('3.0.0-rc1', '2.5.0'), true);
  assert.equal(versionAtLeast('v2.5.1', '2.5.0'), true);
  assert.equal(versionAtLeast('2.4.2', '2.5.0'), false);
  assert.equal(versionAtLeast('1.9.9', '2.5.0'), false);
  assert.equal(versionAtLeast('', '2.5.0'), false);
  assert.equal(versionAtLeast(null, '2.5.0'), false);
  assert.equal(versionAtLeast('unknown', '2.5.0'), false);
});
