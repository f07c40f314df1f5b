/**
 * @module One device connection: the hello exchange, protocol version, hello and idle timers,
 * validation of every incoming frame, the state machine, and hand-off to the conversation.
 * Transport-agnostic: it talks to a DeviceChannel and is fed frames by the WebSocket route.
 */
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { TokenBucket, type RateLimit } from '../../core/token-bucket.ts';
import { truncateForLog } from '../../core/log-fields.ts';
import { CloseCode, CloseReason } from '../../protocol/close-codes.ts';
import { isProtocolVersion, unframeAudio, type ProtocolVersion } from '../../protocol/framing.ts';
import {
  brokenMcpPayload,
  parseDeviceMessage,
  serverHello,
  type DeviceHello,
  type ListenMode,
} from '../../protocol/messages.ts';
import type { DeviceChannel } from './channel.ts';
import type { Conversation, ConversationFactory, SessionInfo, StateControl } from './conversation.ts';
import { nextState, SessionState, type SessionEvent } from './state.ts';

export interface SessionOptions {
  sessionId: string;
  deviceId: string | null;
  clientId: string | null;
  /** From the Protocol-Version header, if any. */
  headerProtocolVersion: number | null;
  channel: DeviceChannel;
  log: Logger;
  helloTimeoutMs: number;
  idleTimeoutMs: number;
  outputSampleRate: number;
  frameDurationMs: number;
  createConversation: ConversationFactory;
  /** Budget for control messages (listen, abort, hello, mcp); over it they are dropped. */
  controlRate?: RateLimit;
  /** Where the device's connection reached us (`SessionInfo.reachedAt`). */
  reachedAt?: string;
  /** Called once when the session has ended (registry bookkeeping). */
  onEnded?: (session: DeviceSession) => void;
}

/** Warn and error lines per message: a few at once, then one a second (with the count dropped). */
const SESSION_WARNINGS: RateLimit = { perSecond: 1, burst: 5 };

/** Counters for the session's lifetime; logged at the end. */
export interface SessionCounters {
  textFrames: number;
  audioFrames: number;
  droppedAudioFrames: number;
  badMessages: number;
  /** Control messages dropped by the rate limit. */
  ratedOut: number;
}

export class DeviceSession {
  readonly id: string;
  readonly deviceId: string | null;
  readonly clientId: string | null;
  readonly log: Logger;
  readonly counters: SessionCounters = {
    textFrames: 0,
    audioFrames: 0,
    droppedAudioFrames: 0,
    badMessages: 0,
    ratedOut: 0,
  };
  #opts: SessionOptions;
  #channel: DeviceChannel;
  #state: SessionState = SessionState.Idle;
  #mode: ListenMode = 'auto';
  #version: ProtocolVersion = 1;
  #helloDone = false;
  #ended = false;
  #helloTimer: NodeJS.Timeout | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #conversation: Conversation | undefined;
  #abort = new AbortController();
  #startedAt = Date.now();
  #controlBudget: TokenBucket | undefined;
  readonly #warnings = createLogRateLimit(SESSION_WARNINGS);

  constructor(opts: SessionOptions) {
    this.#opts = opts;
    this.id = opts.sessionId;
    this.deviceId = opts.deviceId;
    this.clientId = opts.clientId;
    // Every warning of the session, wherever it comes from (protocol, listener, turn, device MCP),
    // is bounded: a device repeating the same bad input costs a few lines, then one a second.
    this.log = this.#warnings.wrap(opts.log);
    this.#channel = opts.channel;
    if (opts.controlRate) this.#controlBudget = new TokenBucket(opts.controlRate);
    this.#helloTimer = setTimeout(() => this.#end(CloseCode.HelloTimeout), opts.helloTimeoutMs);
    this.#touch();
  }

  get state(): SessionState {
    return this.#state;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get protocolVersion(): ProtocolVersion {
    return this.#version;
  }

  get helloDone(): boolean {
    return this.#helloDone;
  }

  /** Session ended signal (timers, turns and child processes listen to it). */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** One text frame from the device. Never throws. */
  handleText(text: string): void {
    if (this.#ended) return;
    this.counters.textFrames++;
    // The idle timer is not touched here: only audio and a valid listen count as activity, so
    // chatter cannot hold a session (and its slot) open forever.
    const parsed = parseDeviceMessage(text);
    if (!parsed.ok) {
      this.counters.badMessages++;
      this.#warnRejected({
        kind: parsed.kind,
        type: truncateForLog(parsed.type),
        error: truncateForLog(parsed.error),
        bytes: text.length,
      });
      if (!this.#helloDone && parsed.type === 'hello') this.#end(CloseCode.BadHello);
      else if (parsed.kind === 'json') this.#forwardBrokenMcp(text);
      return;
    }
    const msg = parsed.message;
    if (this.#controlBudget && !this.#controlBudget.take()) {
      // Every control message can make the server answer or work; one socket must not set the pace.
      this.counters.ratedOut++;
      if (this.counters.ratedOut === 1)
        this.log.warn({ type: msg.type }, 'control messages over the rate limit: dropped');
      return;
    }
    if (msg.type === 'hello') {
      this.#onHello(msg as DeviceHello);
      return;
    }
    if (!this.#helloDone) {
      this.counters.badMessages++;
      this.log.warn({ type: msg.type }, 'message before hello ignored');
      return;
    }
    const conv = this.#conversation;
    if (!conv) return;
    try {
      switch (msg.type) {
        case 'listen':
          this.#touch();
          if (msg.state === 'start') {
            this.#mode = msg.mode;
            this.#apply('listen_start');
            conv.listenStart(msg.mode);
          } else if (msg.state === 'stop') {
            conv.listenStop();
          } else {
            conv.detect(msg.text);
          }
          break;
        case 'abort':
          conv.abort(msg.reason);
          break;
        case 'mcp':
          conv.mcp(msg.payload);
          break;
        case 'iot':
          this.log.debug('legacy iot message ignored');
          break;
        case 'goodbye':
          this.log.info('device said goodbye');
          this.#end(CloseCode.Normal);
          break;
      }
    } catch (err) {
      // A bug in the conversation must not take the process down; the session ends instead.
      this.log.error({ err }, 'conversation failed handling a device message');
      this.#end(CloseCode.InternalError);
    }
  }

  /** One binary frame from the device. Never throws. */
  handleBinary(data: Uint8Array): void {
    if (this.#ended) return;
    if (!this.#helloDone) {
      this.counters.droppedAudioFrames++;
      if (this.counters.droppedAudioFrames === 1)
        this.log.warn({ bytes: data.byteLength }, 'binary frame before hello dropped');
      return;
    }
    const res = unframeAudio(this.#version, data);
    if (!res.ok) {
      this.counters.droppedAudioFrames++;
      this.counters.badMessages++;
      if (this.counters.droppedAudioFrames <= 5)
        this.log.warn({ reason: res.reason, version: this.#version }, 'bad audio frame dropped');
      return;
    }
    this.handleAudio(res.frame.payload, res.frame.timestamp);
  }

  /** One Opus packet that arrived without framing (the MQTT transport's UDP datagrams). Never throws. */
  handleAudio(payload: Uint8Array, timestamp: number): void {
    if (this.#ended || !this.#helloDone) return;
    this.counters.audioFrames++;
    this.#touch();
    try {
      this.#conversation?.audio(payload, timestamp);
    } catch (err) {
      this.log.error({ err }, 'conversation failed handling audio');
      this.#end(CloseCode.InternalError);
    }
  }

  /** The transport closed (device dropped TCP, or we closed). */
  handleClosed(code: number): void {
    if (this.#ended) return;
    this.log.info({ code }, 'device disconnected');
    this.#end(null);
  }

  /**
   * Speaks text the server starts (push, reminders) through the conversation: `spoken` now,
   * `after_turn` when a turn is running; undefined when this session cannot (no hello yet, ended).
   */
  say(text: string, opts: { interrupt?: boolean } = {}): 'spoken' | 'after_turn' | undefined {
    const conv = this.#conversation;
    if (this.#ended || !conv) return undefined;
    try {
      const how = conv.say(text, opts);
      this.#touch();
      return how;
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'server speech could not start');
      return undefined;
    }
  }

  /** Resolves true once the hello is answered (the session can speak), false if it ends first. */
  get greeted(): Promise<boolean> {
    return this.#greetedPromise;
  }

  #greetedResolve!: (ok: boolean) => void;
  #greetedPromise = new Promise<boolean>((resolve) => {
    this.#greetedResolve = resolve;
  });

  /** Ends the session from outside (replacement, shutdown). */
  close(code: CloseCode, reason?: string): void {
    this.#end(code, reason);
  }

  /** Shutdown drain: let a running turn finish until the deadline, then close. */
  async drain(deadline: number): Promise<void> {
    if (this.#ended) return;
    await this.#conversation?.drain(deadline);
    this.#end(CloseCode.GoingAway);
  }

  /** Waits until the session has fully released its resources. */
  get closed(): Promise<void> {
    return this.#closedPromise;
  }

  #closedResolve!: () => void;
  #closedPromise = new Promise<void>((resolve) => {
    this.#closedResolve = resolve;
  });

  #onHello(hello: DeviceHello): void {
    if (this.#helloDone) {
      // A repeated hello on the same socket changes nothing and is not answered again: answering
      // let a client that never reads grow our output buffer without limit.
      this.log.debug('repeated hello ignored');
      return;
    }
    const requested = hello.version ?? this.#opts.headerProtocolVersion ?? 1;
    if (!isProtocolVersion(requested)) {
      this.log.warn({ requested }, 'unsupported protocol version in hello');
      this.#end(CloseCode.BadHello, 'unsupported protocol version');
      return;
    }
    const transport = this.#channel.udp ? 'udp' : 'websocket';
    if (hello.transport !== undefined && hello.transport !== transport) {
      this.log.warn({ transport: hello.transport, expected: transport }, 'hello names another transport');
    }
    this.#version = requested;
    clearTimeout(this.#helloTimer);
    this.#helloTimer = undefined;
    this.#helloDone = true;
    const info: SessionInfo = {
      sessionId: this.id,
      deviceId: this.deviceId,
      clientId: this.#opts.clientId,
      protocolVersion: requested,
      uplink: {
        sampleRate: hello.audio_params?.sample_rate ?? 16000,
        frameDurationMs: hello.audio_params?.frame_duration ?? 60,
      },
      downlink: { sampleRate: this.#opts.outputSampleRate, frameDurationMs: this.#opts.frameDurationMs },
      features: { mcp: hello.features?.mcp === true, aec: hello.features?.aec === true },
      ...(this.#opts.reachedAt ? { reachedAt: this.#opts.reachedAt } : {}),
    };
    this.#sendHello();
    this.log.info({ version: requested, uplink: info.uplink, features: info.features }, 'hello');
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    const control: StateControl = {
      get current() {
        return self.#state;
      },
      get mode() {
        return self.#mode;
      },
      apply: (event) => this.#apply(event),
    };
    try {
      this.#conversation = this.#opts.createConversation({
        info,
        channel: this.#channel,
        log: this.log,
        signal: this.#abort.signal,
        state: control,
        closeSession: (code, reason) => this.#end(code, reason),
      });
      this.#greetedResolve(true);
    } catch (err) {
      this.log.error({ err }, 'could not start the conversation');
      this.#end(CloseCode.InternalError);
    }
  }

  /** An MCP reply the firmware broke with unescaped error text: its payload goes to the device MCP to salvage. */
  #forwardBrokenMcp(text: string): void {
    const conv = this.#conversation;
    const payload = conv ? brokenMcpPayload(text) : undefined;
    if (!conv || payload === undefined) return;
    if (this.#controlBudget && !this.#controlBudget.take()) {
      this.counters.ratedOut++;
      return;
    }
    try {
      conv.mcp(payload);
    } catch (err) {
      this.log.error({ err }, 'conversation failed handling a device message');
      this.#end(CloseCode.InternalError);
    }
  }

  /** Bounded by the session logger's rate limit (core/log-rate-limit.ts): a client sending garbage in a loop costs a few lines. */
  #warnRejected(fields: Record<string, unknown>): void {
    this.log.warn(fields, 'device message rejected');
  }

  #sendHello(): void {
    this.#channel.sendJson(
      serverHello(this.id, this.#opts.outputSampleRate, this.#opts.frameDurationMs, this.#channel.udp),
    );
  }

  #apply(event: SessionEvent): SessionState | null {
    const to = nextState(this.#state, event, this.#mode === 'manual');
    if (to === null) {
      this.log.debug({ state: this.#state, event }, 'event ignored in this state');
      return null;
    }
    if (to !== this.#state) {
      this.log.debug({ from: this.#state, to, event }, 'state');
      this.#state = to;
    }
    this.#touch();
    return to;
  }

  /** Restarts the idle timer. While a turn runs the device may legitimately send nothing (it is listening to us). */
  #touch(): void {
    if (this.#ended) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => this.#onIdle(), this.#opts.idleTimeoutMs);
  }

  #onIdle(): void {
    if (this.#conversation?.busy) {
      this.#touch();
      return;
    }
    this.log.info({ idleTimeoutMs: this.#opts.idleTimeoutMs }, 'idle timeout');
    this.#end(CloseCode.IdleTimeout);
  }

  /** Ends the session once: stops timers, closes the conversation, then the channel. */
  #end(code: CloseCode | null, reason?: string): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#helloTimer);
    clearTimeout(this.#idleTimer);
    this.#abort.abort();
    this.#greetedResolve(false);
    if (code !== null) {
      if (code === CloseCode.HelloTimeout)
        this.log.warn({ helloTimeoutMs: this.#opts.helloTimeoutMs }, 'no hello in time');
      this.#channel.close(code, reason ?? CloseReason[code]);
    }
    const conv = this.#conversation;
    const finish = (): void => {
      this.log.info(
        {
          ...this.counters,
          ...(this.#warnings.suppressed() > 0 ? { suppressedWarnings: this.#warnings.suppressed() } : {}),
          ms: Date.now() - this.#startedAt,
          code,
        },
        'session ended',
      );
      this.#opts.onEnded?.(this);
      this.#closedResolve();
    };
    if (conv) {
      conv.close().then(finish, (err: unknown) => {
        this.log.error({ err }, 'conversation close failed');
        finish();
      });
    } else {
      finish();
    }
  }
}
