/**
 * @module The one `Push` of a process: delivers a `say` to a device wherever it is, in this order:
 * 1. a session open here (hello done): the conversation speaks it now or after its turn;
 * 2. an idle MQTT link here: `notify` (audio by URL) for firmware from `push.notifyMinVersion`
 *    on, else `alert` (the text on the screen);
 * 3. another replica: a `push_messages` row the change feed announces; the replica holding the
 *    device claims it (one conditional update), delivers, and writes how it went, which this
 *    replica waits for (HAND_OVER_WAIT_MS);
 * 4. nobody: the row stays for `push.queueTtlMs` and is delivered when the device next opens a
 *    session (`onSessionOpened`) or connects to the broker; with the queue off, refused `offline`.
 * Per device `push.rate` (reminders exempt), `push.maxChars`; one audit log line per `say`, its
 * text only under `pii`.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Logger } from '../../core/logger.ts';
import { makeRoom } from '../../core/bounded-map.ts';
import { TokenBucket } from '../../core/token-bucket.ts';
import { DeviceIdSchema } from '../../protocol/ota.ts';
import type { PushSchema } from '../config-schema.ts';
import type { DeviceSession } from '../../voice/session/session.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import type { Store } from '../../store/store.ts';
import type { DeliveredState, PushMessage } from '../../store/push-messages.ts';
import type { StoreChange } from '../../store/types.ts';
import type { Push, PushSource, SayOutcome, SayRequest } from './push.ts';
import type { IdleDeviceLink, IdleDeviceLinks } from './idle-links.ts';
import { versionAtLeast } from './firmware-version.ts';
import { PUSH_AUDIO_PATH, type AudioClips } from './audio-clips.ts';

export type PushConfig = z.output<typeof PushSchema>;

/** How long the asking replica waits for another replica to deliver before answering `queued`. */
export const HAND_OVER_WAIT_MS = 3000;
/** Devices whose rate is tracked at once (the least recently added forgotten first). */
const MAX_RATED_DEVICES = 10_000;
/** How often the asking replica reads the row while waiting (besides the change feed). */
const POLL_MS = 250;
/**
 * How often each replica looks for waiting messages of devices it holds: what the change feed
 * did not announce (a PostgreSQL listener that was reconnecting, a SQLite feed that resynced)
 * is still delivered, a few seconds late.
 */
export const SWEEP_MS = 5000;
/** Waiting messages one sweep reads at most. */
const SWEEP_ROWS = 200;
/** How often a replica gives back messages claimed by replicas that stopped (crash, kill). */
const ORPHANS_EVERY_MS = 60_000;

export interface PushDeliveryOptions {
  config: PushConfig;
  /** `server.publicWsUrl`: its origin is the `notify` URL base when `push.publicHttpUrl` is empty. */
  publicWsUrl: string;
  registry: SessionRegistry;
  store: Pick<Store, 'pushMessages' | 'devices' | 'replica' | 'onChange'>;
  clips: AudioClips;
  /** The text in the device's agent's voice, as Ogg/Opus (`notify`); absent: idle devices get `alert`. */
  notifyAudio?: (deviceId: string, text: string) => Promise<Buffer>;
  log: Logger;
  now?: () => number;
  handOverWaitMs?: number;
  /** How often waiting messages of devices held here are looked for (SWEEP_MS). */
  sweepMs?: number;
}

/** The `notify` URL base (`http://host:port`), or '' when none is configured. */
export function audioUrlBase(publicHttpUrl: string, publicWsUrl: string): string {
  const given = publicHttpUrl || publicWsUrl;
  if (!given) return '';
  try {
    const u = new URL(given);
    const protocol = u.protocol === 'wss:' ? 'https:' : u.protocol === 'ws:' ? 'http:' : u.protocol;
    if (publicHttpUrl) return given.replace(/\/+$/, '');
    return `${protocol}//${u.host}`;
  } catch {
    return '';
  }
}

export class PushDelivery implements Push {
  readonly #o: PushDeliveryOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #rates = new Map<string, TokenBucket>();
  readonly #unsubscribe: Array<() => void> = [];
  readonly #closing = new AbortController();
  readonly #waiters = new Map<string, () => void>();
  #links: IdleDeviceLinks | undefined;
  readonly #urlBase: string;
  #warnedNoUrl = false;
  readonly #sweep: NodeJS.Timeout;
  #sweeping = false;
  #releasedOrphans = 0;

  constructor(o: PushDeliveryOptions) {
    this.#o = o;
    this.#log = o.log;
    this.#now = o.now ?? Date.now;
    this.#urlBase = audioUrlBase(o.config.publicHttpUrl, o.publicWsUrl);
    this.#unsubscribe.push(o.store.onChange((c) => this.#onChange(c)));
    this.#sweep = setInterval(() => void this.#sweepHeld(), o.sweepMs ?? SWEEP_MS);
    this.#sweep.unref();
  }

  /**
   * Claims and delivers the waiting messages of devices held here that nobody announced, and
   * (once a minute) gives back messages a stopped replica had claimed but not delivered.
   */
  async #sweepHeld(): Promise<void> {
    if (this.#sweeping || this.#closing.signal.aborted) return;
    this.#sweeping = true;
    try {
      const { pushMessages, replica } = this.#o.store;
      if (this.#now() - this.#releasedOrphans >= ORPHANS_EVERY_MS) {
        this.#releasedOrphans = this.#now();
        const back = await pushMessages.releaseOrphaned(replica);
        if (back > 0) this.#log.warn({ messages: back }, 'push: messages claimed by a stopped replica given back');
      }
      // The devices held here, once per sweep (not a scan of every session per waiting row).
      const sessions = new Set<string>();
      for (const x of this.#o.registry.list()) if (!x.ended && x.helloDone && x.deviceId) sessions.add(x.deviceId.toLowerCase());
      for (const m of await pushMessages.pending(SWEEP_ROWS)) {
        const d = m.deviceId.toLowerCase();
        if (!sessions.has(d) && this.#idleLink(d, null) === undefined) continue;
        const claimed = await this.#o.store.pushMessages.claim(m.id, this.#o.store.replica);
        if (claimed) await this.#deliverClaimed(claimed, {});
      }
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, 'push: looking for waiting messages failed');
    } finally {
      this.#sweeping = false;
    }
  }

  /** The MQTT transport's idle devices: `say` reaches them, and they get their queued messages when they connect. */
  useIdleLinks(links: IdleDeviceLinks): void {
    this.#links = links;
    this.#unsubscribe.push(links.onConnected((link) => void this.#deliverQueued(link.deviceId, link.clientId, { link })));
  }

  /**
   * Told about every session opened (the WebSocket route's hook; MQTT sessions call it too): once
   * its hello is answered, the device's queued messages are spoken, oldest first.
   */
  readonly onSessionOpened = (s: { sessionId: string; deviceId: string | null; clientId: string | null }): void => {
    const session = this.#o.registry.list().find((x) => x.id === s.sessionId);
    const device = DeviceIdSchema.safeParse(s.deviceId);
    if (!session || !device.success) return;
    void session.greeted.then((ok) => {
      if (ok) void this.#deliverQueued(device.data, s.clientId, { session });
    });
  };

  async say(req: SayRequest): Promise<SayOutcome> {
    const chars = req.text.length;
    const outcome = await this.#say(req).catch((err: unknown) => {
      this.#log.error({ err: err instanceof Error ? err.message : String(err), deviceId: req.deviceId }, 'push: say failed');
      throw err;
    });
    // The audit line: who asked what for whom, and how it went; the words only under `pii`.
    this.#log.info({ deviceId: req.deviceId, clientId: req.clientId, source: req.source, status: outcome.status, ...(outcome.reason ? { reason: outcome.reason } : {}), ...(outcome.replica ? { replica: outcome.replica } : {}), ...(outcome.id ? { id: outcome.id } : {}), chars, interrupt: req.interrupt === true, pii: { text: req.text } }, 'push: say');
    return outcome;
  }

  async #say(req: SayRequest): Promise<SayOutcome> {
    const cfg = this.#o.config;
    const trimmed = req.text.trim();
    if (!trimmed) return { status: 'refused', reason: 'empty' };
    const text = cutChars(trimmed, cfg.maxChars);
    const parsed = DeviceIdSchema.safeParse(req.deviceId);
    if (!parsed.success) return { status: 'refused', reason: 'unknown_device' };
    const deviceId = parsed.data;
    const clientId = req.clientId?.toLowerCase() ?? null;
    const session = this.#session(deviceId, clientId);
    const link = session ? undefined : this.#idleLink(deviceId, clientId);
    if (!session && !link && !(await this.#o.store.devices.get(deviceId))) return { status: 'refused', reason: 'unknown_device' };
    if (!this.#allowed(deviceId, req.source)) return { status: 'refused', reason: 'rate_limited' };
    const replica = this.#o.store.replica;
    if (session) {
      const how = session.say(text, { interrupt: req.interrupt === true });
      if (how) return { status: how, replica };
    }
    if (link) {
      const how = await this.#notify(link, text, req.source);
      if (how) return { status: how, replica };
    }
    return this.#handOver({ deviceId, clientId, text, interrupt: req.interrupt === true, source: req.source });
  }

  /** Rows: another replica may hold the device; else it waits for the device (or is refused). */
  async #handOver(m: { deviceId: string; clientId: string | null; text: string; interrupt: boolean; source: PushSource }): Promise<SayOutcome> {
    const { pushMessages } = this.#o.store;
    const ttl = this.#o.config.queueTtlMs;
    const others = await pushMessages.othersAlive(this.#o.store.replica);
    if (!others && ttl === 0) return { status: 'refused', reason: 'offline' };
    const wait = this.#o.handOverWaitMs ?? HAND_OVER_WAIT_MS;
    const id = randomUUID();
    const { expired, dropped } = await pushMessages.add({ id, ...m, expiresMs: this.#now() + (ttl > 0 ? ttl : 2 * wait) }, this.#o.config.maxQueuedPerDevice);
    if (expired > 0) this.#log.info({ expired }, 'push: queued messages expired unheard (push.queueTtlMs)');
    if (dropped > 0) this.#log.warn({ deviceId: m.deviceId, dropped, max: this.#o.config.maxQueuedPerDevice }, 'push: too many messages waiting for the device: the oldest dropped');
    if (!others) return { status: 'queued', id };
    let done = await this.#waitDelivered(id, wait);
    if (done) return done;
    if (ttl === 0) {
      // Nobody claimed it in time: withdrawn, unless a replica claimed it just now (then it is delivering).
      if (await pushMessages.cancel(id)) return { status: 'refused', reason: 'offline' };
    } else if ((await pushMessages.get(id))?.state !== 'claimed') {
      return { status: 'queued', id };
    }
    done = await this.#waitDelivered(id, wait);
    if (done) return done;
    // The queue is off: a message the holder gave back (its device left) is withdrawn, not kept.
    if (ttl === 0 && (await pushMessages.cancel(id))) return { status: 'refused', reason: 'offline' };
    return { status: 'queued', id };
  }

  /** The outcome once a replica has delivered message `id`, or undefined after `ms`. */
  async #waitDelivered(id: string, ms: number): Promise<SayOutcome | undefined> {
    const until = this.#now() + ms;
    for (;;) {
      const row = await this.#o.store.pushMessages.get(id);
      if (row && isDelivered(row.state)) return { status: row.state, ...(row.claimedBy ? { replica: row.claimedBy } : {}) };
      const left = until - this.#now();
      if (left <= 0 || this.#closing.signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Math.min(POLL_MS, left));
        function done(): void {
          clearTimeout(t);
          resolve();
        }
        this.#waiters.set(id, done);
      });
      this.#waiters.delete(id);
    }
  }

  /** The change feed: a message for a device held here is claimed and delivered; an outcome wakes its asker. */
  #onChange(c: StoreChange): void {
    if (c.kind !== 'push') return;
    this.#waiters.get(c.id)?.();
    if (!this.#holds(c.deviceId)) return;
    void (async () => {
      const m = await this.#o.store.pushMessages.claim(c.id, this.#o.store.replica);
      if (m) await this.#deliverClaimed(m, {});
    })().catch((err: unknown) => this.#log.warn({ err: err instanceof Error ? err.message : String(err), id: c.id }, 'push: a message for a device here could not be delivered'));
  }

  /** The device's queued messages, claimed here and delivered through `to` (or wherever it is held). */
  async #deliverQueued(rawDeviceId: string, clientId: string | null, to: { session?: DeviceSession; link?: IdleDeviceLink }): Promise<void> {
    try {
      const deviceId = rawDeviceId.toLowerCase();
      const messages = await this.#o.store.pushMessages.claimFor(deviceId, clientId?.toLowerCase() ?? null, this.#o.store.replica);
      for (const m of messages) await this.#deliverClaimed(m, to);
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : String(err), deviceId: rawDeviceId }, 'push: queued messages could not be delivered');
    }
  }

  async #deliverClaimed(m: PushMessage, to: { session?: DeviceSession; link?: IdleDeviceLink }): Promise<void> {
    const source: PushSource = m.source === 'reminder' ? 'reminder' : 'admin';
    let how: DeliveredState | undefined;
    const session = to.session && !to.session.ended ? to.session : this.#session(m.deviceId, m.clientId);
    if (session) how = session.say(m.text, { interrupt: m.interrupt });
    if (!how) {
      const link = to.link && !to.link.inSession ? to.link : this.#idleLink(m.deviceId, m.clientId);
      if (link) how = await this.#notify(link, m.text, source);
    }
    if (!how) {
      // Gone before it could hear it: the message waits for its next connection.
      await this.#o.store.pushMessages.release(m.id);
      return;
    }
    await this.#o.store.pushMessages.finish(m.id, how);
    this.#log.info({ deviceId: m.deviceId, id: m.id, source, status: how, waitedMs: Math.max(0, this.#now() - m.createdMs) }, 'push: queued message delivered');
  }

  /** A session here with its hello done: the pair's when clientId is given, else the newest of the MAC. */
  #session(deviceId: string, clientId: string | null): DeviceSession | undefined {
    let found: DeviceSession | undefined;
    for (const s of this.#o.registry.list()) {
      if (s.ended || !s.helloDone || s.deviceId?.toLowerCase() !== deviceId) continue;
      if (clientId !== null && s.clientId?.toLowerCase() !== clientId) continue;
      found = s;
    }
    return found;
  }

  #idleLink(deviceId: string, clientId: string | null): IdleDeviceLink | undefined {
    const link = this.#links?.find(deviceId, clientId ?? undefined);
    return link && !link.inSession ? link : undefined;
  }

  #holds(deviceId: string): boolean {
    const d = deviceId.toLowerCase();
    return this.#session(d, null) !== undefined || this.#idleLink(d, null) !== undefined;
  }

  /** Reminders always pass; anyone else spends the device's bucket. */
  #allowed(deviceId: string, source: PushSource): boolean {
    if (source === 'reminder') return true;
    let bucket = this.#rates.get(deviceId);
    if (!bucket) {
      makeRoom(this.#rates, MAX_RATED_DEVICES);
      bucket = new TokenBucket(this.#o.config.rate, this.#now);
      this.#rates.set(deviceId, bucket);
    }
    return bucket.take();
  }

  /**
   * An idle MQTT device: `notify` with a single-use audio URL (firmware from `notifyMinVersion`
   * on), else, or when the audio cannot be made, `alert` with the text. Undefined when the link
   * is gone.
   */
  async #notify(link: IdleDeviceLink, text: string, source: PushSource): Promise<'notified' | 'alerted' | undefined> {
    const record = await this.#o.store.devices.get(link.deviceId).catch(() => undefined);
    if (versionAtLeast(record?.firmware, this.#o.config.notifyMinVersion) && this.#o.notifyAudio) {
      if (!this.#urlBase) {
        if (!this.#warnedNoUrl) this.#log.warn('push: no URL to serve notify audio from: set push.publicHttpUrl (or server.publicWsUrl); idle devices get alert instead');
        this.#warnedNoUrl = true;
      } else {
        try {
          const bytes = await this.#o.notifyAudio(link.deviceId, text);
          const name = this.#o.clips.add(bytes);
          if (link.publish({ type: 'notify', audio_url: `${this.#urlBase}${PUSH_AUDIO_PATH}${name}`, subtitles: [text] })) return 'notified';
          return undefined;
        } catch (err) {
          this.#log.warn({ err: err instanceof Error ? err.message : String(err), deviceId: link.deviceId }, 'push: notify audio could not be made; sending alert');
        }
      }
    }
    const ok = link.publish({ type: 'alert', status: source === 'reminder' ? 'Reminder' : 'Message', message: text, emotion: 'neutral' });
    return ok ? 'alerted' : undefined;
  }

  async close(): Promise<void> {
    this.#closing.abort();
    clearInterval(this.#sweep);
    for (const u of this.#unsubscribe.splice(0)) u();
    for (const w of [...this.#waiters.values()]) w();
  }
}

function isDelivered(state: string): state is DeliveredState {
  return state === 'spoken' || state === 'after_turn' || state === 'notified' || state === 'alerted';
}

/** At most `max` characters, cut between code points. */
function cutChars(text: string, max: number): string {
  if (text.length <= max) return text;
  return Array.from(text).slice(0, max).join('');
}
