/**
 * Runs code that arms ordinary timers (`setTimeout`, `Date.now()`) on `node:test`'s mock timers:
 * time moves only as the test moves it, so a duration is asserted exactly and costs no real time.
 *
 * Mock timers fire every timer due within one `tick` synchronously, before any promise settles;
 * stepping 1 ms at a time with a real turn of the event loop in between lets the promise chain a
 * timer starts (a retry after a timeout) arm its next timer at the right mocked time.
 */
import type { TestContext } from 'node:test';

type MockTimers = TestContext['mock']['timers'];

/** Captured at load: a test that mocks `setImmediate` too must not stall the stepping. */
const realSetImmediate = globalThis.setImmediate;
const turn = (): Promise<void> => new Promise((r) => realSetImmediate(r));

/** Mocks `setTimeout`, `setInterval` and `Date` for the rest of the test `t`, starting at 0 ms. */
export function mockTime(t: TestContext): MockTimers {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: 0 });
  return t.mock.timers;
}

/**
 * Moves mocked time forward 1 ms at a time until `p` settles and returns its outcome; fails,
 * naming `what`, after `maxMs` of mocked time.
 */
export async function runMocked<T>(timers: MockTimers, p: Promise<T>, what: string, maxMs = 600_000): Promise<T> {
  let settled = false;
  const watched = p.finally(() => {
    settled = true;
  });
  await turn();
  for (let ms = 0; !settled; ms++) {
    if (ms >= maxMs) throw new Error(`${what}: still pending after ${maxMs} ms of mocked time`);
    timers.tick(1);
    await turn();
  }
  return watched;
}

/** Moves mocked time forward by `ms`, 1 ms at a time, letting the event loop turn in between. */
export async function advanceMocked(timers: MockTimers, ms: number): Promise<void> {
  for (let i = 0; i < ms; i++) {
    timers.tick(1);
    await turn();
  }
}
