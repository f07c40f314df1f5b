// The session's turn budget on a clock moved by hand: a sliding 60 s window, one notice per window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TurnBudget } from '../../../voice/conversation/turn-budget.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

test('three turns a minute: the fourth is refused with one notice, and a slot frees 60 s after the oldest turn', async () => {
  const clock = new ManualClock(0);
  const budget = new TurnBudget({ maxTurns: 3, now: () => clock.now() });
  assert.deepEqual([budget.take(), budget.take()], ['start', 'start']);
  await clock.advance(10_000);
  assert.equal(budget.take(), 'start');
  assert.equal(budget.take(), 'notify', 'the first refusal is told');
  assert.equal(budget.take(), 'refuse', 'later ones are silent');
  await clock.advance(49_999);
  assert.equal(budget.take(), 'refuse', 'the first two turns are 59.999 s old');
  await clock.advance(1);
  assert.equal(budget.take(), 'start', 'a slot freed by the first turn');
  assert.equal(budget.take(), 'start', 'and by the second');
  assert.equal(budget.take(), 'refuse', 'the notice was said less than 60 s ago');
  await clock.advance(10_000);
  assert.equal(budget.take(), 'start', 'the third turn is 60 s old');
  assert.equal(budget.take(), 'notify', 'the notice is 60 s old: told again');
  assert.equal(budget.take(), 'refuse');
});

test('allows() only looks; record() counts (an early start committed)', () => {
  const clock = new ManualClock(0);
  const budget = new TurnBudget({ maxTurns: 1, now: () => clock.now() });
  assert.equal(budget.allows(), true);
  assert.equal(budget.allows(), true);
  budget.record();
  assert.equal(budget.allows(), false);
  assert.equal(budget.take(), 'notify');
});

test('maxTurns 0: no limit', () => {
  const budget = new TurnBudget({ maxTurns: 0, now: () => 0 });
  for (let i = 0; i < 1000; i++) assert.equal(budget.take(), 'start');
});
