/**
 * @module The one `Push` of a process: delivers a `say` to one identity pair (Device-Id +
 * Client-Id) of a device wherever it is, in this order:
 * 1. a session of the pair open here (hello done) that can hear it: the conversation speaks it now
 *    or after its turn. An MQTT session can hear only once the device's first UDP datagram told
 *    where its audio goes (downlink before that is dropped): until then the message waits;
 * 2. an idle MQTT link of the pair here: `notify` (audio by URL) for firmware from
 *    `push.notifyMinVersion` on, else `alert` (the text on the screen);
 * 3. another replica: a `push_messages` row the change feed announces; the replica holding the
 *    pair claims it (one conditional update), delivers, and writes how it went, which this
 *    replica waits for (HAND_OVER_WAIT_MS);
 * 4. nobody: the row stays for `push.queueTtlMs` and is delivered when the pair next opens a
 *    session (`onSessionOpened`, once it can hear it) or connects to the broker (after
 *    `push.helloGraceMs` without a hello: a device that opens an audio channel right after its
 *    CONNECT ignores an `alert` sent before its hello); with the queue off, refused `offline`.
 * Without a Client-Id a `say` is for the most recently connected pair of the MAC: the newest
 * session or broker connection here, else the pair the device's record names (the last seen at
 * OTA or a session start). A message never reaches another pair of the same MAC: in open mode
 * anyone may present a known MAC with their own Client-Id.
 * Per device `push.rate` (reminders exempt), `push.maxChars`; one audit log line per `say`, its
 * text only under `pii`.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Logger } from '../../core/logger.ts';
import { makeRoom } from '../../core/bounded-map.ts';
import { TokenBucket } from '../../core/token-bucket.ts';
import { DeviceIdSchema } from '../../protocol/ota.ts';
import type { DeviceSession } from '../../voice/session/session.ts';
import type { SessionRegistry } from '../../voice/session/registry.ts';
import type { Store } from '../../store/store.ts';
import type { DeliveredState, PushMessage } from '../../store/push-messages.ts';
import type { StoreChange } from '../../store/types.ts';
import type { Push, PushSource, SayOutcome, SayRequest } from './push.ts';
import { pairKey } from '../../store/pair-key.ts';
import type { IdleDeviceLink, IdleDeviceLinks } from './idle-links.ts';
import { versionAtLeast } from './firmware-version.ts';
import { PUSH_AUDIO_PATH, type AudioClips } from './audio-clips.ts';
import type { PushSchema } from './push-settings.ts';

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

/** The pair a message is for; clientId null only for a session without a Client-Id. */
interface Target {
  deviceId: string;
  clientId: string | null;
}

export class PushDelivery implements Push {
  readonly #o: PushDeliveryOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #rates = new Map<string, TokenBucket>();
  readonly #unsubscribe: Array<() => void> = [];
  readonly #closing = new AbortController();
  readonly #waiters = new Map<string, () => void>();
  /** Broker connections in their grace for a hello (`push.helloGraceMs`): not yet sent notify/alert; `over` resolves at its end. */
  readonly #graces = new Map<IdleDeviceLink, { timer: NodeJS.Timeout; over: Promise<void>; end: () => void }>();
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
   * Claims and delivers the waiting messages of pairs held here that nobody announced, and
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
      // The pairs that can hear a message here, once per sweep (not a scan of every session per waiting row).
      const hearing = new Set<string>();
      for (const x of this.#o.registry.list())
        if (!x.ended && x.helloDone && x.deviceId && this.#audible(x) === true)
          hearing.add(targetKey({ deviceId: x.deviceId, clientId: x.clientId }));
      for (const m of await pushMessages.pending(SWEEP_ROWS)) {
        if (!hearing.has(targetKey(m)) && this.#idleLink(m) === undefined) continue;
        const claimed = await this.#o.store.pushMessages.claim(m.id, this.#o.store.replica);
        if (claimed) await this.#deliverClaimed(claimed, {});
      }
    } catch (err) {
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'push: looking for waiting messages failed',
      );
    } finally {
      this.#sweeping = false;
    }
  }

  /** The MQTT transport's idle devices: `say` reaches them, and they get their queued messages when they connect. */
  useIdleLinks(links: IdleDeviceLinks): void {
    this.#links = links;
    this.#unsubscribe.push(links.onConnected((link) => this.#connected(link)));
  }

  /**
   * A device connected to the broker. A firmware that connects to open an audio channel publishes
   * its hello a moment later and ignores an `alert` that comes first: its queued messages wait
   * `push.helloGraceMs` for a session (which speaks them once it can hear, `onSessionOpened`), and
   * only a device still idle then gets them as notify/alert.
   */
  #connected(link: IdleDeviceLink): void {
    if (this.#closing.signal.aborted) return;
    const pair = { deviceId: link.deviceId, clientId: link.clientId };
    const grace = this.#o.config.helloGraceMs;
    if (grace === 0) {
      void this.#deliverQueued(pair, { link });
      return;
    }
    this.#graces.get(link)?.end();
    let end: () => void = () => undefined;
    const over = new Promise<void>((resolve) => (end = resolve));
    const timer = setTimeout(() => {
      this.#endGrace(link);
      // Gone, or replaced by a newer connection of the pair: nothing to send on this one.
      if (this.#links?.find(link.deviceId, link.clientId) !== link || link.inSession) return;
      void this.#deliverQueued(pair, { link });
    }, grace);
    timer.unref();
    this.#graces.set(link, { timer, over, end });
  }

  #endGrace(link: IdleDeviceLink): void {
    const g = this.#graces.get(link);
    if (!g) return;
    this.#graces.delete(link);
    clearTimeout(g.timer);
    g.end();
  }

  /**
   * Told about every session opened (the WebSocket route's hook; MQTT sessions call it too): once
   * its hello is answered and it can hear (an MQTT device: its first datagram arrived), the pair's
   * queued messages are spoken, oldest first. An MQTT session that ends before it could hear
   * leaves them to the broker connection, when that is still there and idle.
   */
  readonly onSessionOpened = (s: { sessionId: string; deviceId: string | null; clientId: string | null }): void => {
    const session = this.#o.registry.list().find((x) => x.id === s.sessionId);
    const device = DeviceIdSchema.safeParse(s.deviceId);
    if (!session || !device.success) return;
    const pair = { deviceId: device.data, clientId: s.clientId?.toLowerCase() ?? null };
    // The hello came: the broker connection's grace is over (this session takes the messages).
    const connection = pair.clientId === null ? undefined : this.#links?.find(pair.deviceId, pair.clientId);
    if (connection) this.#endGrace(connection);
    void (async () => {
      if (!(await session.greeted)) return;
      if (await this.#audible(session)) await this.#deliverQueued(pair, { session });
      else {
        // Ended before its device sent audio: if it is still on the broker, idle, it gets notify/alert.
        const idle = this.#idleLink(pair);
        if (idle) await this.#deliverQueued(pair, { link: idle });
      }
    })().catch((err: unknown) =>
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err), deviceId: pair.deviceId },
        'push: queued messages could not be delivered',
      ),
    );
  };

  async say(req: SayRequest): Promise<SayOutcome> {
    const chars = req.text.length;
    let clientId: string | null | undefined;
    const outcome = await this.#say(req, (c) => (clientId = c)).catch((err: unknown) => {
      this.#log.error(
        { err: err instanceof Error ? err.message : String(err), deviceId: req.deviceId },
        'push: say failed',
      );
      throw err;
    });
    // The audit line: who asked what for whom (the pair it went to), and how it went; the words only under `pii`.
    this.#log.info(
      {
        deviceId: req.deviceId,
        clientId: clientId ?? req.clientId,
        source: req.source,
        status: outcome.status,
        ...(outcome.reason ? { reason: outcome.reason } : {}),
        ...(outcome.replica ? { replica: outcome.replica } : {}),
        ...(outcome.id ? { id: outcome.id } : {}),
        chars,
        interrupt: req.interrupt === true,
        pii: { text: req.text },
      },
      'push: say',
    );
    return outcome;
  }

  async #say(req: SayRequest, resolved: (clientId: string | null) => void): Promise<SayOutcome> {
    const cfg = this.#o.config;
    const trimmed = req.text.trim();
    if (!trimmed) return { status: 'refused', reason: 'empty' };
    const text = cutChars(trimmed, cfg.maxChars);
    const parsed = DeviceIdSchema.safeParse(req.deviceId);
    if (!parsed.success) return { status: 'refused', reason: 'unknown_device' };
    const pair = await this.#targetOf(parsed.data, req.clientId);
    if (!pair) return { status: 'refused', reason: 'unknown_device' };
    resolved(pair.clientId);
    if (!this.#allowed(pair.deviceId, req.source)) return { status: 'refused', reason: 'rate_limited' };
    const replica = this.#o.store.replica;
    const interrupt = req.interrupt === true;
    // Connected a moment ago: it may be about to say hello (then it hears it in that session).
    const connection = pair.clientId === null ? undefined : this.#links?.find(pair.deviceId, pair.clientId);
    const grace = connection && this.#graces.get(connection);
    if (grace) await grace.over;
    const session = this.#session(pair);
    if (session) {
      // An MQTT device that has not sent audio yet: it is about to (it just said hello); wait a little.
      const ready = this.#audible(session);
      if (ready === true || (await withinMs(ready, this.#o.handOverWaitMs ?? HAND_OVER_WAIT_MS))) {
        const how = session.say(text, { interrupt });
        if (how) return { status: how, replica };
      }
    }
    const link = session ? undefined : this.#idleLink(pair);
    if (link) {
      const how = await this.#notify(link, text, req.source);
      if (how) return { status: how, replica };
    }
    return this.#handOver({ ...pair, text, interrupt, source: req.source });
  }

  /**
   * The pair a `say` is for: the one named (its MAC must be known), else the most recently
   * connected one: the newest session of the MAC here, its newest broker connection here, else
   * the pair its device record names (the last seen at OTA or a session start, on any replica).
   * Undefined: an unknown device.
   */
  async #targetOf(deviceId: string, clientId: string | undefined): Promise<Target | undefined> {
    if (clientId !== undefined) {
      const pair = { deviceId, clientId: clientId.toLowerCase() };
      if (
        this.#session(pair) ||
        this.#links?.find(deviceId, pair.clientId) ||
        (await this.#o.store.devices.get(deviceId))
      )
        return pair;
      return undefined;
    }
    let newest: DeviceSession | undefined;
    for (const s of this.#o.registry.list())
      if (!s.ended && s.helloDone && s.deviceId?.toLowerCase() === deviceId) newest = s;
    if (newest) return { deviceId, clientId: newest.clientId?.toLowerCase() ?? null };
    const link = this.#links?.find(deviceId);
    if (link) return { deviceId, clientId: link.clientId.toLowerCase() };
    const record = await this.#o.store.devices.get(deviceId);
    return record ? { deviceId, clientId: record.clientId.toLowerCase() } : undefined;
  }

  /** Rows: another replica may hold the pair; else it waits for the pair (or is refused). */
  async #handOver(m: {
    deviceId: string;
    clientId: string | null;
    text: string;
    interrupt: boolean;
    source: PushSource;
  }): Promise<SayOutcome> {
    const { pushMessages } = this.#o.store;
    const ttl = this.#o.config.queueTtlMs;
    const others = await pushMessages.othersAlive(this.#o.store.replica);
    if (!others && ttl === 0) return { status: 'refused', reason: 'offline' };
    const wait = this.#o.handOverWaitMs ?? HAND_OVER_WAIT_MS;
    const id = randomUUID();
    const { expired, dropped } = await pushMessages.add(
      { id, ...m, expiresMs: this.#now() + (ttl > 0 ? ttl : 2 * wait) },
      this.#o.config.maxQueuedPerDevice,
    );
    if (expired > 0) this.#log.info({ expired }, 'push: queued messages expired unheard (push.queueTtlMs)');
    if (dropped > 0)
      this.#log.warn(
        { deviceId: m.deviceId, clientId: m.clientId, dropped, max: this.#o.config.maxQueuedPerDevice },
        'push: too many messages waiting for the device: the oldest dropped',
      );
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
      if (row && isDelivered(row.state))
        return { status: row.state, ...(row.claimedBy ? { replica: row.claimedBy } : {}) };
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

  /** The change feed: a message for a pair that can hear it here is claimed and delivered; an outcome wakes its asker. */
  #onChange(c: StoreChange): void {
    if (c.kind !== 'push') return;
    this.#waiters.get(c.id)?.();
    if (!this.#holdsAnyOf(c.deviceId)) return;
    void (async () => {
      const row = await this.#o.store.pushMessages.get(c.id);
      if (row?.state !== 'pending' || !this.#canHear(row)) return;
      const m = await this.#o.store.pushMessages.claim(c.id, this.#o.store.replica);
      if (m) await this.#deliverClaimed(m, {});
    })().catch((err: unknown) =>
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err), id: c.id },
        'push: a message for a device here could not be delivered',
      ),
    );
  }

  /** The pair's queued messages, claimed here and delivered through `to` (or wherever it is held). */
  async #deliverQueued(pair: Target, to: { session?: DeviceSession; link?: IdleDeviceLink }): Promise<void> {
    try {
      const messages = await this.#o.store.pushMessages.claimFor(
        pair.deviceId.toLowerCase(),
        pair.clientId,
        this.#o.store.replica,
      );
      for (const m of messages) await this.#deliverClaimed(m, to);
    } catch (err) {
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err), deviceId: pair.deviceId },
        'push: queued messages could not be delivered',
      );
    }
  }

  async #deliverClaimed(m: PushMessage, to: { session?: DeviceSession; link?: IdleDeviceLink }): Promise<void> {
    const source: PushSource = m.source === 'reminder' ? 'reminder' : 'admin';
    let how: DeliveredState | undefined;
    const session = to.session && !to.session.ended ? to.session : this.#session(m);
    if (session && this.#audible(session) === true) how = session.say(m.text, { interrupt: m.interrupt });
    if (!how) {
      const link = to.link && !to.link.inSession ? to.link : this.#idleLink(m);
      if (link) how = await this.#notify(link, m.text, source);
    }
    if (!how) {
      // Gone before it could hear it: the message waits for its next connection.
      await this.#o.store.pushMessages.release(m.id);
      return;
    }
    await this.#o.store.pushMessages.finish(m.id, how);
    this.#log.info(
      {
        deviceId: m.deviceId,
        clientId: m.clientId,
        id: m.id,
        source,
        status: how,
        waitedMs: Math.max(0, this.#now() - m.createdMs),
      },
      'push: queued message delivered',
    );
  }

  /** The pair's session here with its hello done (the newest). */
  #session(pair: Target): DeviceSession | undefined {
    const d = pair.deviceId.toLowerCase();
    let found: DeviceSession | undefined;
    for (const s of this.#o.registry.list()) {
      if (s.ended || !s.helloDone || s.deviceId?.toLowerCase() !== d) continue;
      if ((s.clientId?.toLowerCase() ?? null) !== pair.clientId) continue;
      found = s;
    }
    return found;
  }

  /**
   * Whether the session's device hears speech now (true), or a promise of when it will (false: the
   * session ended first): a WebSocket session at once; an MQTT session once the device's first
   * UDP datagram told where its audio goes.
   */
  #audible(session: DeviceSession): true | Promise<boolean> {
    if (!session.deviceId || !session.clientId) return true;
    return this.#links?.find(session.deviceId, session.clientId)?.audioReady(session.id) ?? true;
  }

  /** The pair's broker connection here when it has no audio session and is past its grace for a hello. */
  #idleLink(pair: Target): IdleDeviceLink | undefined {
    if (pair.clientId === null) return undefined;
    const link = this.#links?.find(pair.deviceId, pair.clientId);
    return link && !link.inSession && !this.#graces.has(link) ? link : undefined;
  }

  /** Whether the pair can be given a message here now: a session that hears, or an idle connection. */
  #canHear(pair: Target): boolean {
    const session = this.#session(pair);
    return (session !== undefined && this.#audible(session) === true) || this.#idleLink(pair) !== undefined;
  }

  /** Whether any pair of the MAC is here (before reading a message's row). */
  #holdsAnyOf(deviceId: string): boolean {
    const d = deviceId.toLowerCase();
    return (
      this.#o.registry.list().some((s) => !s.ended && s.deviceId?.toLowerCase() === d) ||
      this.#links?.find(d) !== undefined
    );
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
        if (!this.#warnedNoUrl)
          this.#log.warn(
            'push: no URL to serve notify audio from: set push.publicHttpUrl (or server.publicWsUrl); idle devices get alert instead',
          );
        this.#warnedNoUrl = true;
      } else {
        try {
          const bytes = await this.#o.notifyAudio(link.deviceId, text);
          const name = this.#o.clips.add(bytes);
          if (
            link.publish({ type: 'notify', audio_url: `${this.#urlBase}${PUSH_AUDIO_PATH}${name}`, subtitles: [text] })
          )
            return 'notified';
          return undefined;
        } catch (err) {
          this.#log.warn(
            { err: err instanceof Error ? err.message : String(err), deviceId: link.deviceId },
            'push: notify audio could not be made; sending alert',
          );
        }
      }
    }
    const ok = link.publish({
      type: 'alert',
      status: source === 'reminder' ? 'Reminder' : 'Message',
      message: text,
      emotion: 'neutral',
    });
    return ok ? 'alerted' : undefined;
  }

  async close(): Promise<void> {
    this.#closing.abort();
    clearInterval(this.#sweep);
    for (const link of [...this.#graces.keys()]) this.#endGrace(link);
    for (const u of this.#unsubscribe.splice(0)) u();
    for (const w of [...this.#waiters.values()]) w();
  }
}

/** A pair as a set key (a session without a Client-Id under ''). */
function targetKey(pair: Target): string {
  return pairKey(pair.deviceId, pair.clientId ?? '');
}

/** Resolves as `p`, or false after `ms`; the timer is cleared either way. */
function withinMs(p: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function isDelivered(state: string): state is DeliveredState {
  return state === 'spoken' || state === 'after_turn' || state === 'notified' || state === 'alerted';
}

/** At most `max` characters, cut between code points. */
function cutChars(text: string, max: number): string {
  if (text.length <= max) return text;
  return Array.from(text).slice(0, max).join('');
}
