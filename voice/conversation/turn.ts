/**
 * @module One conversation turn: ASR (for speech) → `stt` → ReAct over the session's tools, its
 * text spoken while the model is still writing (cut into sentences, or streamed to a voice that
 * takes text in pieces: `speech.ts`) → `tts stop`. A failure is spoken as a short apology, never
 * silence. Everything the turn starts stops with its signal.
 */
import { linkedScope, sleep, type Scope } from '../../core/abort.ts';
import { realClock, type Clock } from '../../core/clock.ts';
import { ErrorCode, isAbortError, toVoiceError, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import { synthesizeOpus } from '../../audio/media/tts-to-opus.ts';
import { canStreamText, type Tts } from '../../audio/tts/tts.ts';
import type { History } from '../../llm/history.ts';
import { runReact, type ReactOutcome } from '../../llm/react.ts';
import { EmotionEmoji } from '../../protocol/messages.ts';
import type { DeviceChannel } from '../session/channel.ts';
import type { SessionInfo, StateControl } from '../session/conversation.ts';
import { AudioOut } from './audio-out.ts';
import { SentenceSpeech } from './sentence-speech.ts';
import { boundedSpeech, type Speech } from './speech.ts';
import { SpeechQueue, type Synthesize } from './speech-queue.ts';
import { TextStreamSpeech } from './text-stream-speech.ts';
import type { SessionTools, TurnTimings, VoiceDeps } from './voice-deps.ts';
import type { RealtimeModel } from '../../llm/realtime.ts';
import { answerRealtime, type RealtimeAnswerResult } from './realtime-answer.ts';
import type { RealtimeLink } from './realtime-link.ts';

export type TurnInput =
  | {
      source: 'voice';
      pcm: Int16Array;
      sampleRate: number;
      endedAt: number;
      /** Silence heard after the last voiced frame before the end was decided (the end of turn's wait). */
      silenceMs?: number;
      /**
       * The transcript, from a streaming recogniser (its final) or the partial an early start was
       * made from; absent: the batch recogniser transcribes `pcm`. A failed stream falls back to that.
       */
      transcript?: Promise<string>;
    }
  | { source: 'text'; text: string; endedAt: number }
  | { source: 'wake_word'; text: string; endedAt: number }
  /** Says `text` as it is, with no model: what the server tells the device by itself. */
  | { source: 'notice'; text: string; endedAt: number };

export interface TurnEnv {
  deps: VoiceDeps;
  info: SessionInfo;
  channel: DeviceChannel;
  log: Logger;
  media: SessionMedia;
  history: History;
  tools: SessionTools;
  state: StateControl;
  sessionSignal: AbortSignal;
  /**
   * The session's realtime connection when the turn's agent talks through a speech-to-speech
   * model: a spoken or typed turn is answered by it; a greeting or notice is still spoken in the
   * cascade voice and told to it as the assistant's words.
   */
  realtime?: { link: RealtimeLink; model: RealtimeModel };
}

/**
 * How long a realtime turn waits, after its answer, for the model's transcript of the user's
 * words (it may come after the answer) before recording the turn without them.
 */
const USER_TRANSCRIPT_WAIT_MS = 3_000;

export interface TurnResult {
  timings: TurnTimings;
  /** A tool asked for the session to end after this turn (goodbye). */
  endSession: boolean;
}

/** ASR output that carries no words (pocketsphinx and Whisper emit these for noise). */
const NOISE_RE =
  /^[\s\p{P}\p{S}]*$|^\s*[[(<]?\s*(noise|silence|music|blank_audio|inaudible|laughter|unk|sil)\s*[\])>]?\s*$/iu;

export function isNoiseTranscript(text: string): boolean {
  return NOISE_RE.test(text.trim());
}

/** A part of the pipeline the user can be told to fix. */
export type FailedPart = 'llm' | 'asr' | 'tts';

/** Codes that mean a provider (not our code) failed: unreachable, key refused, model missing, overloaded. */
const PROVIDER_CODES: ReadonlySet<string> = new Set([
  ErrorCode.ProviderUnavailable,
  ErrorCode.ProviderRejected,
  ErrorCode.ProviderFailed,
  ErrorCode.RateLimited,
  ErrorCode.Timeout,
  ErrorCode.NotFound,
]);

/** Tags an error with the part it came from, so the apology can say which part failed. */
class PartError extends Error {
  readonly part: FailedPart;
  constructor(part: FailedPart, cause: unknown) {
    super(part, { cause });
    this.part = part;
  }
}

async function inPart<T>(part: FailedPart, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw isAbortError(err) ? err : new PartError(part, err);
  }
}

/**
 * An early turn starts at a pause, before the VAD has confirmed the end of speech: it transcribes,
 * asks the model and synthesises, but holds everything the device or the world would notice
 * (`stt`, emotion, audio, tool calls, the history) until `commit`, or leaves no trace at `drop`.
 */
export interface TurnOptions {
  early?: boolean;
  /** Told the transcript as soon as it is known (an early turn's feeds the end of turn). */
  onTranscript?: (text: string) => void;
}

export class Turn {
  readonly #env: TurnEnv;
  readonly #input: TurnInput;
  /** The turn's cancellation, under the session's: a session end aborts it too. */
  readonly #scope: Scope;
  readonly signal: AbortSignal;
  #out: AudioOut | undefined;
  #firstFrameAt: number | null = null;
  #firstSentenceAt: number | null = null;
  #ttsFirstAudioAt: number | null = null;
  #transcriptAt: number | null = null;
  /** Set by an abort (device, barge-in); a session end shows through the scope. */
  #cancelled = false;
  /** The end-of-speech decision the timings count from; set by `commit` for an early turn. */
  #endedAt: number;
  readonly #clock: Clock;
  readonly #createdAt: number;
  readonly #early: boolean;
  readonly #onTranscript: ((text: string) => void) | undefined;
  /** Silence heard before the end of the utterance was decided (set by `commit` for an early turn). */
  #silenceMs: number | undefined;
  #committed: boolean;
  /** What the device is told, held until commit (in order). */
  #deferred: Array<() => void> = [];
  /** Resolves at commit; rejects when the turn is aborted before it. */
  readonly #gate: Promise<void>;
  #openGate: () => void = () => {};

  constructor(env: TurnEnv, input: TurnInput, opts: TurnOptions = {}) {
    this.#env = env;
    this.#clock = env.deps.clock ?? realClock;
    this.#createdAt = this.#clock.now();
    this.#input = input;
    this.#scope = linkedScope(env.sessionSignal);
    this.signal = this.#scope.signal;
    this.#endedAt = input.endedAt;
    this.#early = opts.early === true;
    this.#onTranscript = opts.onTranscript;
    this.#silenceMs = input.source === 'voice' ? input.silenceMs : undefined;
    this.#committed = !this.#early;
    if (this.#committed) {
      this.#gate = Promise.resolve();
    } else {
      this.#gate = new Promise<void>((resolve, reject) => {
        this.#openGate = resolve;
        this.signal.addEventListener(
          'abort',
          () => reject(new VoiceError(ErrorCode.Aborted, 'early start dropped', { cause: this.signal.reason })),
          { once: true },
        );
      });
      this.#gate.catch(() => {});
      // Its audio is not needed before the commit: the media worker serves other answers first.
      env.media.holdPlayback(true);
    }
  }

  /** An early turn whose end of speech is now confirmed: what it held goes out, in order. False if it was already dropped. */
  commit(endedAt: number, silenceMs?: number): boolean {
    if (this.#committed) return true;
    if (this.signal.aborted) return false;
    this.#committed = true;
    this.#endedAt = endedAt;
    this.#silenceMs = silenceMs;
    this.#env.media.holdPlayback(false);
    for (const send of this.#deferred.splice(0)) send();
    this.#openGate();
    return true;
  }

  /**
   * True for an early turn that ended without a commit, however it was stopped (a drop, or the
   * session's end): nothing of it reached the device, and it leaves nothing behind.
   */
  get dropped(): boolean {
    return !this.#committed;
  }

  /** Runs `send` now, or at commit for an early turn not yet committed. */
  #visible(send: () => void): void {
    if (this.#committed) send();
    else this.#deferred.push(send);
  }

  /** Barge-in / abort: stops audio within one frame, cancels the model, tools and synthesis. */
  abort(reason: string): void {
    if (this.signal.aborted) return;
    this.#cancelled = true;
    if (!this.#committed) {
      // Nothing was shown to the device: nothing to stop there.
      this.#deferred = [];
      this.#env.log.debug({ reason }, 'early start dropped');
      this.#scope.abort(reason);
      return;
    }
    this.#env.log.info({ reason }, 'turn aborted');
    this.#scope.abort(reason);
    if (this.#out) this.#out.stop();
    else this.#env.channel.sendJson({ type: 'tts', state: 'stop', session_id: this.#env.info.sessionId });
  }

  /** True when the turn was interrupted (not when it simply finished). */
  get aborted(): boolean {
    return this.#cancelled || this.#scope.abortedByParent;
  }

  async run(): Promise<TurnResult> {
    const { deps, log } = this.#env;
    const input = this.#input;
    const timings: TurnTimings = {
      source: input.source,
      outcome: 'answered',
      totalMs: 0,
      lateFrames: 0,
      frameIntervals: 0,
      lateIntervals: 0,
      tools: [],
    };
    let endSession = false;
    // A dropped early turn must leave the history as it found it.
    const restoreHistory = this.#early ? this.#env.history.checkpoint() : undefined;
    try {
      const rt = this.#env.realtime;
      if (rt && (input.source === 'voice' || input.source === 'text')) {
        const answer = await inPart('llm', () => this.#answerRealtime(rt, input, timings));
        endSession = answer.endSession;
        if (answer.reason === 'aborted') timings.outcome = 'aborted';
      } else {
        let text: string;
        if (input.source === 'voice') {
          const t0 = this.#clock.now();
          text = (await this.#transcribe(input)).trim();
          this.#transcriptAt = this.#clock.now();
          this.#onTranscript?.(text);
          if (isNoiseTranscript(text)) {
            await this.#gate;
            timings.outcome = 'no_speech';
            log.info(
              {
                asrTookMs: Math.round(this.#transcriptAt - t0),
                audioMs: Math.round((input.pcm.length / input.sampleRate) * 1000),
              },
              'no words recognised; no answer',
            );
            return { timings, endSession };
          }
        } else {
          text = input.text.trim();
        }
        if (this.aborted) throw this.signal.reason;
        if (input.source !== 'notice')
          this.#visible(() => {
            this.#env.channel.sendJson({ type: 'stt', text, session_id: this.#env.info.sessionId });
            log.info({ source: input.source, pii: { text } }, 'user said');
          });

        const out = this.#audioOut();
        if (input.source === 'wake_word') {
          timings.outcome = 'greeted';
          await this.#speakPlain(out, deps.config.conversation.greeting, deps.tts);
          this.#env.realtime?.link.addAssistantText(deps.config.conversation.greeting);
        } else if (input.source === 'notice') {
          // Said verbatim in the cascade voice, also on a realtime agent (see docs/agents.md).
          await this.#speakPlain(out, text, deps.tts);
          this.#env.realtime?.link.addAssistantText(text);
        } else {
          const outcome = await this.#think(text, out, timings);
          endSession = outcome.endSession;
          if (outcome.reason === 'aborted') timings.outcome = 'aborted';
        }
        await out.finish();
      }
    } catch (err) {
      if (isAbortError(err) || this.aborted) {
        timings.outcome = 'aborted';
      } else {
        const part = err instanceof PartError ? err.part : undefined;
        const e = toVoiceError(err instanceof PartError ? err.cause : err);
        timings.outcome = 'failed';
        log.error({ code: e.code, err: e.message, ...(part ? { part } : {}) }, 'turn failed; apologising');
        await this.#apologise(this.#apologyFor(part, e), part);
      }
    } finally {
      if (this.aborted) timings.outcome = 'aborted';
      const endedAt = this.#endedAt;
      timings.totalMs = Math.round(this.#clock.now() - endedAt);
      // Stages an early turn finished before the end of speech was confirmed count as 0.
      const since = (at: number): number => Math.max(0, Math.round(at - endedAt));
      if (this.#transcriptAt !== null) timings.asrMs = since(this.#transcriptAt);
      if (this.#firstSentenceAt !== null) timings.firstSentenceMs = since(this.#firstSentenceAt);
      if (this.#ttsFirstAudioAt !== null) timings.ttsFirstAudioMs = since(this.#ttsFirstAudioAt);
      if (this.#firstFrameAt !== null) timings.firstAudioMs = since(this.#firstFrameAt);
      if (this.#early && this.#committed) timings.earlyStartMs = Math.round(endedAt - this.#createdAt);
      if (this.#silenceMs !== undefined) timings.endOfTurnMs = this.#silenceMs;
      const stats = this.#out?.pacerStats;
      timings.lateFrames = stats?.lateFrames ?? 0;
      timings.frameIntervals = stats?.intervals ?? 0;
      timings.lateIntervals = stats?.lateIntervals ?? 0;
      if (this.aborted && this.#out) this.#out.stop();
    }
    // Releases whatever still listens to the turn (the pacer's place on the shared clock, ...)
    // and unhooks the turn from the session's signal.
    if (!this.signal.aborted) this.#scope.abort('turn finished');
    this.#scope.dispose();
    if (this.dropped) {
      restoreHistory?.();
      // The session's next answer is not held (it starts after this one has wound down).
      this.#env.media.holdPlayback(false);
      deps.observer?.onEarlyStart?.('dropped');
      return { timings, endSession: false };
    }
    if (this.#early) deps.observer?.onEarlyStart?.('used');
    log.info({ ...timings }, 'turn timings');
    deps.observer?.onTurn?.(timings);
    return { timings, endSession };
  }

  /**
   * The utterance's words: the streaming recogniser's final when there is one, else (or when the
   * stream failed) the batch recogniser over the whole utterance.
   */
  async #transcribe(input: Extract<TurnInput, { source: 'voice' }>): Promise<string> {
    const { deps, log } = this.#env;
    const batch = (): Promise<string> =>
      inPart('asr', () => deps.asr.transcribe(input.pcm, { signal: this.signal, sampleRate: input.sampleRate }));
    if (!input.transcript) return batch();
    try {
      return await input.transcript;
    } catch (err) {
      if (this.signal.aborted || isAbortError(err)) throw err;
      const e = toVoiceError(err);
      log.warn({ code: e.code, err: e.message }, 'streaming recognition failed; transcribing the whole utterance');
      return batch();
    }
  }

  #audioOut(): AudioOut {
    const { deps, channel, info, media, log } = this.#env;
    this.#out ??= new AudioOut({
      channel,
      sessionId: info.sessionId,
      media,
      frameMs: info.downlink.frameDurationMs,
      preBufferFrames: deps.config.audio.preBufferFrames,
      sendAheadMs: deps.config.audio.sendAheadMs,
      stopMarginMs: deps.config.audio.ttsStopMarginMs,
      signal: this.signal,
      log,
      clock: this.#clock,
      gate: this.#gate,
      onFirstFrame: () => {
        this.#firstFrameAt = this.#clock.now();
        // The device is now playing our answer: the session is speaking.
        this.#env.state.apply('tts_start');
      },
    });
    return this.#out;
  }

  /**
   * Text → Opus packets. The embedded TTS synthesises in the session's media worker, straight to
   * Opus (no process, nothing CPU-heavy here); other providers stream bytes here, which the worker
   * decodes or resamples and encodes (mp3/aac/flac: ffmpeg first).
   */
  #synth(tts: Tts, onAudio?: () => void): Synthesize {
    const { media, info, log } = this.#env;
    const timed = <T>(items: AsyncIterable<T>): AsyncIterable<T> => (onAudio ? firstOf(items, onAudio) : items);
    if (tts.synthesis === 'media-worker')
      return (text, signal, urgent) => timed(media.speak(text, signal, urgent, tts.voice));
    return (text, signal) =>
      timed(synthesizeOpus(tts, text, media, { sampleRate: info.downlink.sampleRate, signal, log }));
  }

  /**
   * How the answer is spoken: streamed to a voice that takes text in pieces, else cut into
   * sentences; by the voice's capability, never its name. Either way bounded in length.
   */
  #speech(out: AudioOut): Speech {
    const { deps, log, media, info } = this.#env;
    const onFirstText = (): void => {
      this.#firstSentenceAt ??= this.#clock.now();
    };
    const onFirstAudio = (): void => {
      this.#ttsFirstAudioAt ??= this.#clock.now();
    };
    const speech = canStreamText(deps.tts)
      ? new TextStreamSpeech({
          tts: deps.tts,
          out,
          media,
          sampleRate: info.downlink.sampleRate,
          frameMs: info.downlink.frameDurationMs,
          signal: this.signal,
          log,
          onFirstText,
          onFirstAudio,
        })
      : new SentenceSpeech(
          new SpeechQueue(out, this.#synth(deps.tts, onFirstAudio), this.signal, log),
          out,
          onFirstText,
        );
    return boundedSpeech(speech, deps.config.conversation.maxAnswerChars, log);
  }

  async #speakPlain(out: AudioOut, text: string, tts: Tts): Promise<void> {
    const q = new SpeechQueue(out, this.#synth(tts), this.signal, this.#env.log);
    q.push(text);
    await q.end();
    if (q.errors.length > 0) throw q.errors[0];
  }

  async #think(userText: string, out: AudioOut, timings: TurnTimings): Promise<ReactOutcome> {
    const { deps, log, tools, history, channel, info } = this.#env;
    const speech = this.#speech(out);
    const context = tools.context
      ? await tools.context(this.signal).catch((err: unknown) => {
          log.warn({ err: toVoiceError(err).message }, 'resource context unavailable for this turn');
          return [] as string[];
        })
      : [];
    let emotionSent = false;
    const outcome = await inPart('llm', () =>
      runReact({
        llm: deps.llm,
        tools: tools.tools,
        history: context.length > 0 ? withContext(history, context) : history,
        userText,
        maxRounds: deps.config.llm.maxToolRounds,
        signal: this.signal,
        log,
        toolTimeoutMs: deps.config.llm.toolTimeoutMs,
        onText: (delta) => speech.write(delta),
        onEmotion: (emotion) => {
          if (emotionSent) return;
          emotionSent = true;
          this.#visible(() =>
            channel.sendJson({ type: 'llm', emotion, text: EmotionEmoji[emotion], session_id: info.sessionId }),
          );
        },
        beforeAct: () => this.#gate,
        onToolStart: (call) => log.info({ tool: call.name, pii: { args: call.arguments } }, 'tool call'),
        onToolResult: (call, result, ms) => {
          timings.tools.push({ name: call.name, ms: Math.round(ms), isError: result.isError });
          log.info({ tool: call.name, ms: Math.round(ms), isError: result.isError }, 'tool result');
        },
        dispatch: tools.dispatcher
          ? async (results) => {
              const d = tools.dispatcher as NonNullable<SessionTools['dispatcher']>;
              return d.dispatch(results, {
                out,
                signal: this.signal,
                sampleRate: info.downlink.sampleRate,
                flushSpeech: () => speech.flush(),
                speak: (text) => speech.say(text),
              });
            }
          : undefined,
      }),
    );
    await speech.end();
    if (outcome.firstTokenMs !== undefined) timings.llmFirstTokenMs = outcome.firstTokenMs;
    if (outcome.reason !== 'aborted' && speech.failure) throw new PartError('tts', speech.failure);
    if (!this.dropped)
      log.info({ reason: outcome.reason, rounds: outcome.rounds, pii: { text: outcome.text } }, 'assistant answered');
    return outcome;
  }

  /**
   * A spoken or typed turn answered by the realtime model: its audio plays as it arrives; the
   * user's words (the model's transcript, for speech) are shown (`stt`) when known; both sides go
   * into the history like a cascade turn's, once the answer is out.
   */
  async #answerRealtime(
    rt: NonNullable<TurnEnv['realtime']>,
    input: Extract<TurnInput, { source: 'voice' | 'text' }>,
    timings: TurnTimings,
  ): Promise<RealtimeAnswerResult> {
    const { deps, log, channel, info, history, media, tools } = this.#env;
    const out = this.#audioOut();
    let userText: string | undefined;
    let heard: () => void = () => {};
    const userHeard = new Promise<void>((resolve) => {
      heard = resolve;
    });
    const showUser = (text: string): void => {
      if (userText !== undefined) return;
      userText = text.trim();
      heard();
      if (this.aborted) return;
      channel.sendJson({ type: 'stt', text: userText, session_id: info.sessionId });
      log.info({ source: input.source, pii: { text: userText } }, 'user said');
    };
    if (input.source === 'text') showUser(input.text);
    const answer = await answerRealtime({
      link: rt.link,
      model: rt.model,
      request: input.source === 'text' ? { kind: 'text', text: input.text.trim() } : { kind: 'commit' },
      out,
      media,
      sampleRate: info.downlink.sampleRate,
      frameMs: info.downlink.frameDurationMs,
      signal: this.signal,
      log,
      tools,
      maxToolRounds: deps.config.llm.maxToolRounds,
      toolTimeoutMs: deps.config.llm.toolTimeoutMs,
      ...(rt.model.maxFunctionCallsPerResponse !== undefined
        ? { maxCallsPerResponse: rt.model.maxFunctionCallsPerResponse }
        : {}),
      playedMs: () => this.#playedMs(),
      speak: (text) => this.#speakPlain(out, text, deps.tts),
      onFirstAudio: () => {
        this.#ttsFirstAudioAt ??= this.#clock.now();
      },
      onUserTranscript: (text) => {
        this.#transcriptAt ??= this.#clock.now();
        showUser(text);
      },
      onToolResult: (name, result, ms) => {
        timings.tools.push({ name, ms: Math.round(ms), isError: result.isError });
        log.info({ tool: name, ms: Math.round(ms), isError: result.isError }, 'tool result');
      },
    });
    // The user's transcript may still be on its way: waited for while the answer plays out
    // (not after an abort, which hands the device to the next turn at once).
    const waitUser =
      userText === undefined && answer.reason !== 'aborted'
        ? Promise.race([userHeard, sleep(USER_TRANSCRIPT_WAIT_MS, this.signal, this.#clock).catch(() => {})])
        : Promise.resolve();
    await Promise.all([out.finish(), waitUser]);
    if (userText === undefined) log.warn("no transcript of the user's words from the realtime model; recorded empty");
    // Recorded now: a transcript that comes later is no longer this turn's (not shown, not logged).
    userText ??= '';
    history.addUser(userText);
    if (answer.text !== '') history.append({ role: 'assistant', content: answer.text });
    log.info({ reason: answer.reason, pii: { text: answer.text } }, 'assistant answered');
    return answer;
  }

  /** Milliseconds of this turn's audio the device has played: frames sent, at most the time since the first. */
  #playedMs(): number {
    const out = this.#out;
    const first = out?.firstFrameAt ?? null;
    if (!out || first === null) return 0;
    return Math.max(0, Math.min(out.framesSent * this.#env.info.downlink.frameDurationMs, this.#clock.now() - first));
  }

  /** The part's own apology when a provider failed (the user hears what to fix), else the generic one. */
  #apologyFor(part: FailedPart | undefined, err: VoiceError): string {
    const conv = this.#env.deps.config.conversation;
    return part && PROVIDER_CODES.has(err.code) ? conv.apologies[part] : conv.apology;
  }

  /**
   * Speaks the apology: with the embedded TTS when the voice is what failed (asking it again would
   * fail again, or wait for its timeout again), else with the voice, the embedded one if that fails.
   */
  async #apologise(text: string, part: FailedPart | undefined): Promise<void> {
    const { deps, log } = this.#env;
    try {
      await this.#gate;
    } catch {
      return;
    }
    if (this.aborted) return;
    const out = this.#audioOut();
    const fallback = deps.fallbackTts && deps.fallbackTts !== deps.tts ? deps.fallbackTts : undefined;
    const order = fallback ? (part === 'tts' ? [fallback] : [deps.tts, fallback]) : [deps.tts];
    let spoken = false;
    for (const tts of order) {
      try {
        await this.#speakPlain(out, text, tts);
        spoken = true;
        break;
      } catch (err) {
        if (this.aborted) return;
        log.warn({ tts: tts.name, err: toVoiceError(err).message }, 'apology could not be spoken with this TTS');
      }
    }
    // Nothing could speak: at least show it.
    if (!spoken) out.caption(text);
    try {
      await out.finish();
    } catch {
      out.stop();
    }
  }
}

/** `items`, telling `onFirst` when the first one arrives. */
async function* firstOf<T>(items: AsyncIterable<T>, onFirst: () => void): AsyncGenerator<T> {
  let first = true;
  for await (const item of items) {
    if (first) {
      first = false;
      onFirst();
    }
    yield item;
  }
}

/** A history view whose messages carry the resource context right after the system prompt. */
function withContext(history: History, context: string[]): History {
  return {
    ...history,
    messages: () => {
      const msgs = history.messages();
      const at = msgs[0]?.role === 'system' ? 1 : 0;
      return [
        ...msgs.slice(0, at),
        ...context.map((c) => ({ role: 'system' as const, content: c })),
        ...msgs.slice(at),
      ];
    },
    addUser: (t) => history.addUser(t),
    append: (...m) => history.append(...m),
    get turns() {
      return history.turns;
    },
    clear: () => history.clear(),
    checkpoint: () => history.checkpoint(),
  };
}
