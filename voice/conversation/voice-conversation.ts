/**
 * @module The voice conversation of one session: uplink listening, one turn at a time, barge-in,
 * the device's own MCP tools, and cleanup. It implements the session's Conversation seam.
 */
import { sleep } from '../../core/abort.ts';
import { realClock } from '../../core/clock.ts';
import { ErrorCode, toVoiceError, VoiceError } from '../../core/errors.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import type { OpusSampleRate } from '../../audio/opus/codec.ts';
import { createHistory, type History } from '../../llm/history.ts';
import { buildSystemPrompt } from '../../llm/system-prompt.ts';
import { createDeviceMcp, type DeviceMcp } from '../../mcp/device-mcp.ts';
import type { ListenMode } from '../../protocol/messages.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import type { Conversation, ConversationContext, ConversationFactory } from '../session/conversation.ts';
import { Listener, type ListenerEvent } from './listener.ts';
import { isWakeWord, normalizeWake, wakeWordSet } from './wake-words.ts';
import { Recognition } from './recognition.ts';
import { canStream, type StreamingAsr } from '../../audio/asr/asr.ts';
import { EndOfTurn, longestSilenceMs, shortestSilenceMs } from '../turn-end/end-of-turn.ts';
import { createLlmJudge } from '../turn-end/llm-judge.ts';
import { Turn, type TurnInput, type TurnOptions } from './turn.ts';
import { TurnBudget } from './turn-budget.ts';
import type { SessionTools, VoiceDeps } from './voice-deps.ts';
import { configWithProfile, depsWithProfile, type HeldProfile, type TurnProfile } from './turn-profile.ts';
import type { VoiceConfig } from './voice-config.ts';
import type { MemoryMode, SessionMemory } from './session-memory.ts';
import type { ChatMessage } from '../../llm/types.ts';
import type { RealtimeModel } from '../../llm/realtime.ts';
import type { ToolSpec } from '../../mcp/contract/tool-source.ts';
import { RealtimeLink } from './realtime-link.ts';
import { realtimeInstructions } from './realtime-instructions.ts';

/**
 * Early starts dropped within one utterance before no more are tried until it ends: each costs an
 * ASR and an LLM request, and a device that pauses and resumes on purpose must not turn one
 * utterance into a stream of them.
 */
const MAX_EARLY_DROPS_PER_UTTERANCE = 3;

/** Characters of history (old turns are dropped first); roughly 10k tokens. */
const HISTORY_MAX_CHARS = 40_000;

/**
 * Server-initiated texts (`say`) waiting for the running turn at most; past it the oldest waiting
 * one is dropped (logged): a sender that outpaces the device must not grow the session.
 */
export const MAX_QUEUED_SAYS = 8;

/** An utterance's streaming recognition and the profile whose recogniser it uses. */
interface UtteranceRecognition {
  rec: Recognition;
  held: HeldProfile | undefined;
  /**
   * A realtime agent's (`vad.realtimeTranscript`): its partials only tell the end of turn; it is
   * cancelled when the utterance ends, and its final is never asked for.
   */
  endOfTurnOnly: boolean;
}

/** Two transcripts say the same words (case, punctuation and spacing aside). */
function sameWords(a: string, b: string): boolean {
  return normalizeWake(a) === normalizeWake(b);
}

class VoiceConversation implements Conversation {
  readonly #deps: VoiceDeps;
  /** The turns' clock (`VoiceDeps.clock`): end-of-speech times are read on it. */
  readonly #now = (): number => (this.#deps.clock ?? realClock).now();
  readonly #ctx: ConversationContext;
  /** Made at its first use (a turn, the memory given back), not at hello: an idle device holds none. */
  #historyMade: History | undefined;
  readonly #wakeWords: ReadonlySet<string>;
  #media: SessionMedia | undefined;
  #listener: Listener | undefined;
  #ready: Promise<void> | undefined;
  /** Packets and calls that arrived while the codecs were loading. */
  #pendingPackets: Uint8Array[] = [];
  #pendingListen: ListenMode | null = null;
  #turn: Turn | undefined;
  /**
   * A turn started early, at a pause before the end of speech was confirmed (`vad.earlyStartMs`):
   * it becomes `#turn` when the VAD confirms, and is dropped without a trace if the user speaks on
   * or anything else happens first.
   */
  #early: Turn | undefined;
  /** Early starts dropped since the current utterance began. */
  #earlyDrops = 0;
  /** The partial transcript the early turn was started from (streaming recognition only). */
  #earlyText: string | undefined;
  /** The utterance being recognised while it is spoken (a streaming recogniser only). */
  #recognition: UtteranceRecognition | undefined;
  #turnDone: Promise<void> = Promise.resolve();
  #deviceMcp: DeviceMcp | undefined;
  /** The session's grant to the server's camera endpoint (`VoiceDeps.visionFor`), revoked at close. */
  #vision: { release(): void } | undefined;
  #tools: SessionTools | undefined;
  /** The assistant of the running turn (`VoiceDeps.profileFor`): its tool policy applies. */
  #profile: TurnProfile | undefined;
  /** The configuration as the running turn's assistant has it (`configWithProfile`): its prompt and zone head the history. */
  #config: VoiceConfig;
  /** The profile each queued or running turn holds. */
  readonly #held = new Map<Turn, HeldProfile>();
  #closed = false;
  /** Turns started in the last minute (`conversation.maxTurnsPerMinute`). */
  readonly #budget: TurnBudget;
  /** The device's memory (absent: nothing kept across sessions). */
  readonly #memory: SessionMemory | undefined;
  /** The agent and mode whose memory the history holds now. */
  #memoryOf: { agent: string; mode: MemoryMode } | undefined;
  /** The newest user message already recorded (or given back): a turn without one records nothing. */
  #recorded: ChatMessage | undefined;
  /** Server-initiated texts (`say`) waiting for the running turn, or for the media state to open. */
  readonly #says: string[] = [];
  /** The media state is opening for a `say`: the next one waits behind it. */
  #sayOpening = false;
  /** The connection to a realtime agent's model, made when the first turn that needs it begins. */
  #link: RealtimeLink | undefined;
  /** The agent a realtime connection is (being) opened for: its prompt and memory are the instructions. */
  #linkProfile: TurnProfile | undefined;
  /** The model the current utterance's audio is being fed to, if any. */
  #heardBy: RealtimeModel | undefined;
  /** The memory being read into the history (`#recall`), which a realtime connection's instructions wait for. */
  #recalling: Promise<void> | undefined;

  constructor(deps: VoiceDeps, ctx: ConversationContext) {
    this.#deps = deps;
    this.#config = deps.config;
    this.#ctx = ctx;
    this.#wakeWords = wakeWordSet(deps.config.conversation.wakeWords);
    this.#budget = new TurnBudget({ maxTurns: deps.config.conversation.maxTurnsPerMinute, now: this.#now });
    const { info } = ctx;
    this.#memory = deps.memoryFor?.(info);
    const dm = deps.config.deviceMcp;
    if (info.features.mcp && dm.enabled) {
      // A URL someone else hosts wins; else the server's own endpoint, with a token for this session.
      const hosted = dm.vision.url ? null : (deps.visionFor?.(info) ?? null);
      if (hosted) this.#vision = hosted;
      const vision = dm.vision.url
        ? { url: dm.vision.url, token: dm.vision.token }
        : hosted
          ? { url: hosted.url, token: hosted.token }
          : undefined;
      this.#deviceMcp = createDeviceMcp({
        send: (payload) => ctx.channel.sendJson({ type: 'mcp', session_id: info.sessionId, payload }),
        // The device MCP makes its one child (component: device-mcp): a child is ~650 bytes per session.
        log: ctx.log,
        timeoutMs: dm.timeoutMs,
        maxSchemaBytes: dm.maxSchemaBytes,
        ...(vision ? { vision } : {}),
      });
    }
    if (this.#deviceMcp) {
      // Not awaited: the device answers when it can; its tools join the session when listed.
      this.#deviceMcp.initialize(ctx.signal).catch((err: unknown) => {
        if (!this.#closed)
          ctx.log.warn(
            { err: toVoiceError(err).message },
            'device MCP initialize failed; continuing without device tools',
          );
      });
    }
  }

  /** The session's history, made on first use (~1 KB of heap that an idle session does without). */
  get #history(): History {
    this.#historyMade ??= createHistory({
      historyTurns: Math.max(1, this.#deps.config.llm.historyTurns),
      // Also bounded in size: a few very long answers or tool results must not grow the prompt
      // (and memory) without limit. The current turn always stays.
      maxChars: HISTORY_MAX_CHARS,
      systemPrompt: () => this.#systemPrompt(this.#config),
    });
    return this.#historyMade;
  }

  /** The system prompt as `config` has it, with the device's memory block. */
  #systemPrompt(config: VoiceConfig): string {
    const { llm, tools } = config;
    const { deviceId } = this.#ctx.info;
    const prompt = buildSystemPrompt(llm.systemPrompt, {
      now: new Date(),
      ...(tools.timeZone ? { timeZone: tools.timeZone } : {}),
      ...(deviceId ? { device: deviceId } : {}),
    });
    // The remembered facts and summary follow the role, as a delimited block of the user's words.
    const block = this.#memory?.block() ?? '';
    return block === '' ? prompt : `${prompt}\n\n${block}`;
  }

  /**
   * The realtime connection for `profile`'s model, opened (or renewed) now: a turn that needs it
   * is beginning. Its instructions are the agent's prompt, the device's memory and the recent
   * turns; its tools the session's, offered again whenever their listing changes.
   */
  #realtimeFor(profile: TurnProfile, model: RealtimeModel): RealtimeLink {
    this.#linkProfile = profile;
    this.#link ??= new RealtimeLink({
      log: this.#ctx.log,
      now: () => Date.now(),
      setup: async (signal) => {
        const p = this.#linkProfile as TurnProfile;
        await this.#recall(p);
        const config = configWithProfile(this.#deps.config, p);
        const history = this.#history.messages();
        const instructions = realtimeInstructions([
          { role: 'system', content: this.#systemPrompt(config) },
          ...history.slice(history[0]?.role === 'system' ? 1 : 0),
        ]);
        const tools = await this.#listTools(signal);
        return { instructions, tools };
      },
    });
    const opening = this.#link.ready(model, { betweenTurns: this.#turn === undefined });
    // An open connection hears of tools listed since; a new one is told them by its set-up.
    if (!opening && this.#link.model === model)
      void this.#listTools(this.#ctx.signal).then((tools) => this.#link?.offerTools(tools));
    return this.#link;
  }

  /** The session's tools as the running turn's assistant may use them; none when they cannot be listed. */
  async #listTools(signal: AbortSignal): Promise<ToolSpec[]> {
    try {
      return (await this.#tools?.tools.listTools(signal)) ?? [];
    } catch (err) {
      if (!signal.aborted)
        this.#ctx.log.warn({ err: toVoiceError(err).message }, 'tools could not be listed for the realtime model');
      return [];
    }
  }

  /**
   * Opens the media state (codecs, VAD on a worker) and the tools on first use, not at hello: an
   * idle device (connected, waiting for its wake word) holds no codec or VAD state, which is
   * what lets one server keep thousands of them connected.
   */
  #start(): Promise<void> {
    if (!this.#ready) {
      this.#ready = this.#init();
      this.#ready.catch(() => {});
    }
    return this.#ready;
  }

  async #init(): Promise<void> {
    const { info, log } = this.#ctx;
    const cfg = this.#deps.config;
    try {
      // Uplink is always decoded at 16 kHz, whatever the device encoded at: an Opus decoder can
      // output any of its rates, and the VAD and the recognisers want 16 kHz.
      if (info.uplink.sampleRate !== 16000)
        log.info({ sampleRate: info.uplink.sampleRate }, 'device uplink rate is not 16 kHz; decoding at 16 kHz');
      const judge = cfg.vad.llmJudge.enabled
        ? createLlmJudge(() => this.#profile?.llm ?? this.#deps.llm, { timeoutMs: cfg.vad.llmJudge.timeoutMs, log })
        : undefined;
      const endOfTurn = new EndOfTurn(cfg.vad, log, judge);
      const media = await this.#deps.media.open(
        {
          vad: {
            threshold: cfg.vad.threshold,
            // The VAD's own end is the longest wait; the listener ends earlier as the end of turn
            // decides, measuring the silence from the VAD's first mark on.
            minSilenceMs: longestSilenceMs(cfg.vad),
            minSpeechMs: cfg.vad.minSpeechMs,
            pauseMs: shortestSilenceMs(cfg.vad, cfg.vad.earlyStartMs),
          },
          downlinkSampleRate: cfg.audio.outputSampleRate as OpusSampleRate,
          complexity: cfg.audio.opusComplexity,
        },
        log,
      );
      this.#media = media;
      if (this.#closed) {
        media.close();
        return;
      }
      // The worker holding this session's codec and VAD state died: the state is gone, so the
      // session ends and the device reconnects to a fresh one.
      media.onLost((err) => {
        log.error({ err: err.message }, 'media worker lost; ending the session');
        this.#ctx.closeSession(CloseCode.MediaLost, 'media worker failed');
      });
      this.#tools = this.#deps.toolsFor({
        info,
        log,
        policy: () => this.#profile?.tools,
        ...(this.#memory ? { memory: this.#memory } : {}),
        ...(this.#deviceMcp ? { deviceTools: this.#deviceMcp.toolSource() } : {}),
      });
      this.#listener = new Listener({
        media,
        log,
        preRollMs: cfg.vad.preRollMs,
        maxUtteranceMs: cfg.vad.maxUtteranceMs,
        endOfTurn,
        earlyStartMs: cfg.vad.earlyStartMs,
        now: this.#now,
        onEvent: (e) => this.#onListenerEvent(e),
      });
    } catch (err) {
      log.error({ err: toVoiceError(err).message }, 'voice pipeline could not start');
      this.#ctx.closeSession(CloseCode.InternalError, 'voice pipeline unavailable');
      throw err;
    }
    if (this.#closed) return;
    if (this.#pendingListen) this.#listener.start(this.#pendingListen);
    for (const p of this.#pendingPackets.splice(0)) this.#listener.push(p);
  }

  get busy(): boolean {
    return this.#turn !== undefined;
  }

  listenStart(mode: ListenMode): void {
    this.#dropEarly('listen start');
    this.#dropRecognition('listen start');
    this.#earlyDrops = 0;
    const turn = this.#turn;
    if (turn && !turn.aborted) {
      // In auto and realtime mode a running turn goes on: the firmware sends `listen start` right
      // after a wake-word `detect` (whose greeting or answer is that turn), and sends `abort`
      // first when it wants to interrupt. Listening resumes when the turn ends.
      if (mode !== 'manual') return;
      // Push-to-talk is only ever pressed by a person who is about to speak. A press while the
      // last answer is still being prepared (no abort: the device is not speaking yet) means the
      // new words win: the old turn is dropped, and the next turn waits for it to wind down.
      turn.abort('new push-to-talk press');
      this.#turn = undefined;
    }
    if (!this.#listener) {
      this.#pendingListen = mode;
      void this.#start();
      return;
    }
    this.#listener.start(mode);
  }

  listenStop(): void {
    this.#dropEarly('listen stop');
    if (!this.#listener) return;
    if (!this.#listener.active) {
      this.#ctx.state.apply('listen_stop');
      return;
    }
    this.#listener.stop();
  }

  detect(text: string): void {
    const trimmed = this.#bounded(text.trim());
    if (!trimmed) return;
    if (!this.#media && !this.#closed) {
      // The media state opens on first use (or is still opening): answer once it is there.
      this.#start().then(
        () => this.detect(trimmed),
        () => {},
      );
      return;
    }
    const isWake = isWakeWord(this.#wakeWords, trimmed);
    // Over the turn budget the running turn goes on, unless the device is to be told.
    const input = this.#budgeted(
      isWake
        ? { source: 'wake_word', text: trimmed, endedAt: this.#now() }
        : { source: 'text', text: trimmed, endedAt: this.#now() },
    );
    if (!input) return;
    this.#dropEarly('wake word');
    this.#dropRecognition('wake word');
    this.#turn?.abort('wake word');
    this.#ctx.state.apply('detect');
    this.#startTurn(input);
  }

  /** A typed text cut to `conversation.maxTextChars` (whole code points), before any model sees it. */
  #bounded(text: string): string {
    const max = this.#deps.config.conversation.maxTextChars;
    if (text.length <= max) return text;
    const cut = Array.from(text).slice(0, max).join('');
    if (cut.length < text.length)
      this.#ctx.log.info({ chars: text.length, maxTextChars: max }, 'typed text cut to conversation.maxTextChars');
    return cut;
  }

  /**
   * The turn to start for `input` under the session's turn budget: `input` itself, the spoken
   * notice (the first refusal of a window), or nothing (refused silently).
   */
  #budgeted(input: TurnInput): TurnInput | undefined {
    const verdict = this.#budget.take();
    if (verdict === 'start') return input;
    this.#deps.observer?.onTurnRefused?.();
    if (verdict === 'refuse') return undefined;
    const cfg = this.#deps.config.conversation;
    this.#ctx.log.warn(
      { source: input.source, maxTurnsPerMinute: cfg.maxTurnsPerMinute },
      'turn budget spent; new turns refused',
    );
    return { source: 'notice', text: cfg.tooManyTurns, endedAt: input.endedAt };
  }

  audio(packet: Uint8Array): void {
    if (this.#closed) return;
    if (!this.#listener) {
      // Kept only while the media state is opening for a listen start (bounded: about 6 s of
      // audio; it opens in milliseconds). Audio nobody asked to be heard is dropped.
      if (this.#pendingListen && this.#pendingPackets.length < 100) this.#pendingPackets.push(packet);
      return;
    }
    this.#listener.push(packet);
  }

  abort(reason: string | undefined): void {
    this.#dropEarly('device abort');
    this.#dropRecognition('device abort');
    const turn = this.#turn;
    if (turn) {
      turn.abort(reason ?? 'device abort');
    } else {
      // Nothing running on our side; the device may still think it is speaking.
      this.#ctx.channel.sendJson({ type: 'tts', state: 'stop', session_id: this.#ctx.info.sessionId });
    }
    this.#ctx.state.apply('abort');
  }

  mcp(payload: Record<string, unknown> | string): void {
    if (this.#deviceMcp) this.#deviceMcp.handleMessage(payload);
    else this.#ctx.log.debug('mcp message from a device without the mcp feature ignored');
  }

  say(text: string, opts: { interrupt?: boolean }): 'spoken' | 'after_turn' {
    if (this.#closed) throw new VoiceError(ErrorCode.Aborted, 'the session has ended');
    if (opts.interrupt === true) {
      // Spoken now: ahead of what waits, and the running turn (or a tentative early one) gives way.
      this.#dropEarly('server speech');
      const turn = this.#turn;
      if (turn) {
        turn.abort('server speech');
        this.#turn = undefined;
      }
      this.#says.unshift(text);
      this.#bound(true);
      this.#sayNext();
      return 'spoken';
    }
    if (this.#turn || this.#sayOpening || this.#says.length > 0) {
      this.#says.push(text);
      this.#bound(false);
      return 'after_turn';
    }
    this.#says.push(text);
    this.#sayNext();
    return 'spoken';
  }

  /** Keeps at most MAX_QUEUED_SAYS waiting: the oldest go (not the first when it is the one interrupting now). */
  #bound(keepFirst: boolean): void {
    const over = this.#says.length - MAX_QUEUED_SAYS;
    if (over <= 0) return;
    this.#says.splice(keepFirst ? 1 : 0, over);
    this.#ctx.log.warn(
      { max: MAX_QUEUED_SAYS, dropped: over },
      'too many server messages waiting for the turn: the oldest dropped',
    );
  }

  /**
   * Starts the next waiting `say` as a turn without the model (a `notice`: spoken as it is, in the
   * turn's assistant's voice, through the same audio path as an answer). It is not put in the
   * history: the model did not say it. Opens the media state first when the session has not
   * listened yet. False when nothing was started.
   */
  #sayNext(): boolean {
    if (this.#closed || this.#turn || this.#says.length === 0) return false;
    if (!this.#media || !this.#tools) {
      if (this.#sayOpening) return true;
      this.#sayOpening = true;
      this.#start().then(
        () => {
          this.#sayOpening = false;
          this.#sayNext();
        },
        () => {
          this.#sayOpening = false;
        },
      );
      return true;
    }
    const text = this.#says.shift() as string;
    this.#dropEarly('server speech');
    this.#ctx.state.apply('detect');
    this.#startTurn({ source: 'notice', text, endedAt: this.#now() });
    return true;
  }

  async drain(deadline: number): Promise<void> {
    if (!this.#turn) return;
    const left = deadline - Date.now();
    const timeout = sleep(Math.max(0, left)).then(() => 'timeout' as const);
    const done = this.#turnDone.then(() => 'done' as const);
    if ((await Promise.race([timeout, done])) === 'timeout') this.#turn?.abort('shutdown deadline');
    await this.#turnDone;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // First: the token must not outlive the session, whatever the rest of the cleanup does.
    this.#vision?.release();
    try {
      this.#dropEarly('session closed');
      this.#dropRecognition('session closed');
      this.#says.length = 0;
      this.#turn?.abort('session closed');
      await this.#turnDone;
      await this.#ready?.catch(() => {});
      this.#listener?.close();
      this.#link?.close();
      this.#deviceMcp?.close();
      await this.#tools?.close?.().catch(() => {});
    } finally {
      // Released whatever happened above: the worker's codec and VAD state, and the device's
      // place among the live sessions (its summary is asked for here).
      this.#media?.close();
      this.#memory?.close();
    }
  }

  /**
   * Puts the device's earlier turns with the turn's agent into the history when the agent (or its
   * memory mode) is not the one the history holds: at the session's first turn, and when the
   * device was moved to another agent (whose history starts from its own turns, not the old role's).
   */
  async #recall(profile: TurnProfile | undefined): Promise<void> {
    // A realtime connection's set-up and the turn both ask: the second waits for the first's read.
    while (this.#recalling) await this.#recalling;
    const run = this.#recallNow(profile);
    this.#recalling = run;
    try {
      await run;
    } finally {
      this.#recalling = undefined;
    }
  }

  async #recallNow(profile: TurnProfile | undefined): Promise<void> {
    const memory = this.#memory;
    if (!memory || !profile) return;
    if (memory.takeCleared()) {
      this.#history.clear();
      this.#memoryOf = undefined;
    }
    const mode = profile.memory ?? 'summary';
    if (this.#memoryOf?.agent === profile.agent && this.#memoryOf.mode === mode) return;
    const changed = this.#memoryOf !== undefined && this.#memoryOf.agent !== profile.agent;
    this.#memoryOf = { agent: profile.agent, mode };
    const recalled = await memory.use(profile.agent, mode).catch((err: unknown) => {
      this.#ctx.log.warn({ err: toVoiceError(err).message }, 'device memory could not be read; answering without it');
      // The next turn asks again.
      this.#memoryOf = undefined;
      return [];
    });
    if (changed || this.#history.turns === 0) {
      this.#history.clear();
      this.#history.append(...recalled);
      this.#recorded = recalled.findLast((m) => m.role === 'user');
    }
  }

  /** Hands the turn just ended (from its user message on) to the memory. */
  #record(): void {
    if (!this.#memory) return;
    if (this.#memory.takeCleared()) {
      this.#history.clear();
      this.#memoryOf = undefined;
      return;
    }
    const messages = this.#history.messages();
    const at = messages.findLastIndex((m) => m.role === 'user');
    const user = messages[at];
    if (at < 0 || user === this.#recorded) return;
    this.#recorded = user;
    this.#memory.record(messages.slice(at));
  }

  #onListenerEvent(e: ListenerEvent): void {
    if (e.type === 'audio') {
      if (e.first) this.#openRecognition();
      this.#recognition?.rec.push(e.pcm);
      if (this.#heardBy) this.#link?.appendAudio(e.pcm);
      return;
    }
    if (e.type === 'speech_start') {
      // Realtime barge-in: the user talks over the answer.
      if (this.#turn && this.#deps.config.vad.bargeIn && this.#ctx.state.mode === 'realtime') {
        this.#ctx.log.info('barge-in: speech during the answer');
        this.#turn.abort('barge-in');
        this.#listener?.bargeIn();
      }
      return;
    }
    if (e.type === 'pause') {
      this.#startEarly(e.pcm, e.sampleRate);
      return;
    }
    if (e.type === 'resume') {
      this.#dropEarly('speech resumed');
      return;
    }
    const early = this.#early;
    const earlyText = this.#earlyText;
    this.#early = undefined;
    this.#earlyText = undefined;
    this.#earlyDrops = 0;
    const opened = this.#recognition;
    this.#recognition = undefined;
    // A realtime agent's recogniser only told the end of turn: the model's transcript is the turn's.
    const recognition = opened?.endOfTurnOnly ? undefined : opened;
    if (opened !== recognition) this.#endRecognition(opened, 'the utterance ended');
    if (this.#turn) {
      early?.abort('a turn is running');
      this.#endRecognition(recognition, 'a turn is running');
      return;
    }
    const heardBy = this.#heardBy;
    this.#heardBy = undefined;
    if (!e.hadSpeech && e.reason !== 'manual') {
      early?.abort('no speech');
      this.#endRecognition(recognition, 'no speech');
      // A false start: the model forgets what it was sent.
      if (heardBy) this.#link?.clearAudio();
      return;
    }
    const final = recognition ? this.#finishRecognition(recognition) : undefined;
    if (early !== undefined && e.reason === 'vad' && this.#budget.allows()) {
      // The pause was the end of speech: the early turn is this utterance's turn (its transcript
      // is of the same speech, without the last moments of silence)...
      if (final === undefined || earlyText === undefined) {
        if (this.#commitEarly(early, e.endedAt, e.silenceMs)) return;
      } else {
        // ...once the final transcript says what the partial it started from said.
        this.#commitEarlyIfSame(early, earlyText, final, e);
        return;
      }
    }
    early?.abort('utterance cut otherwise');
    if (e.pcm.length === 0) {
      final?.catch(() => {});
      if (heardBy) this.#link?.clearAudio();
      this.#ctx.state.apply('turn_end_no_answer');
      return;
    }
    // No early turn, but a partial the end of turn found complete: the model starts on it now,
    // held, while the final comes (a vendor round trip), and is kept if the final says the same.
    const partial = recognition?.rec.partial ?? '';
    if (final && e.reason === 'vad' && partial.trim() !== '' && this.#budget.allows() && this.#media && this.#tools) {
      const speculative = this.#newTurn(
        {
          source: 'voice',
          pcm: e.pcm,
          sampleRate: e.sampleRate,
          endedAt: this.#now(),
          transcript: Promise.resolve(partial),
        },
        { early: true },
      );
      this.#run(speculative);
      this.#commitEarlyIfSame(speculative, partial, final, e);
      return;
    }
    this.#ctx.state.apply(e.reason === 'manual' ? 'listen_stop' : 'speech_end');
    this.#startVoiceTurn(e, final, heardBy);
  }

  /** The turn for an utterance the end of turn (or the device) has ended. */
  #startVoiceTurn(
    e: Extract<ListenerEvent, { type: 'utterance' }>,
    transcript: Promise<string> | undefined,
    heardBy?: RealtimeModel,
  ): void {
    const input = this.#budgeted({
      source: 'voice',
      pcm: e.pcm,
      sampleRate: e.sampleRate,
      endedAt: e.endedAt,
      ...(e.reason === 'vad' ? { silenceMs: e.silenceMs } : {}),
      ...(transcript ? { transcript } : {}),
    });
    if (input) {
      this.#startTurn(input, heardBy);
      return;
    }
    transcript?.catch(() => {});
    if (heardBy) this.#link?.clearAudio();
    // Refused silently: the utterance is dropped and the device, still listening, is heard again.
    const st = this.#ctx.state;
    st.apply('turn_end_no_answer');
    if (st.mode !== 'manual' && st.current === 'listening') this.#listener?.start(st.mode);
  }

  /** Makes the early turn the current one, as `#startTurn` would a new one; false if it had already ended. */
  #commitEarly(early: Turn, endedAt: number, silenceMs: number): boolean {
    if (early.signal.aborted) return false;
    this.#ctx.state.apply('speech_end');
    this.#listener?.pause(this.#monitors());
    this.#turn = early;
    if (!early.commit(endedAt, silenceMs)) return false;
    this.#budget.record();
    return true;
  }

  /**
   * An early turn made from a partial transcript: it holds the session as the current turn while
   * the final comes (a vendor round trip), then goes out if the final says the same words, or
   * gives way to a turn made from the final.
   */
  #commitEarlyIfSame(
    early: Turn,
    earlyText: string,
    final: Promise<string>,
    e: Extract<ListenerEvent, { type: 'utterance' }>,
  ): void {
    this.#ctx.state.apply('speech_end');
    this.#listener?.pause(this.#monitors());
    this.#turn = early;
    const decide = (text: string | undefined): void => {
      // Something else (an abort, a wake word, the session's end) took over meanwhile.
      if (this.#closed || this.#turn !== early) return;
      if (text === undefined || sameWords(text, earlyText)) {
        if (early.commit(e.endedAt, e.silenceMs)) {
          this.#budget.record();
          return;
        }
      }
      early.abort('the final transcript differs from the partial');
      this.#turn = undefined;
      this.#startVoiceTurn(e, Promise.resolve(text ?? earlyText));
    };
    final.then(decide, (err: unknown) => {
      // No final: the partial is the best transcript there is.
      this.#ctx.log.warn({ err: toVoiceError(err).message }, 'no final transcript; answering the partial one');
      decide(undefined);
    });
  }
  /** Realtime devices with barge-in on keep the VAD running during the answer. */
  #monitors(): boolean {
    return this.#ctx.state.mode === 'realtime' && this.#deps.config.vad.bargeIn;
  }

  /**
   * A pause that may end the utterance: its turn starts now, held until the end is confirmed. With
   * a streaming recogniser it starts from the partial transcript (none yet, or one that ends
   * unfinished: no early start); otherwise the batch recogniser transcribes the utterance so far,
   * and that transcript tells the end of turn how long to wait.
   */
  #startEarly(utterance: () => Int16Array, sampleRate: number): void {
    // A realtime model hears the utterance itself and answers at the end of turn: nothing to start early.
    if (this.#closed || this.#turn || this.#early || !this.#media || !this.#tools || this.#heardBy) return;
    if (this.#earlyDrops >= MAX_EARLY_DROPS_PER_UTTERANCE || !this.#budget.allows()) return;
    const pcm = utterance();
    if (pcm.length === 0) return;
    const recognition = this.#recognition;
    if (recognition) {
      const text = recognition.rec.partial;
      if (text.trim() === '' || this.#listener?.verdict === 'unfinished') return;
      const input: TurnInput = {
        source: 'voice',
        pcm,
        sampleRate,
        endedAt: this.#now(),
        transcript: Promise.resolve(text),
      };
      this.#early = this.#newTurn(input, { early: true });
      this.#earlyText = text;
    } else {
      const input: TurnInput = { source: 'voice', pcm, sampleRate, endedAt: this.#now() };
      const turn = this.#newTurn(input, {
        early: true,
        onTranscript: (text) => {
          if (this.#early === turn) this.#listener?.transcript(text);
        },
      });
      this.#early = turn;
    }
    this.#run(this.#early);
  }

  #dropEarly(reason: string): void {
    const early = this.#early;
    if (!early) return;
    this.#early = undefined;
    this.#earlyText = undefined;
    this.#earlyDrops++;
    early.abort(reason);
  }

  /**
   * The utterance's first audio: a streaming recogniser (the device's agent's, as it is now) starts
   * hearing it. A recogniser that cannot stream leaves the utterance to the batch path. A realtime
   * agent's model hears it instead; with `vad.realtimeTranscript` its streaming recogniser hears it
   * too, only so the end of turn has partials to judge.
   */
  #openRecognition(): void {
    this.#dropRecognition('a new utterance');
    this.#heardBy = undefined;
    if (this.#closed || !this.#media) return;
    const held = this.#deps.profileFor?.(this.#ctx.info);
    const model = held?.profile.realtime;
    if (held && model) {
      // A realtime agent: its model hears the utterance as it is spoken, in place of a recogniser
      // (with `vad.realtimeTranscript`, beside one whose partials only tell the end of turn).
      this.#realtimeFor(held.profile, model).startUtterance();
      this.#heardBy = model;
      const asr = held.profile.asr;
      if (this.#deps.config.vad.realtimeTranscript && canStream(asr)) this.#recognise(asr, held, true);
      else held.release();
      return;
    }
    const asr = held?.profile.asr ?? this.#deps.asr;
    if (!canStream(asr)) {
      held?.release();
      return;
    }
    this.#recognise(asr, held, false);
  }

  /** Opens the utterance's streaming recognition on `asr`; `held` is released when it ends. */
  #recognise(asr: StreamingAsr, held: HeldProfile | undefined, endOfTurnOnly: boolean): void {
    if (!this.#media) {
      held?.release();
      return;
    }
    const log = this.#ctx.log;
    try {
      const rec = new Recognition(asr, {
        sampleRate: this.#media.uplinkSampleRate,
        parent: this.#ctx.signal,
        log,
        onPartial: (text) => {
          log.debug({ pii: { text } }, 'partial transcript');
          if (this.#recognition?.rec === rec) this.#listener?.transcript(text);
        },
      });
      this.#recognition = { rec, held, endOfTurnOnly };
    } catch (err) {
      held?.release();
      log.warn(
        { err: toVoiceError(err).message },
        endOfTurnOnly
          ? 'streaming recognition could not start; the end of turn waits the plain silence'
          : 'streaming recognition could not start; the batch path will transcribe',
      );
    }
  }

  /** Cancels the utterance's recognition, if any (its connection closes now). */
  #dropRecognition(reason: string): void {
    const r = this.#recognition;
    this.#recognition = undefined;
    this.#endRecognition(r, reason);
  }

  #endRecognition(r: UtteranceRecognition | undefined, reason: string): void {
    if (!r) return;
    r.rec.cancel(reason);
    r.held?.release();
  }

  /** The utterance is over: its final transcript (the profile it was made with is released after). */
  #finishRecognition(r: UtteranceRecognition): Promise<string> {
    const final = r.rec.finish();
    void final.then(
      () => r.held?.release(),
      () => r.held?.release(),
    );
    return final;
  }

  #startTurn(input: TurnInput, heardBy?: RealtimeModel): void {
    if (this.#closed || !this.#media || !this.#tools) {
      this.#ctx.log.warn('turn requested before the pipeline was ready; ignored');
      return;
    }
    this.#listener?.pause(this.#monitors());
    const turn = this.#newTurn(input, {}, heardBy);
    this.#turn = turn;
    this.#run(turn);
  }

  #newTurn(input: TurnInput, opts: TurnOptions = {}, heardBy?: RealtimeModel): Turn {
    const media = this.#media;
    const tools = this.#tools;
    if (!media || !tools) throw new Error('voice pipeline not ready');
    // The device's assistant as it is now: a change of agent applies from this turn on.
    const held = this.#deps.profileFor?.(this.#ctx.info);
    const realtime = held ? this.#realtimeOfTurn(held.profile, input, heardBy) : undefined;
    const turn = new Turn(
      {
        deps: held ? depsWithProfile(this.#deps, held.profile) : this.#deps,
        info: this.#ctx.info,
        channel: this.#ctx.channel,
        log: this.#ctx.log,
        media,
        history: this.#history,
        tools,
        state: this.#ctx.state,
        sessionSignal: this.#ctx.signal,
        ...(realtime ? { realtime } : {}),
      },
      input,
      opts,
    );
    if (held) this.#held.set(turn, held);
    return turn;
  }

  /**
   * The realtime connection a turn under `profile` uses, if its agent has a model: a typed text
   * opens it; speech uses it when the utterance was fed to the same model (else the cascade
   * answers, from the utterance's audio); a greeting or a notice only tells an open one what was said.
   */
  #realtimeOfTurn(
    profile: TurnProfile,
    input: TurnInput,
    heardBy: RealtimeModel | undefined,
  ): { link: RealtimeLink; model: RealtimeModel } | undefined {
    const model = profile.realtime;
    if (!model) return undefined;
    if (input.source === 'text') return { link: this.#realtimeFor(profile, model), model };
    if (input.source === 'voice') return heardBy === model && this.#link ? { link: this.#link, model } : undefined;
    return this.#link?.model === model && !this.#link.failure ? { link: this.#link, model } : undefined;
  }

  /** Runs `turn` after the previous one has wound down; a dropped early turn leaves no aftermath. */
  #run(turn: Turn): void {
    const previous = this.#turnDone;
    this.#turnDone = previous
      .then(() => {
        // From here on the history's system prompt and the tools are this turn's assistant's.
        const profile = this.#held.get(turn)?.profile;
        if (profile) {
          this.#profile = profile;
          this.#config = configWithProfile(this.#deps.config, profile);
        }
        return this.#recall(this.#profile).then(() => turn.run());
      })
      .then(
        (result) => {
          if (this.#turn === turn) this.#turn = undefined;
          if (!turn.dropped) this.#record();
          if (!turn.dropped) this.#afterTurn(turn, result.endSession);
        },
        (err: unknown) => {
          if (this.#turn === turn) this.#turn = undefined;
          this.#ctx.log.error({ err: toVoiceError(err).message }, 'turn crashed');
          if (!turn.dropped) this.#afterTurn(turn, false);
        },
      )
      .finally(() => {
        this.#held.get(turn)?.release();
        this.#held.delete(turn);
      });
  }

  #afterTurn(turn: Turn, endSession: boolean): void {
    if (this.#closed) return;
    if (endSession && !turn.aborted) {
      this.#ctx.log.info('conversation ended by the assistant');
      this.#ctx.closeSession(CloseCode.Normal, 'goodbye');
      return;
    }
    // A newer turn or listen start already took over.
    if (this.#turn) return;
    // What the server asked to say while this turn ran comes next; listening resumes after it.
    if (this.#sayNext()) return;
    const st = this.#ctx.state;
    if (st.current === 'speaking') st.apply('tts_stop');
    else if (st.current === 'thinking') st.apply('turn_end_no_answer');
    // Auto and realtime devices listen again after `tts stop` (realtime never stopped its mic and
    // sends no new `listen start`), so the server listens again too.
    if (st.mode !== 'manual' && st.current === 'listening' && !turn.aborted) this.#listener?.start(st.mode);
  }
}

/** The factory the session calls after each hello. */
export function createVoiceConversationFactory(deps: VoiceDeps): ConversationFactory {
  return (ctx) => new VoiceConversation(deps, ctx);
}
