/**
 * @module Fires reminders at their time. Every replica polls the store for due rows (one indexed
 * query a second; a full batch is followed by the next at once), claims each with one conditional
 * UPDATE (so exactly one replica fires it) and speaks it through `Push.say`, which reaches the
 * device wherever it is connected, or queues it. A delivered reminder is deleted; one that could
 * not be delivered (the device offline with the push queue off) is tried again later, and one
 * claimed more than `staleAfterMs` past its time (after a long downtime, or refused that long) is
 * dropped and logged instead of spoken. A claim whose replica died while firing is given back
 * after a minute (looked for every 30 s). Rows live in the database, so reminders survive restarts.
 */
import type { Logger } from '../../core/logger.ts';
import type { Reminder, RemindersStore } from '../../store/reminders.ts';
import type { Push, SayOutcome } from '../push/index.ts';

export interface ReminderSchedulerOptions {
  store: RemindersStore;
  /** The one delivery API. */
  push: Push;
  /** This process's id in claims. */
  replica: string;
  /** A reminder not delivered this long after its time is dropped, ms. */
  staleAfterMs: number;
  /** What the device says for a reminder (in its agent's language). */
  spoken: (deviceId: string, text: string) => string;
  log: Logger;
  /** Wall-clock time, ms since the epoch (tests move it by hand). */
  now?: () => number;
  /** Between polls, ms; default 1000. */
  pollMs?: number;
  /** A reminder whose delivery was refused or failed is tried again this much later, ms; default 30 s. */
  retryMs?: number;
  /** A claim older than this is taken to be abandoned by a replica that died, ms; default 60 s. */
  abandonedAfterMs?: number;
  /** Reminders claimed per query; default 20 (a full batch is followed by the next at once). */
  batch?: number;
}

/** Batches one poll goes through at most before giving the event loop back until the next. */
const MAX_BATCHES_PER_POLL = 10;
/** How often abandoned claims are looked for, ms. */
const ABANDONED_CHECK_MS = 30_000;

/** Refusals that no later try can change: the reminder is dropped at once. */
const FINAL_REFUSALS: ReadonlySet<SayOutcome['reason']> = new Set(['unknown_device', 'empty']);

export class ReminderScheduler {
  readonly #o: ReminderSchedulerOptions;
  readonly #now: () => number;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;
  #stopped = false;
  /** When abandoned claims were last looked for. */
  #checkedAbandoned = -Infinity;

  constructor(opts: ReminderSchedulerOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
    this.#log = opts.log.child({ part: 'reminders' });
  }

  /** Polls every `pollMs` until `stop`. */
  start(): void {
    if (this.#stopped || this.#timer) return;
    const pollMs = this.#o.pollMs ?? 1000;
    const loop = (): void => {
      this.#timer = setTimeout(() => {
        void this.tick().finally(() => {
          if (!this.#stopped) loop();
        });
      }, pollMs);
    };
    loop();
  }

  /** Stops polling and waits for a poll in progress (its deliveries) to end. No timer is left. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
  }

  /** One poll: fires the due reminders (and now and then gives back abandoned claims). Returns how many were delivered. */
  tick(): Promise<number> {
    // One poll at a time: a slow delivery delays the next poll rather than overlapping it.
    this.#running ??= this.#poll()
      .catch((err: unknown) => {
        this.#log.warn({ err: (err as Error).message }, 'reminders: poll failed (database unreachable?)');
        return 0;
      })
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  async #poll(): Promise<number> {
    const { store } = this.#o;
    const now = this.#now();
    if (now - this.#checkedAbandoned >= ABANDONED_CHECK_MS) {
      this.#checkedAbandoned = now;
      const back = await store.releaseAbandoned(now - (this.#o.abandonedAfterMs ?? 60_000));
      if (back > 0) this.#log.warn({ reminders: back }, 'reminders: claims abandoned by a stopped replica given back');
    }
    const batch = this.#o.batch ?? 20;
    let delivered = 0;
    for (let i = 0; i < MAX_BATCHES_PER_POLL && !this.#stopped; i++) {
      const due = await store.due(now, batch);
      const fired = await Promise.all(due.map((r) => this.#fire(r, now)));
      delivered += fired.filter(Boolean).length;
      if (due.length < batch) break;
    }
    return delivered;
  }

  async #fire(r: Reminder, polledAt: number): Promise<boolean> {
    const { store, replica } = this.#o;
    // The claim carries the time it is made, not the poll's: a poll's later batches come after
    // earlier deliveries, and a claim stamped with the poll's start would look abandoned to
    // another replica (and be fired twice).
    const now = Math.max(polledAt, this.#now());
    if (!(await store.claim(r.id, replica, now))) return false;
    if (now - r.dueMs > this.#o.staleAfterMs) {
      await store.delivered(r.id, replica);
      this.#dropped(r, 'stale');
      return false;
    }
    let outcome: SayOutcome;
    try {
      outcome = await this.#o.push.say({
        deviceId: r.deviceId,
        clientId: r.clientId,
        text: this.#o.spoken(r.deviceId, r.text),
        source: 'reminder',
      });
    } catch (err) {
      this.#log.warn(
        { id: r.id, deviceId: r.deviceId, err: (err as Error).message },
        'reminders: delivery failed; trying again later',
      );
      await store.release(r.id, replica, now + (this.#o.retryMs ?? 30_000));
      return false;
    }
    if (outcome.status !== 'refused') {
      await store.delivered(r.id, replica);
      this.#log.info(
        {
          id: r.id,
          deviceId: r.deviceId,
          status: outcome.status,
          lateMs: Math.max(0, now - r.dueMs),
          pii: { text: r.text },
        },
        'reminders: delivered',
      );
      return true;
    }
    if (FINAL_REFUSALS.has(outcome.reason)) {
      await store.delivered(r.id, replica);
      this.#dropped(r, outcome.reason ?? 'refused');
      return false;
    }
    this.#log.info(
      { id: r.id, deviceId: r.deviceId, reason: outcome.reason },
      'reminders: not delivered; trying again later',
    );
    await store.release(r.id, replica, now + (this.#o.retryMs ?? 30_000));
    return false;
  }

  #dropped(r: Reminder, why: string): void {
    this.#log.warn(
      { id: r.id, deviceId: r.deviceId, due: new Date(r.dueMs).toISOString(), why, pii: { text: r.text } },
      'reminders: dropped undelivered',
    );
  }
}
