/**
 * @module A session's connection to its speech-to-speech model (`RealtimeModel`), as the voice
 * conversation uses it: opened when the first turn that needs it begins (not at hello: an idle
 * device holds no vendor socket), told the agent's instructions, memory and recent turns and the
 * session's tools, fed the user's audio while they speak (16 kHz from the listener, resampled to
 * the model's rate), and replaced by a fresh one when it closed, when the device's agent moved to
 * another model, or between turns once it is older than the model's session limit.
 *
 * Calls made while the connection is still opening are kept in order and sent once it is open
 * (the user's first words are heard while the socket is dialled); what they hold is bounded.
 * Events go to one listener at a time: the turn being answered.
 */
import { ErrorCode, toVoiceError, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { Resampler } from '../../audio/pcm/resample.ts';
import type { RealtimeEvent, RealtimeModel, RealtimeSession } from '../../llm/realtime.ts';
import type { ToolSpec } from '../../mcp/contract/tool-source.ts';

/** A connection's age after which it is renewed between turns, unless the model says otherwise (vendors cap sessions at 30–60 min). */
export const DEFAULT_MAX_SESSION_MS = 25 * 60_000;

/** Audio kept while the connection opens at most (16 kHz samples: 30 s); later audio is dropped, logged once. */
const MAX_PENDING_SAMPLES = 30 * 16_000;

/** Calls other than audio kept while the connection opens at most (a handful per turn). */
const MAX_PENDING_CALLS = 32;

/** The listener's PCM rate. */
const UPLINK_RATE = 16_000;

export interface RealtimeLinkOptions {
  log: Logger;
  /** What a new connection is told: the instructions (prompt, memory, recent turns) and the tools. */
  setup(signal: AbortSignal): Promise<{ instructions: string; tools: ToolSpec[] }>;
  /** Wall time in ms (the connection's age). */
  now(): number;
}

type Op = (s: RealtimeSession) => void;

interface Connection {
  model: RealtimeModel;
  abort: AbortController;
  openedAt: number;
  session: RealtimeSession | undefined;
  /** Calls made while opening, in order. */
  ops: Op[];
  pendingSamples: number;
  dropWarned: boolean;
  /** Set when it closed or could not open: the next `ready` replaces it. */
  dead: VoiceError | undefined;
  /** The tool listing last offered (a key of names and schemas), so an unchanged one is not sent again. */
  toolsKey: string;
}

export class RealtimeLink {
  readonly #o: RealtimeLinkOptions;
  #conn: Connection | undefined;
  #listener: ((e: RealtimeEvent) => void) | undefined;
  #resampler: Resampler | undefined;
  #closed = false;

  constructor(opts: RealtimeLinkOptions) {
    this.#o = opts;
  }

  /**
   * Makes sure a usable connection to `model` is open or opening: called when a turn that needs it
   * begins (the user starts speaking, a typed text). Between turns an old one is replaced.
   * True when a new connection is opening (its set-up lists the tools: nothing to offer again).
   */
  ready(model: RealtimeModel, opts: { betweenTurns: boolean }): boolean {
    if (this.#closed) return false;
    const c = this.#conn;
    const maxAge = model.maxSessionMs ?? DEFAULT_MAX_SESSION_MS;
    if (c && c.model === model && !c.dead && !(opts.betweenTurns && this.#o.now() - c.openedAt >= maxAge)) return false;
    if (c) {
      const why = c.dead ? 'it closed' : c.model !== model ? "the agent's model changed" : 'its session limit';
      this.#o.log.info({ realtime: model.provider, why }, 'realtime connection renewed');
      this.#drop(c);
    }
    this.#open(model);
    return true;
  }

  /** The model the connection is for, if one is open or opening. */
  get model(): RealtimeModel | undefined {
    return this.#conn?.model;
  }

  /** Events of the connection go to `listener` (the turn being answered) until it is replaced or cleared. */
  listen(listener: ((e: RealtimeEvent) => void) | undefined): void {
    this.#listener = listener;
  }

  /** A new utterance begins: audio appended since the last commit is dropped, a fresh resampler starts. */
  startUtterance(): void {
    this.#resampler = undefined;
    this.#call((s) => s.clearAudio());
  }

  /** The user's audio (16 kHz from the listener), at the model's rate. */
  appendAudio(pcm16k: Int16Array): void {
    const c = this.#conn;
    if (!c || c.dead || pcm16k.length === 0) return;
    if (!c.session) {
      // Checked before resampling: audio that is dropped is not worked on.
      if (c.pendingSamples + pcm16k.length > MAX_PENDING_SAMPLES) {
        if (!c.dropWarned) this.#o.log.warn('realtime connection still opening: audio past 30 s dropped');
        c.dropWarned = true;
        return;
      }
      c.pendingSamples += pcm16k.length;
    }
    const rate = c.model.inputRate;
    let pcm = pcm16k;
    if (rate !== UPLINK_RATE) {
      if (!this.#resampler || this.#resampler.toRate !== rate) this.#resampler = new Resampler(UPLINK_RATE, rate);
      pcm = this.#resampler.push(pcm16k);
    }
    if (c.session) {
      // The per-frame path once open: straight to the connection.
      c.session.appendAudio(pcm);
      return;
    }
    this.#call((s) => s.appendAudio(pcm), true);
  }

  /** A false start: the audio since the last commit is dropped. */
  clearAudio(): void {
    this.#resampler = undefined;
    this.#call((s) => s.clearAudio());
  }

  commit(): void {
    this.#call((s) => s.commit());
  }

  sendText(text: string): void {
    this.#call((s) => s.sendText(text));
  }

  addAssistantText(text: string): void {
    this.#call((s) => s.addAssistantText(text));
  }

  functionOutput(callId: string, output: string, respond: boolean): void {
    this.#call((s) => s.functionOutput(callId, output, respond));
  }

  cancel(playedMs: number): void {
    this.#call((s) => s.cancel(Math.max(0, Math.round(playedMs))));
  }

  /** Offers the session's tools as they are listed now; sent only when they changed since the last offer. */
  offerTools(tools: ToolSpec[]): void {
    const c = this.#conn;
    if (!c || c.dead) return;
    const key = JSON.stringify(tools);
    if (key === c.toolsKey) return;
    c.toolsKey = key;
    this.#call((s) => s.update({ tools }));
  }

  /** The connection failed or closed and has not been replaced: why. */
  get failure(): VoiceError | undefined {
    return this.#conn?.dead;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listener = undefined;
    if (this.#conn) this.#drop(this.#conn);
    this.#conn = undefined;
  }

  #call(op: Op, audio = false): void {
    const c = this.#conn;
    if (!c || c.dead) {
      // Nothing to send it to: the turn waiting for an answer hears why, once.
      if (!audio) this.#deadCall(c?.dead ?? new VoiceError(ErrorCode.ProviderUnavailable, 'no realtime connection'));
      return;
    }
    if (c.session) {
      op(c.session);
      return;
    }
    if (!audio && c.ops.length >= MAX_PENDING_CALLS) {
      this.#o.log.warn('realtime connection still opening: too many calls waiting; dropped');
      return;
    }
    c.ops.push(op);
  }

  #deadCall(error: VoiceError): void {
    const listener = this.#listener;
    if (listener) queueMicrotask(() => listener({ type: 'closed', error }));
  }

  #open(model: RealtimeModel): void {
    const c: Connection = {
      model,
      abort: new AbortController(),
      openedAt: this.#o.now(),
      session: undefined,
      ops: [],
      pendingSamples: 0,
      dropWarned: false,
      dead: undefined,
      toolsKey: '',
    };
    this.#conn = c;
    this.#resampler = undefined;
    const { log } = this.#o;
    const signal = c.abort.signal;
    void (async () => {
      try {
        const { instructions, tools } = await this.#o.setup(signal);
        c.toolsKey = JSON.stringify(tools);
        const session = await model.open({
          instructions,
          tools,
          signal,
          log,
          onEvent: (e) => this.#onEvent(c, e),
        });
        if (signal.aborted) {
          session.close();
          return;
        }
        if (c.dead) return;
        c.session = session;
        log.info({ realtime: model.provider, tools: tools.length }, 'realtime connection open');
        for (const op of c.ops.splice(0)) op(session);
        c.pendingSamples = 0;
      } catch (err) {
        if (signal.aborted) return;
        const e = toVoiceError(err, ErrorCode.ProviderUnavailable);
        log.error({ realtime: model.provider, code: e.code, err: e.message }, 'realtime connection could not open');
        this.#fail(c, e);
      }
    })();
  }

  #onEvent(c: Connection, e: RealtimeEvent): void {
    if (c !== this.#conn || c.abort.signal.aborted) return;
    if (e.type === 'closed') {
      const error = e.error ?? new VoiceError(ErrorCode.ProviderUnavailable, 'the realtime connection closed');
      this.#o.log.warn({ realtime: c.model.provider, err: error.message }, 'realtime connection closed');
      this.#fail(c, error);
      return;
    }
    this.#listener?.(e);
  }

  /** The connection is unusable: what waited for it is dropped, the turn listening hears it. */
  #fail(c: Connection, error: VoiceError): void {
    if (c.dead) return;
    c.dead = error;
    c.ops = [];
    c.session?.close();
    c.session = undefined;
    c.abort.abort(error);
    if (c === this.#conn) this.#listener?.({ type: 'closed', error });
  }

  #drop(c: Connection): void {
    c.ops = [];
    c.abort.abort(new VoiceError(ErrorCode.Aborted, 'realtime connection replaced'));
    c.session?.close();
    c.session = undefined;
    c.dead ??= new VoiceError(ErrorCode.Aborted, 'realtime connection replaced');
  }
}
