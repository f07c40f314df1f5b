/** Which shutdown signal is a new request and which is npm's forwarded copy of the first. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REPEAT_WINDOW_MS, ShutdownSignals } from '../../../server/shutdown-signals.ts';

function clocked(): { signals: ShutdownSignals; advance(ms: number): void } {
  let t = 0;
  return { signals: new ShutdownSignals({ now: () => t }), advance: (ms) => (t += ms) };
}

test('the first signal drains; a copy within the window is ignored; a third forces', () => {
  const { signals, advance } = clocked();
  assert.equal(signals.receive(), 'drain');
  advance(40);
  assert.equal(signals.receive(), 'duplicate');
  advance(40);
  assert.equal(signals.receive(), 'force', 'a second Ctrl-C through npm, however soon');
});

test('a second signal after the window forces', () => {
  const { signals, advance } = clocked();
  assert.equal(signals.receive(), 'drain');
  advance(REPEAT_WINDOW_MS);
  assert.equal(signals.receive(), 'force');
});
