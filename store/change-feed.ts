/**
 * @module How a write made by one process reaches the others: every write records what it changed
 * (`record`, inside its transaction); `start` delivers the changes other processes made.
 * SQLite: a table polled cheaply (sqlite-feed.ts); PostgreSQL: LISTEN/NOTIFY (postgres-feed.ts).
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { StoreChange } from './types.ts';

export interface ChangeFeedHandlers {
  /** Changes made by another process, in order. */
  changes(changes: StoreChange[]): void;
  /** Changes may have been missed (the listening connection was lost): reload everything. */
  resync(): void;
}

export interface ChangeFeed {
  /** Records a change as part of the write `db` (a transaction) makes. */
  record(db: Kysely<Database>, change: StoreChange): Promise<void>;
  /** Starts delivering other processes' changes. */
  start(handlers: ChangeFeedHandlers): Promise<void>;
  close(): Promise<void>;
}

/** A change as carried between processes: JSON with the writer's origin, so a process skips its own. */
export interface FeedMessage {
  o: string;
  c: StoreChange;
}

export function parseFeedMessage(text: string): FeedMessage | null {
  try {
    const m = JSON.parse(text) as Partial<FeedMessage>;
    const c = m.c as Partial<StoreChange> | undefined;
    if (typeof m.o !== 'string' || !c || typeof c !== 'object') return null;
    if (c.kind === 'agent' && typeof c.name === 'string') return { o: m.o, c: { kind: 'agent', name: c.name } };
    if (c.kind === 'device' && typeof c.deviceId === 'string')
      return { o: m.o, c: { kind: 'device', deviceId: c.deviceId } };
    if (c.kind === 'memory' && typeof c.deviceId === 'string')
      return {
        o: m.o,
        c: {
          kind: 'memory',
          deviceId: c.deviceId,
          ...(typeof c.clientId === 'string' ? { clientId: c.clientId } : {}),
        },
      };
    if (c.kind === 'push' && typeof c.id === 'string' && typeof c.deviceId === 'string')
      return { o: m.o, c: { kind: 'push', id: c.id, deviceId: c.deviceId } };
    if (c.kind === 'binding' && typeof c.deviceId === 'string' && typeof c.clientId === 'string')
      return { o: m.o, c: { kind: 'binding', deviceId: c.deviceId, clientId: c.clientId } };
    return null;
  } catch {
    return null;
  }
}
