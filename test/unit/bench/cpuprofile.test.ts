/**
 * The profile summary charges each sample to the deepest frame of its stack that belongs to a
 * known part of the server (a native SQLite call made through kysely from store code is SQLite;
 * pino's JSON under a store call is logging), ranks functions by self time, leaves idle out of
 * the busy time, and finds the stretches in which the thread never went idle (a stalled loop).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shortUrl, summarize } from '../../bench/sim/cpuprofile.ts';
import { threadOf } from '../../bench/cpuprofile-summary.ts';

const REPO = 'file:///work/x';
const node = (id: number, functionName: string, url: string, children: number[] = []): Record<string, unknown> => ({
  id,
  callFrame: { functionName, url, lineNumber: 9, columnNumber: 0 },
  children,
});

/** A tiny profile: root → idle; root → store write → kysely driver → native run; root → store → pino → native stringify; root → GC. */
function profile(samples: number[], deltaUs = 1000): string {
  return JSON.stringify({
    nodes: [
      node(1, '(root)', '', [2, 3, 7, 8]),
      node(2, '(idle)', ''),
      node(3, 'writeSession', `${REPO}/store/live-sessions.ts`, [4, 5]),
      node(4, 'executeQuery', `${REPO}/node_modules/kysely/dist/esm/dialect/sqlite/sqlite-driver.js`, [6]),
      node(5, 'info', `${REPO}/node_modules/pino/lib/proto.js`, [9]),
      node(6, 'run', ''),
      node(7, '(garbage collector)', ''),
      node(8, 'compileQuery', `${REPO}/node_modules/kysely/dist/esm/query-compiler/default-query-compiler.js`),
      node(9, 'stringify', ''),
    ],
    startTime: 0,
    endTime: samples.length * deltaUs,
    samples,
    timeDeltas: samples.map(() => deltaUs),
  });
}

test('cpuprofile: a sample counts for the deepest known part of its stack; idle is not busy; self time ranks functions', () => {
  // 4 ms idle, 3 ms native run under kysely's sqlite driver, 2 ms JSON under pino under store, 1 ms kysely compile, 1 ms GC.
  const s = summarize([profile([2, 2, 2, 2, 6, 6, 6, 9, 9, 8, 7])]);
  assert.equal(Math.round(s.idleMs), 4);
  assert.equal(Math.round(s.busyMs), 7);
  const part = (name: string): number => Math.round(s.parts.find((p) => p.part.startsWith(name))?.ms ?? 0);
  assert.equal(part('SQLite'), 3, 'native run under the sqlite driver');
  assert.equal(part('logging'), 2, 'JSON under pino under store code is logging, not store');
  assert.equal(part('kysely'), 1);
  assert.equal(part('garbage collector'), 1);
  assert.equal(part('store (our code)'), 0, 'nothing ran in store code itself');
  assert.deepEqual(
    s.functions.slice(0, 2).map((f) => [f.name, f.where, Math.round(f.selfMs)]),
    [
      ['run', '(native)', 3],
      ['stringify', '(native)', 2],
    ],
  );
});

test('cpuprofile: a busy stretch of 50 ms or more between idle samples is a stall, with its parts', () => {
  const busy = Array.from({ length: 60 }, () => 6);
  const s = summarize([profile([2, ...busy, 2, 8, 8, 2, ...Array.from({ length: 80 }, () => 9), 2])]);
  assert.equal(s.stalls.length, 2, 'the 2 ms stretch is not a stall');
  assert.equal(Math.round(s.stalls[0]?.ms ?? 0), 80, 'longest first');
  assert.equal(s.stalls[0]?.parts[0]?.part, 'logging (pino)');
  assert.equal(Math.round(s.stalls[1]?.ms ?? 0), 60);
  assert.equal(Math.round(s.stalls[1]?.atMs ?? 0), 2, 'starts after the first idle sample');
});

test('cpuprofile: paths are cut to the package or the repository folder; node names its threads in the file name', () => {
  assert.equal(shortUrl(`${REPO}/node_modules/kysely/dist/x.js`), 'kysely/dist/x.js');
  assert.equal(shortUrl(`${REPO}/store/writer.ts`), 'store/writer.ts');
  assert.equal(shortUrl(''), '(native)');
  assert.equal(threadOf('/tmp/p/CPU.20261129.053728.3088.0.001.cpuprofile'), 0);
  assert.equal(threadOf('CPU.20261129.053728.3088.4.007.cpuprofile'), 4);
  assert.equal(threadOf('trace.json'), null);
  assert.throws(() => summarize(['{"nodes": 3}']), /not a .cpuprofile/);
});

test('cpuprofile: a window keeps only the samples between its bounds, on the clock all threads share', () => {
  // Samples at 1, 2, … 11 ms after startTime 0: idle ×4, run ×3, stringify ×2, compile, GC.
  const text = profile([2, 2, 2, 2, 6, 6, 6, 9, 9, 8, 7]);
  const s = summarize([text], { originUs: 0, fromMs: 5, toMs: 8 });
  assert.equal(Math.round(s.idleMs), 0);
  assert.equal(Math.round(s.busyMs), 3, 'the three native runs at 5, 6 and 7 ms');
  assert.equal(Math.round(s.wallMs), 3);
  // The same window seen from a clock that started 2 ms earlier (another thread's profile).
  const shifted = summarize([text], { originUs: -2000, fromMs: 7, toMs: 10 });
  assert.equal(Math.round(shifted.busyMs), 3);
});
