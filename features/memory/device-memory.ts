/**
 * @module Each device's memory as the server runs it: a `SessionMemory` per session (the earlier
 * turns of the session's identity pair with its agent, loaded in the background from hello on; the
 * facts and summary for the system prompt; each finished turn queued to the store in batches), the
 * memory tools' target for that session, the summary written after a session ends (retried later
 * when the model fails), and retention (old turns and turns past the per-pair maximum removed
 * periodically). Memory belongs to the pair (Device-Id + Client-Id): a session with a known MAC and
 * another Client-Id starts with nothing of it.
 */
import { linkedScope } from '../../core/abort.ts';
import type { Logger } from '../../core/logger.ts';
import type { ChatMessage, LlmClient } from '../../llm/types.ts';
import type { MemoryToolTarget } from '../../mcp/local-tools/memory-tools.ts';
import type { DeviceMemoryStore, NewTurn } from '../../store/memory.ts';
import { WriteBatcher } from '../../store/write-batcher.ts';
import { pairKey, type DevicePair } from '../../store/pair-key.ts';
import type { StoreChange } from '../../store/types.ts';
import type { SessionInfo } from '../../voice/session/conversation.ts';
import type { MemoryMode, SessionMemory } from '../../voice/conversation/session-memory.ts';
import { memoryBlock } from './memory-block.ts';
import { messagesOfRows, rowsOfTurn } from './turn-rows.ts';
import { foldIntoSummary } from './summarizer.ts';

export interface MemorySettings {
  historyTurns: number;
  historyChars: number;
  retentionDays: number;
  maxTurnsPerDevice: number;
  summaryRetryMs: number;
}

export interface DeviceMemoryOptions {
  store: DeviceMemoryStore;
  settings: MemorySettings;
  /** The device's agent now and that agent's model. */
  agentOf(deviceId: string): { agent: string; llm: LlmClient };
  log: Logger;
  /** The store's changes: a pair's memory deleted or moved elsewhere (admin, revoke, another replica) is read again by its live sessions. */
  onChange?: (listener: (c: StoreChange) => void) => () => void;
  /** Retention runs this often (ms); default hourly, first a minute after start. */
  pruneEveryMs?: number;
  /** Longest wait for a device's memory at a turn start (ms); past it the turn answers without it. Default 3000. */
  readTimeoutMs?: number;
  /** Longest a summary may take the model (ms); past it the attempt is given up and the summary stays due. Default 60000. */
  summaryTimeoutMs?: number;
}

/** Resolves as `p`, or rejects with `message` after `ms`; the timer is cleared either way. */
function withinMs<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Stored messages read per turn given back (a user message, tool calls, the answer). */
const ROWS_PER_TURN = 8;
/**
 * Summaries asked of the model at once. Sessions end together (a shutdown's drain, a fleet going
 * quiet) and a retry tick finds every pair that failed while the model was down: without a bound,
 * each would be one request at the same moment.
 */
const SUMMARIES_AT_ONCE = 4;
/**
 * Pairs kept due for a retry. Past it the oldest is forgotten (its turns stay stored, and its next
 * session's end makes it due again), so a model down for long holds bounded memory.
 */
const MAX_DUE = 10_000;

interface Loaded {
  rows: ChatMessage[];
  facts: string[];
  summary: string | undefined;
}

export class DeviceMemory {
  readonly #o: DeviceMemoryOptions;
  readonly #log: Logger;
  readonly #batcher: WriteBatcher<NewTurn>;
  readonly #targets = new WeakMap<SessionMemory, MemoryToolTarget>();
  /** Identity pairs and agents whose summary is due; retried every `summaryRetryMs`. */
  readonly #due = new Map<string, { pair: DevicePair; agent: string }>();
  readonly #running = new Map<string, Promise<void>>();
  /** Due pairs tried in this round (since the last retry tick): a failure waits for the next round. */
  readonly #attempted = new Set<string>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #abort = new AbortController();
  /** Live sessions by identity pair (`pairKey`). */
  readonly #live = new Map<string, Set<DeviceSessionMemory>>();
  readonly #unsubscribe: () => void;
  #closed = false;

  constructor(opts: DeviceMemoryOptions) {
    this.#o = opts;
    this.#log = opts.log.child({ part: 'memory' });
    this.#batcher = new WriteBatcher<NewTurn>({
      write: (rows) => opts.store.addTurns(rows),
      log: this.#log,
      what: 'turns',
    });
    const every = opts.pruneEveryMs ?? 3_600_000;
    const first = setTimeout(() => void this.prune(), Math.min(every, 60_000));
    const repeat = setInterval(() => void this.prune(), every);
    const retry = setInterval(() => this.#retryDue(), opts.settings.summaryRetryMs);
    for (const t of [first, repeat, retry]) {
      t.unref();
      this.#timers.push(t);
    }
    this.#unsubscribe =
      opts.onChange?.((c) => {
        if (c.kind !== 'memory') return;
        if (c.clientId !== undefined) {
          for (const s of this.#live.get(pairKey(c.deviceId, c.clientId)) ?? []) s.deleted();
          return;
        }
        // Every pair of the device (a revoke, a delete of all of it).
        const mac = `${c.deviceId.toLowerCase()}\n`;
        for (const [k, sessions] of this.#live) if (k.startsWith(mac)) for (const s of sessions) s.deleted();
      }) ?? (() => undefined);
  }

  /** A session's memory; undefined without a Device-Id and a Client-Id (no pair to keep it under). */
  forSession(info: SessionInfo): SessionMemory | undefined {
    if (!info.deviceId || !info.clientId || this.#closed) return undefined;
    const pair = { deviceId: info.deviceId, clientId: info.clientId };
    const id = pairKey(pair.deviceId, pair.clientId);
    const session = new DeviceSessionMemory(this, pair, () => {
      const set = this.#live.get(id);
      set?.delete(session);
      if (set?.size === 0) this.#live.delete(id);
    });
    this.#targets.set(session, session.target);
    let set = this.#live.get(id);
    if (!set) this.#live.set(id, (set = new Set()));
    set.add(session);
    return session;
  }

  /** The memory tools' target for a session's memory (made here: others have none). */
  toolTarget(memory: SessionMemory): MemoryToolTarget | undefined {
    return this.#targets.get(memory);
  }

  get store(): DeviceMemoryStore {
    return this.#o.store;
  }

  get settings(): MemorySettings {
    return this.#o.settings;
  }

  get readTimeoutMs(): number {
    return this.#o.readTimeoutMs ?? 3000;
  }

  get log(): Logger {
    return this.#log;
  }

  /** True once `close` ran: a session ending later (past the shutdown's drain) keeps nothing. */
  get closed(): boolean {
    return this.#closed;
  }

  get batcher(): WriteBatcher<NewTurn> {
    return this.#batcher;
  }

  agentOf(deviceId: string): string {
    return this.#o.agentOf(deviceId).agent;
  }

  /** Reads what a session of the pair with `agent` gets back. */
  async load(pair: DevicePair, agent: string): Promise<Loaded> {
    const { historyTurns, historyChars } = this.#o.settings;
    // Turns of this pair still queued (its last session ended a moment ago) are stored first: a
    // quick reconnect must find them. Only then: a burst of hellos must not each force a write.
    const key = pairKey(pair.deviceId, pair.clientId);
    if (this.#batcher.holds((t) => pairKey(t.deviceId, t.clientId) === key)) await this.#batcher.flush();
    const [rows, facts, summary] = await Promise.all([
      this.#o.store.recentTurns(pair, agent, historyTurns * ROWS_PER_TURN),
      this.#o.store.facts(pair, agent),
      this.#o.store.summary(pair, agent),
    ]);
    return {
      rows: messagesOfRows(rows, historyTurns, historyChars),
      facts: facts.map((f) => f.text),
      summary: summary?.text,
    };
  }

  /** A session with `agent` in summary mode ended: fold its older turns into the summary, in the background. */
  summaryDue(pair: DevicePair, agent: string): void {
    if (this.#closed) return;
    const key = dueKey(pair, agent);
    // A new end of session: tried again in this round, after the ones waiting longer.
    this.#due.delete(key);
    this.#attempted.delete(key);
    this.#due.set(key, { pair, agent });
    if (this.#due.size > MAX_DUE) {
      const oldest = this.#due.keys().next().value;
      if (oldest !== undefined) {
        this.#due.delete(oldest);
        this.#attempted.delete(oldest);
      }
      this.#log.warn({ kept: MAX_DUE }, 'memory: too many summaries waiting; the oldest waits for its next session');
    }
    this.#startDue();
  }

  /** Starts due summaries while fewer than SUMMARIES_AT_ONCE run (each one's end starts the next). */
  #startDue(): void {
    if (this.#closed) return;
    for (const [key, { pair, agent }] of this.#due) {
      if (this.#running.size >= SUMMARIES_AT_ONCE) return;
      if (this.#attempted.has(key) || this.#running.has(key)) continue;
      this.#attempted.add(key);
      void this.#summarise(pair, agent);
    }
  }

  /** Writes the summary now (after the queued turns are stored); resolves when done or failed (it stays due). */
  #summarise(pair: DevicePair, agent: string): Promise<void> {
    const key = dueKey(pair, agent);
    const running = this.#running.get(key);
    if (running) return running;
    // A model that stalls must not hold the summary for good: the attempt is bounded and retried.
    const scope = linkedScope(this.#abort.signal, {
      timeoutMs: this.#o.summaryTimeoutMs ?? 60_000,
      what: 'memory summary',
    });
    const work = (async () => {
      try {
        await this.#batcher.flush();
        const now = this.#o.agentOf(pair.deviceId);
        if (now.agent !== agent) {
          // The device moved on: that agent's model is not known here any more; its summary waits.
          this.#due.delete(key);
          this.#attempted.delete(key);
          return;
        }
        const { historyTurns, historyChars } = this.#o.settings;
        const kept = messagesOfRows(
          await this.#o.store.recentTurns(pair, agent, historyTurns * ROWS_PER_TURN),
          historyTurns,
          historyChars,
        );
        const keepRecent = kept.length;
        const folded = await foldIntoSummary({
          store: this.#o.store,
          llm: now.llm,
          pair,
          agent,
          keepRecent,
          signal: scope.signal,
        });
        // Turns left over (more than one request holds) are folded at the next retry.
        if (folded !== 'more') {
          this.#due.delete(key);
          this.#attempted.delete(key);
        }
      } catch (err) {
        if (!this.#closed)
          this.#log.warn(
            { agent, err: err instanceof Error ? err.message : String(err) },
            'memory: summary not written; tried again later',
          );
      } finally {
        scope.dispose();
        this.#running.delete(key);
        this.#startDue();
      }
    })();
    this.#running.set(key, work);
    return work;
  }

  /** A new round: every pair still due may be tried once more, a few at a time. */
  #retryDue(): void {
    this.#attempted.clear();
    this.#startDue();
  }

  /** Summaries due now (tests): written or failed. */
  async settle(): Promise<void> {
    await this.#batcher.flush();
    // Each one's end may start another that was waiting for room.
    while (this.#running.size > 0) await Promise.all([...this.#running.values()]);
  }

  /** Removes turns past the retention period and the per-device maximum. */
  async prune(): Promise<number> {
    try {
      const removed = await this.#o.store.prune({
        retentionDays: this.#o.settings.retentionDays,
        maxTurnsPerDevice: this.#o.settings.maxTurnsPerDevice,
      });
      if (removed > 0) this.#log.info({ removed }, 'memory: old turns removed');
      return removed;
    } catch (err) {
      this.#log.error({ err: err instanceof Error ? err.message : String(err) }, 'memory: pruning failed');
      return 0;
    }
  }

  /** Stores what is queued, then stops (summaries in flight are given up; they stay due in the turns). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    for (const t of this.#timers) clearTimeout(t);
    await this.#batcher.close();
    this.#abort.abort();
    await Promise.allSettled([...this.#running.values()]);
  }
}

/** The key of a pair and agent whose summary is due. */
function dueKey(pair: DevicePair, agent: string): string {
  return `${pairKey(pair.deviceId, pair.clientId)}\n${agent}`;
}

/** One session's view of its identity pair's memory. */
class DeviceSessionMemory implements SessionMemory {
  readonly #m: DeviceMemory;
  readonly #pair: DevicePair;
  readonly #loads = new Map<string, Promise<Loaded>>();
  #agent: string | undefined;
  #mode: MemoryMode = 'summary';
  #facts: string[] = [];
  #summary: string | undefined;
  /** Agents this session stored turns with. */
  readonly #recordedWith = new Set<string>();
  #cleared = false;
  readonly target: MemoryToolTarget;
  readonly #ended: () => void;

  constructor(memory: DeviceMemory, pair: DevicePair, ended: () => void) {
    this.#m = memory;
    this.#pair = pair;
    this.#ended = ended;
    // Read from hello on: the first turn finds it loaded.
    void this.#load(memory.agentOf(pair.deviceId)).catch(() => undefined);
    this.target = {
      keepsFacts: () => this.#mode === 'summary' && this.#agent !== undefined,
      remember: async (fact) => {
        const agent = this.#agent;
        if (agent === undefined) return false;
        const saved = await this.#m.store.remember(this.#pair, agent, fact);
        await this.#refreshFacts(agent);
        this.#m.log.info({ pii: { fact } }, 'memory: fact remembered');
        return saved !== undefined;
      },
      forget: async (words) => {
        const agent = this.#agent;
        if (agent === undefined) return 0;
        const n = await this.#m.store.forget(this.#pair, agent, words);
        await this.#refreshFacts(agent);
        return n;
      },
      forgetAll: async () => {
        const agent = this.#agent;
        if (agent === undefined) return;
        // Turns still queued are stored first, so that they are deleted too.
        await this.#m.batcher.flush();
        await this.#m.store.forgetAll(this.#pair, agent);
        this.#forgotten(agent);
        this.#m.log.info({ agent }, "memory: the device's memory with its agent was deleted at the user's request");
      },
      list: async () => {
        const agent = this.#agent;
        return agent === undefined ? [] : (await this.#m.store.facts(this.#pair, agent)).map((f) => f.text);
      },
    };
  }

  #load(agent: string): Promise<Loaded> {
    let p = this.#loads.get(agent);
    if (!p) {
      p = this.#m.load(this.#pair, agent);
      p.catch(() => this.#loads.delete(agent));
      this.#loads.set(agent, p);
    }
    return p;
  }

  /** What this session holds of its memory with `agent` (or with every agent) is gone: the conversation empties its history at its next turn. */
  #forgotten(agent?: string): void {
    this.#facts = [];
    this.#summary = undefined;
    if (agent === undefined) this.#loads.clear();
    else this.#loads.delete(agent);
    if (agent === undefined) this.#recordedWith.clear();
    else this.#recordedWith.delete(agent);
    this.#cleared = true;
  }

  /** The pair's whole memory was deleted or moved (admin API, revoke), here or on another replica. */
  deleted(): void {
    this.#forgotten();
  }

  async #refreshFacts(agent: string): Promise<void> {
    this.#facts = (await this.#m.store.facts(this.#pair, agent)).map((f) => f.text);
  }

  async use(agent: string, mode: MemoryMode): Promise<ChatMessage[]> {
    this.#agent = agent;
    this.#mode = mode;
    if (mode === 'none') {
      this.#facts = [];
      this.#summary = undefined;
      return [];
    }
    // A database that hangs must not hold the answer: past the bound the turn goes on without
    // memory (the caller logs it) and the next turn asks again (the read itself keeps going).
    const loaded = await withinMs(this.#load(agent), this.#m.readTimeoutMs, 'device memory read timed out');
    if (this.#agent !== agent) return [];
    this.#facts = mode === 'summary' ? loaded.facts : [];
    this.#summary = mode === 'summary' ? loaded.summary : undefined;
    return loaded.rows;
  }

  block(): string {
    return this.#mode === 'summary' ? memoryBlock(this.#facts, this.#summary) : '';
  }

  takeCleared(): boolean {
    const cleared = this.#cleared;
    this.#cleared = false;
    return cleared;
  }

  record(messages: readonly ChatMessage[]): void {
    const agent = this.#agent;
    if (agent === undefined || this.#mode === 'none' || this.#m.closed) return;
    const rows = rowsOfTurn(messages);
    if (rows.length === 0) return;
    this.#m.batcher.add(rows.map((r) => ({ ...this.#pair, agent, role: r.role, text: r.text })));
    this.#recordedWith.add(agent);
  }

  close(): void {
    this.#ended();
    const agent = this.#agent;
    if (agent !== undefined && this.#mode === 'summary' && this.#recordedWith.has(agent))
      this.#m.summaryDue(this.#pair, agent);
  }
}
