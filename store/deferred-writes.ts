/**
 * @module The writes the hot path makes without waiting: a device seen (OTA, a session's open)
 * and this replica's live sessions (added at open, removed at the end). They are queued in one
 * `WriteBatcher` per store and stored together, one transaction per tick (`flushMs`, default
 * 1 s): a burst of hundreds of hellos costs the event loop one commit a second, not a few
 * statements each. Per tick a device's record and a session's row are written once (the newest
 * wins), so `last_seen` moves at most once per tick and lands within it.
 */
import type { Kysely } from 'kysely';
import type { Logger } from '../core/logger.ts';
import type { Database } from './schema.ts';
import type { Writer } from './writer.ts';
import { WriteBatcher } from './write-batcher.ts';
import { writeSeen, type SeenWrite } from './device-records.ts';
import { writeLiveSession, type LiveSessionWrite } from './live-sessions.ts';

export type DeferredWrite = SeenWrite | LiveSessionWrite;

/** How often the queued writes are stored, by default (ms). */
export const DEFERRED_FLUSH_MS = 1000;

function keyOf(w: DeferredWrite): string {
  return w.kind === 'seen' ? `seen\n${w.deviceId}` : `session\n${w.sessionId}`;
}

/** A device seen twice in a tick: the newer stamp, and what either sighting told of its board and firmware. */
function merge(older: DeferredWrite, newer: DeferredWrite): DeferredWrite {
  if (older.kind !== 'seen' || newer.kind !== 'seen') return newer;
  return {
    ...newer,
    board: newer.board !== undefined ? newer.board : older.board,
    firmware: newer.firmware !== undefined ? newer.firmware : older.firmware,
  };
}

async function writeAll(trx: Kysely<Database>, items: readonly DeferredWrite[]): Promise<void> {
  for (const w of items) {
    if (w.kind === 'seen') await writeSeen(trx, w);
    else await writeLiveSession(trx, w);
  }
}

export function deferredWrites(
  writer: Writer,
  log: Logger,
  flushMs: number = DEFERRED_FLUSH_MS,
): WriteBatcher<DeferredWrite> {
  return new WriteBatcher<DeferredWrite>({
    write: (items) => writer.write((trx) => writeAll(trx, items)),
    log,
    what: 'device records and live sessions',
    flushMs,
    // One transaction holds the event loop while SQLite runs it: 100 rows are a few ms; the
    // batcher lets the loop turn between transactions.
    maxBatch: 100,
    // A burst is written at its tick (a device's OTA and its hello coalesce); only a very long
    // queue is written before.
    flushAt: 2000,
    keyOf,
    merge,
  });
}
