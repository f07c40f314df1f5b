/**
 * @module One turn's answer from a realtime model: the request (the user's committed audio, or a
 * typed text), the responses it makes, played as they arrive through the text-stream path
 * (`ResponseAudio` → `TextStreamSegment` → the turn's `AudioOut`), and the functions they call.
 *
 * Function calls go through the session's tools and the turn's dispatcher, as in the cascade:
 * text results go back to the model, which answers on (at most `maxToolRounds` times); media
 * plays and ends the answer (the model is told `played`); a local flag ends it, its text spoken in
 * the agent's cascade voice. A response asking for more than `maxCallsPerResponse` functions is
 * cancelled and the turn fails.
 *
 * Failures (the connection closed, an error event while a response is awaited or made, no event
 * for `responseTimeoutMs`, audio that cannot be played) cancel the response and reject after the
 * audio that did arrive has played: the turn apologises. An abort (device `abort`, speech over
 * the answer) cancels the response at once, telling the model how much of it was heard.
 */
import { ErrorCode, isAbortError, toVoiceError, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { SessionMedia } from '../../audio/media/media.ts';
import type { RealtimeEvent, RealtimeModel } from '../../llm/realtime.ts';
import { decideByFlags, type RoundDecision, type ToolCallResult } from '../../llm/round-decision.ts';
import { toolResultText } from '../../llm/tool-results.ts';
import type { ToolResult } from '../../mcp/contract/tool-source.ts';
import type { AudioOut } from './audio-out.ts';
import { TextStreamSegment } from './text-stream-segment.ts';
import type { SessionTools } from './voice-deps.ts';
import { callFunctions, type FunctionCall } from './realtime-function-calls.ts';
import type { RealtimeLink } from './realtime-link.ts';
import { ResponseAudio } from './realtime-response-audio.ts';

/** Wait for a response's next event unless the model says otherwise. */
export const DEFAULT_RESPONSE_TIMEOUT_MS = 15_000;

/** Function calls one response may ask for at most (as the cascade's per round). */
export const MAX_CALLS_PER_RESPONSE = 8;

/**
 * Characters of the model's transcript one answer keeps at most (some 20 minutes of speech): past
 * it the answer is cut as when its audio outgrows its bound, so a model that writes without end
 * neither grows the turn's memory nor keeps it waiting.
 */
export const MAX_TRANSCRIPT_CHARS = 20_000;

export type RealtimeRequest = { kind: 'commit' } | { kind: 'text'; text: string };

export interface RealtimeAnswerOptions {
  link: RealtimeLink;
  model: RealtimeModel;
  request: RealtimeRequest;
  out: AudioOut;
  media: Pick<SessionMedia, 'encode'>;
  /** Downlink PCM rate and frame duration. */
  sampleRate: number;
  frameMs: number;
  /** The turn's signal. */
  signal: AbortSignal;
  log: Logger;
  tools: SessionTools;
  /** Responses that may follow function results (`llm.maxToolRounds`). */
  maxToolRounds: number;
  toolTimeoutMs?: number;
  maxCallsPerResponse?: number;
  /** Answer audio waiting beyond the segment's read-ahead at most (default `MAX_BUFFERED_BYTES`). */
  maxBufferedBytes?: number;
  /** Milliseconds of the answer the device has played (at an abort). */
  playedMs(): number;
  /** Speaks a text in the agent's cascade voice (a flag's end text, a note about media that could not play). */
  speak(text: string): Promise<void>;
  /** The model's first audio of the answer. */
  onFirstAudio?: () => void;
  /** The user's words, as the model heard them (may come after the answer). */
  onUserTranscript?: (text: string) => void;
  onToolResult?: (name: string, result: ToolResult, ms: number) => void;
}

export interface RealtimeAnswerResult {
  reason: 'answered' | 'played' | 'tool_ended' | 'max_rounds' | 'aborted';
  /** What the answer said (the model's transcript, and an end text spoken for it). */
  text: string;
  /** A tool asked for the session to end. */
  endSession: boolean;
}

type Phase = 'waiting' | 'responding' | 'calling' | 'done';

export function answerRealtime(o: RealtimeAnswerOptions): Promise<RealtimeAnswerResult> {
  return new RealtimeAnswerRun(o).run();
}

class RealtimeAnswerRun {
  readonly #o: RealtimeAnswerOptions;
  #phase: Phase = 'waiting';
  #responseId: string | undefined;
  #calls: FunctionCall[] = [];
  #rounds = 0;
  #text = '';
  #endSession = false;
  #firstAudio = true;
  /** The answer is being cut (its audio or transcript past its bound): the rest of the response is not taken. */
  #cut = false;
  #audio: ResponseAudio | undefined;
  #played: Promise<void> = Promise.resolve();
  readonly #segmentErrors: VoiceError[] = [];
  #timer: NodeJS.Timeout | undefined;
  #settled = false;
  #resolve: (r: RealtimeAnswerResult | VoiceError) => void = () => {};

  constructor(o: RealtimeAnswerOptions) {
    this.#o = o;
  }

  async run(): Promise<RealtimeAnswerResult> {
    const o = this.#o;
    const done = new Promise<RealtimeAnswerResult | VoiceError>((resolve) => {
      this.#resolve = resolve;
    });
    const onAbort = (): void => this.#aborted();
    o.signal.addEventListener('abort', onAbort, { once: true });
    o.link.listen((e) => this.#onEvent(e));
    try {
      if (o.signal.aborted) return { reason: 'aborted', text: '', endSession: false };
      if (o.request.kind === 'commit') o.link.commit();
      else o.link.sendText(o.request.text);
      this.#arm();
      const r = await done;
      if (r instanceof VoiceError) throw r;
      return r;
    } finally {
      o.signal.removeEventListener('abort', onAbort);
      this.#disarm();
      this.#phase = 'done';
    }
  }

  #onEvent(e: RealtimeEvent): void {
    const o = this.#o;
    if (e.type === 'user_transcript') {
      o.onUserTranscript?.(e.text);
      return;
    }
    if (this.#phase === 'done') return;
    switch (e.type) {
      case 'response_started':
        if (this.#phase !== 'waiting') return;
        this.#phase = 'responding';
        this.#responseId = e.responseId;
        this.#calls = [];
        this.#arm();
        return;
      case 'audio':
        if (!this.#ours(e.responseId) || this.#cut) return;
        this.#arm();
        if (this.#firstAudio) {
          this.#firstAudio = false;
          o.onFirstAudio?.();
        }
        if (!this.#stream().audio(e.pcm)) this.#cutAnswer();
        return;
      case 'transcript_delta':
        // After a cut the rest is not heard: it neither counts as said nor keeps the answer waiting.
        if (!this.#ours(e.responseId) || this.#cut) return;
        this.#arm();
        if (this.#text.length + e.text.length > MAX_TRANSCRIPT_CHARS) {
          this.#cutAnswer();
          return;
        }
        this.#text += e.text;
        this.#stream().transcript(e.text);
        return;
      case 'function_call':
        if (!this.#ours(e.responseId)) return;
        this.#arm();
        this.#calls.push({ callId: e.callId, name: e.name, arguments: e.arguments });
        if (this.#calls.length > (o.maxCallsPerResponse ?? MAX_CALLS_PER_RESPONSE)) {
          o.log.error(
            { calls: this.#calls.length, max: o.maxCallsPerResponse ?? MAX_CALLS_PER_RESPONSE },
            'realtime response asked for too many function calls; cancelled',
          );
          this.#fail(new VoiceError(ErrorCode.ProviderFailed, 'too many function calls in one response'), true);
        }
        return;
      case 'response_done':
        if (!this.#ours(e.responseId)) return;
        this.#disarm();
        this.#audio?.endResponse();
        if (e.status === 'failed') {
          this.#fail(new VoiceError(ErrorCode.ProviderFailed, 'the realtime response failed'), false);
          return;
        }
        if (this.#calls.length > 0 && e.status === 'completed' && !this.#cut) {
          this.#phase = 'calling';
          void this.#runCalls(this.#calls);
          return;
        }
        void this.#finish('answered');
        return;
      case 'error':
        if (this.#phase === 'calling') {
          o.log.warn({ err: e.error.message }, 'realtime model error while tools run; ignored');
          return;
        }
        o.log.error({ code: e.error.code, err: e.error.message }, 'realtime model error during the answer');
        this.#fail(e.error, true);
        return;
      case 'closed':
        this.#fail(e.error ?? new VoiceError(ErrorCode.ProviderUnavailable, 'the realtime connection closed'), false);
        return;
    }
  }

  #ours(responseId: string): boolean {
    return this.#phase === 'responding' && responseId === this.#responseId;
  }

  /** The open stretch of the answer's audio, opened at its first audio or caption. */
  #stream(): ResponseAudio {
    if (this.#audio) return this.#audio;
    const o = this.#o;
    const audio = new ResponseAudio({
      provider: o.model.provider,
      sampleRate: o.model.outputRate,
      ...(o.maxBufferedBytes !== undefined ? { maxBufferedBytes: o.maxBufferedBytes } : {}),
    });
    const segment = new TextStreamSegment({
      tts: audio.tts,
      out: o.out,
      media: o.media,
      sampleRate: o.sampleRate,
      frameMs: o.frameMs,
      signal: o.signal,
      log: o.log,
      after: this.#played,
      onError: (err) => this.#segmentErrors.push(err),
    });
    this.#audio = audio;
    this.#played = segment.done;
    return audio;
  }

  /** Ends the open stretch; resolves when all audio so far was sent. */
  async #flush(): Promise<void> {
    this.#audio?.end();
    this.#audio = undefined;
    await this.#played;
  }

  /** The answer outgrew what may wait here: it is cut where it is, and the model told so. */
  #cutAnswer(): void {
    const o = this.#o;
    this.#cut = true;
    const heardMs = this.#audio?.acceptedMs(o.model.outputRate) ?? 0;
    o.log.warn(
      { keptMs: Math.round(heardMs), transcriptChars: this.#text.length },
      'realtime answer too long to hold; cut and cancelled',
    );
    o.link.cancel(heardMs);
  }

  async #runCalls(calls: readonly FunctionCall[]): Promise<void> {
    const o = this.#o;
    let results: ToolCallResult[];
    const notes: string[] = [];
    let decision: RoundDecision;
    try {
      results = await callFunctions(calls, {
        tools: o.tools.tools,
        signal: o.signal,
        log: o.log,
        ...(o.toolTimeoutMs !== undefined ? { timeoutMs: o.toolTimeoutMs } : {}),
        ...(o.onToolResult ? { onResult: o.onToolResult } : {}),
      });
      if (results.some((r) => r.result.action?.endSession)) this.#endSession = true;
      const dispatcher = o.tools.dispatcher;
      decision = dispatcher
        ? await dispatcher.dispatch(results, {
            out: o.out,
            signal: o.signal,
            sampleRate: o.sampleRate,
            flushSpeech: () => this.#flush(),
            speak: (text) => notes.push(text),
          })
        : decideByFlags(results);
    } catch (err) {
      if (o.signal.aborted || isAbortError(err)) return;
      this.#fail(toVoiceError(err), false);
      return;
    }
    if (this.#phase === 'done') return;
    const last = results.length - 1;
    if (decision.next === 'observe') {
      this.#rounds++;
      const more = this.#rounds <= o.maxToolRounds;
      results.forEach((r, i) => o.link.functionOutput(r.call.id, toolResultText(r.result), more && i === last));
      if (!more) {
        o.log.warn({ rounds: this.#rounds - 1 }, 'realtime answer reached llm.maxToolRounds; no further response');
        void this.#finish('max_rounds');
        return;
      }
      this.#phase = 'waiting';
      this.#arm();
      return;
    }
    if (decision.next === 'played') {
      for (const r of results) o.link.functionOutput(r.call.id, 'played', false);
      await this.#speakAll(notes);
      void this.#finish('played');
      return;
    }
    for (const r of results) o.link.functionOutput(r.call.id, toolResultText(r.result), false);
    if (decision.say !== '') {
      await this.#flush();
      await this.#speakAll([decision.say]);
      o.link.addAssistantText(decision.say);
      this.#text += (this.#text ? ' ' : '') + decision.say;
    }
    void this.#finish('tool_ended');
  }

  async #speakAll(texts: readonly string[]): Promise<void> {
    for (const t of texts) {
      if (this.#o.signal.aborted) return;
      await this.#o.speak(t).catch((err: unknown) => {
        this.#o.log.warn({ err: toVoiceError(err).message }, 'could not speak a note of the realtime answer');
      });
    }
  }

  /** The answer is over: its audio plays out, then the turn goes on. */
  async #finish(reason: RealtimeAnswerResult['reason']): Promise<void> {
    if (this.#phase === 'done') return;
    this.#phase = 'done';
    this.#disarm();
    await this.#flush();
    const failed = this.#segmentErrors[0];
    if (failed && !this.#o.signal.aborted) {
      this.#settle(failed);
      return;
    }
    this.#settle({ reason, text: this.#text.trim(), endSession: this.#endSession });
  }

  /** The answer failed: the response is cancelled (when asked), what arrived plays, then the turn apologises. */
  #fail(err: VoiceError, cancel: boolean): void {
    if (this.#phase === 'done') return;
    this.#phase = 'done';
    this.#disarm();
    if (cancel) this.#o.link.cancel(this.#o.playedMs());
    void this.#flush().then(() => this.#settle(err));
  }

  #settle(r: RealtimeAnswerResult | VoiceError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(r);
  }

  #aborted(): void {
    // Also while the answer's last audio plays out: the model's record is cut to what was heard.
    if (this.#settled) return;
    this.#phase = 'done';
    this.#disarm();
    // The model stops and keeps in its record only what the user heard.
    this.#o.link.cancel(this.#o.playedMs());
    this.#audio?.end();
    this.#settle({ reason: 'aborted', text: this.#text.trim(), endSession: false });
  }

  /** (Re)starts the wait for the model's next event. */
  #arm(): void {
    this.#disarm();
    const ms = this.#o.model.responseTimeoutMs ?? DEFAULT_RESPONSE_TIMEOUT_MS;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#o.log.error({ timeoutMs: ms }, 'realtime model did not answer in time; cancelled');
      this.#fail(new VoiceError(ErrorCode.Timeout, `no answer from the realtime model in ${ms} ms`), true);
    }, ms);
  }

  #disarm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
