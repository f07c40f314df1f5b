/**
 * The store's cost on the event loop at a burst of hellos (SQLite file, WAL, as the server runs
 * it): N devices each seen and given a live-session row, as the OTA route and a session's open do,
 * then the same sessions removed. Printed: main-thread busy ms for the whole burst (event-loop
 * utilisation, so time spent waiting for a batch's tick does not count), its longest stall, and
 * the cost of one idle change-feed poll (`PRAGMA data_version`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import { silentLogger } from '../../core/logger.ts';
import { openStore } from '../../store/store.ts';

const mac = (i: number): string =>
  `a0:00:00:00:${String(Math.floor(i / 100)).padStart(2, '0')}:${String(i % 100).padStart(2, '0')}`;

async function burst(n: number): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-store-'));
  const store = await openStore({
    url: 'sqlite:bench.db',
    dataDir,
    secret: '',
    codeTtlMs: 600_000,
    pendingPerSource: 3,
    replica: 'bench',
    log: silentLogger,
  });
  try {
    // Every device known once (a fleet that booted before): the burst updates, as a real one does.
    await Promise.all(
      Array.from({ length: n }, (_, i) => store.devices.seen({ deviceId: mac(i), clientId: `c-${i}` })),
    );
    const rounds = 4;
    let busy = 0;
    let maxStall = 0;
    for (let r = 0; r < rounds; r++) {
      // The longest the loop went without turning: a 1 ms timer's longest gap (what a device's audio would wait).
      let last = performance.now();
      let gap = 0;
      const tick = setInterval(() => {
        const now = performance.now();
        gap = Math.max(gap, now - last);
        last = now;
      }, 1);
      const elu0 = performance.eventLoopUtilization();
      const since = new Date().toISOString();
      const done: Array<Promise<void>> = [];
      for (let i = 0; i < n; i++) {
        done.push(store.devices.seen({ deviceId: mac(i), clientId: `c-${i}` }));
        done.push(
          store.sessions.add({
            sessionId: `s-${r}-${i}`,
            deviceId: mac(i),
            clientId: `c-${i}`,
            agent: null,
            replica: 'bench',
            since,
          }),
        );
      }
      await Promise.all(done);
      await Promise.all(Array.from({ length: n }, (_, i) => store.sessions.remove(`s-${r}-${i}`)));
      const elu = performance.eventLoopUtilization(elu0);
      // A burst that never let the loop turn is one stall as long as itself.
      gap = Math.max(gap, performance.now() - last);
      clearInterval(tick);
      // The first round warms the code up (JIT, prepared statements) and is not counted.
      if (r === 0) continue;
      busy += elu.active;
      maxStall = Math.max(maxStall, gap);
    }
    console.log(
      `store burst of ${n} hellos (seen + live session + its removal): ${(busy / (rounds - 1)).toFixed(1)} ms main-thread busy, longest stall ${maxStall.toFixed(1)} ms`,
    );
    // The reads each hello still makes: its memory (turns, facts, summary) and its waiting messages.
    const elu0 = performance.eventLoopUtilization();
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const pair = { deviceId: mac(i), clientId: `c-${i}` };
        await Promise.all([
          store.memory.recentTurns(pair, 'home', 40),
          store.memory.facts(pair, 'home'),
          store.memory.summary(pair, 'home'),
          store.pushMessages.claimFor(mac(i), `c-${i}`, 'bench'),
        ]);
      }),
    );
    console.log(
      `store reads of ${n} hellos (memory: turns, facts, summary; waiting messages): ${performance.eventLoopUtilization(elu0).active.toFixed(1)} ms main-thread busy`,
    );
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function feedPoll(): void {
  const dir = mkdtempSync(join(tmpdir(), 'bench-feed-'));
  const db = new BetterSqlite3(join(dir, 'f.db'));
  db.pragma('journal_mode = WAL');
  const n = 20_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) db.pragma('data_version', { simple: true });
  const us = ((performance.now() - t0) * 1000) / n;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(`change feed idle poll (PRAGMA data_version): ${us.toFixed(2)} µs, every 500 ms`);
}

export async function run(): Promise<void> {
  feedPoll();
  for (const n of [200, 1000]) await burst(n);
}
