/**
 * @module One connection to a realtime model (`RealtimeSession`): opened when a device session
 * needs it and kept for its turns. `open` resolves once the model has taken the session's
 * configuration (`session.updated`), so there is no audio to keep while connecting.
 *
 * Each server event is checked at the edge (`model-events.ts`): an unknown type is logged at debug
 * and dropped, a malformed known one or an audio delta that does not decode becomes an `error`
 * event and is dropped; the connection goes on. It ends (one `closed` event, then nothing) when the
 * socket closes or fails, when a requested response stays silent for `responseTimeoutMs`, when the
 * model floods a response with events, or between turns once it is `maxSessionMs` old (the vendor
 * would cut it without warning); `close()` ends it with no event. Ending releases everything: the
 * socket (a close frame, cut after a grace), every timer and the abort link.
 */
import type { OpenAIRealtimeError } from 'openai/realtime/index';
import type { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { watchStart, type StartWatch } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type {
  RealtimeEvent,
  RealtimeResponseStatus,
  RealtimeSession,
  RealtimeSessionOptions,
} from '../../llm/realtime.ts';
import type { ToolSpec } from '../../mcp/contract/tool-source.ts';
import { int16ToBuffer } from '../../audio/pcm/pcm.ts';
import { apiError } from './api-error.ts';
import { closeConnection, WHAT, type RealtimeConnector } from './connect.ts';
import { decodePcm, eventKind, gaEventType, modelEventSchema, type ModelEvent } from './model-events.ts';
import {
  appendAudio,
  CLEAR,
  COMMIT,
  functionOutputItem,
  messageItem,
  RESPONSE_CREATE,
  responseCancel,
  sessionUpdate,
  truncate,
  type ClientEvent,
} from './model-requests.ts';
import type { RealtimeDialect } from './realtime-options.ts';

/** Largest frame the model may send: an audio delta or the session echoed with its tools and instructions. */
export const MAX_MODEL_FRAME_BYTES = 4 * 1024 * 1024;
/** Frames from the model between two ends of a response (audio, transcript and argument deltas, frames that are not events); a long answer sends a few thousand. */
export const MAX_EVENTS_PER_RESPONSE = 20_000;
/** Bytes of one function call's arguments. */
export const MAX_ARGUMENT_BYTES = 64 * 1024;
/** Characters of a response's transcript or a user transcript kept (later text still streams as deltas). */
export const MAX_TRANSCRIPT_CHARS = 20_000;
/** The API refuses to commit less than 100 ms of audio. */
const MIN_COMMIT_MS = 100;

export interface ModelSessionConfig {
  connect: RealtimeConnector;
  dialect: RealtimeDialect;
  inputRate: number;
  outputRate: number;
  voice: string;
  /** Appended to the session's instructions (the agent's `realtime.instructions`). */
  extraInstructions?: string | undefined;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  maxSessionMs: number;
  maxAudioSecondsPerMinute: number;
  maxFunctionCallsPerResponse: number;
}

interface Response {
  id: string;
  cancelled: boolean;
  transcript: string;
  /** Function calls begun (announced, or first heard of by their arguments). */
  calls: number;
  /** Function calls being made. */
  args: Map<string, PendingCall>;
}

/** A function call being made: its name (from the item) and its arguments so far. */
interface PendingCall {
  name?: string | undefined;
  text: string;
  /** The arguments passed MAX_ARGUMENT_BYTES: no longer kept. */
  over: boolean;
}

/** The assistant item whose audio was heard last: what a barge-in truncates. */
interface AudioItem {
  id: string;
  audioBytes: number;
  truncated: boolean;
}

export function openModelSession(cfg: ModelSessionConfig, opts: RealtimeSessionOptions): Promise<RealtimeSession> {
  return new ModelSession(cfg, opts).opened;
}

class ModelSession implements RealtimeSession {
  readonly opened: Promise<RealtimeSession>;
  readonly #cfg: ModelSessionConfig;
  readonly #opts: RealtimeSessionOptions;
  readonly #log: Logger;
  #resolveOpen: (s: RealtimeSession) => void = () => {};
  #rejectOpen: (err: VoiceError) => void = () => {};
  #rt: OpenAIRealtimeWS | undefined;
  #ready = false;
  #ended = false;
  #transportError: string | undefined;
  /** The abort link, and the deadline until the model has taken the configuration. */
  readonly #watch: StartWatch;
  #responseTimer: NodeJS.Timeout | undefined;
  #ageTimer: NodeJS.Timeout | undefined;
  #retireWhenIdle = false;
  #awaiting = false;
  #response: Response | undefined;
  #item: AudioItem | undefined;
  #eventsSinceDone = 0;
  #appendedSinceCommit = 0;
  #minuteStart = 0;
  #minuteSamples = 0;
  #minuteWarned = false;

  constructor(cfg: ModelSessionConfig, opts: RealtimeSessionOptions) {
    this.#cfg = cfg;
    this.#opts = opts;
    this.#log = opts.log;
    this.opened = new Promise<RealtimeSession>((resolve, reject) => {
      this.#resolveOpen = resolve;
      this.#rejectOpen = reject;
    });
    this.#watch = watchStart(opts.signal, {
      startTimeoutMs: cfg.connectTimeoutMs,
      timeoutMessage: `${WHAT}: not connected and configured within ${cfg.connectTimeoutMs} ms`,
      onAbort: () => (this.#ready ? this.close() : this.#fail(new VoiceError(ErrorCode.Aborted, 'aborted'))),
      onTimeout: (error) => this.#fail(error),
    });
    if (!this.#watch.arm()) return;
    cfg.connect().then(
      (rt) => this.#attach(rt),
      (err: unknown) =>
        this.#fail(
          new VoiceError(ErrorCode.ProviderUnavailable, `${WHAT}: cannot connect: ${(err as Error).message}`, {
            retryable: true,
            cause: err,
          }),
        ),
    );
  }

  // ---- the RealtimeSession methods ----

  appendAudio(pcm: Int16Array): void {
    if (!this.#live() || pcm.length === 0) return;
    const now = performance.now();
    if (now - this.#minuteStart >= 60_000) {
      this.#minuteStart = now;
      this.#minuteSamples = 0;
      this.#minuteWarned = false;
    }
    const allowed = this.#cfg.maxAudioSecondsPerMinute * this.#cfg.inputRate;
    if (this.#minuteSamples + pcm.length > allowed) {
      if (!this.#minuteWarned)
        this.#log.warn(
          { maxSeconds: this.#cfg.maxAudioSecondsPerMinute },
          `${WHAT}: audio sent this minute is at its bound, the rest of the minute is dropped`,
        );
      this.#minuteWarned = true;
      return;
    }
    this.#minuteSamples += pcm.length;
    this.#appendedSinceCommit += pcm.length;
    // One append per second of audio at most (the API's bound is 15 MiB per event).
    for (let i = 0; i < pcm.length; i += this.#cfg.inputRate)
      this.#send(appendAudio(int16ToBuffer(pcm.subarray(i, i + this.#cfg.inputRate)).toString('base64')));
  }

  clearAudio(): void {
    if (!this.#live()) return;
    this.#appendedSinceCommit = 0;
    this.#send(CLEAR);
    this.#retireIfIdle();
  }

  commit(): void {
    if (!this.#live()) return;
    if (this.#appendedSinceCommit < (this.#cfg.inputRate * MIN_COMMIT_MS) / 1000) {
      // The API would refuse the commit; the turn had no audio worth answering.
      this.#appendedSinceCommit = 0;
      this.#emit({
        type: 'error',
        error: new VoiceError(ErrorCode.BadInput, `${WHAT}: under ${MIN_COMMIT_MS} ms of audio to commit`),
      });
      this.#retireIfIdle();
      return;
    }
    this.#appendedSinceCommit = 0;
    this.#cancelActive();
    this.#send(COMMIT);
    this.#requestResponse();
  }

  sendText(text: string): void {
    if (!this.#live()) return;
    this.#cancelActive();
    this.#send(messageItem(this.#cfg.dialect, 'user', text));
    this.#requestResponse();
  }

  addAssistantText(text: string): void {
    if (this.#live()) this.#send(messageItem(this.#cfg.dialect, 'assistant', text));
  }

  functionOutput(callId: string, output: string, respond: boolean): void {
    if (!this.#live()) return;
    this.#send(functionOutputItem(callId, output));
    if (respond) this.#requestResponse();
  }

  cancel(playedMs: number): void {
    if (!this.#live()) return;
    this.#cancelActive();
    const item = this.#item;
    // Qwen-Omni does not document a partial truncate (its clients delete whole items instead):
    // there the model keeps the whole answer in its record.
    if (!item || item.truncated || this.#cfg.dialect === 'qwen-omni') return;
    const heardMs = Math.floor((item.audioBytes / 2 / this.#cfg.outputRate) * 1000);
    const endMs = Math.max(0, Math.min(Math.floor(playedMs), heardMs));
    item.truncated = true;
    // Even when all of it was played: the model may have made more than reached us before the cancel.
    this.#send(truncate(item.id, endMs));
  }

  update(changes: { instructions?: string; tools?: ToolSpec[] }): void {
    if (!this.#live()) return;
    this.#send(
      sessionUpdate(
        this.#cfg.dialect,
        {
          instructions: changes.instructions === undefined ? undefined : this.#instructions(changes.instructions),
          tools: changes.tools,
        },
        false,
      ),
    );
  }

  close(): void {
    if (this.#ended) return;
    this.#end();
    if (!this.#ready) this.#rejectOpen(new VoiceError(ErrorCode.Aborted, 'aborted: closed while opening'));
    if (this.#rt) closeConnection(this.#rt);
  }

  // ---- the connection ----

  #attach(rt: OpenAIRealtimeWS): void {
    this.#rt = rt;
    // The SDK turns an `error` with no listener into an unhandled rejection: this one stays.
    rt.on('error', (err) => this.#onSdkError(err));
    rt.on('event', (event) => this.#onEvent(event as unknown as { type: string }));
    rt.socket.on('open', () => this.#onOpen());
    rt.socket.on('close', (code: number) => this.#onClose(code));
    if (this.#ended) rt.socket.terminate();
  }

  #onOpen(): void {
    if (this.#ended) return;
    this.#send(
      sessionUpdate(
        this.#cfg.dialect,
        { instructions: this.#instructions(this.#opts.instructions), tools: this.#opts.tools, voice: this.#cfg.voice },
        true,
      ),
    );
  }

  #onReady(): void {
    this.#ready = true;
    this.#watch.started();
    this.#ageTimer = setTimeout(() => {
      this.#retireWhenIdle = true;
      this.#retireIfIdle();
    }, this.#cfg.maxSessionMs);
    this.#resolveOpen(this);
  }

  #instructions(base: string): string {
    const extra = this.#cfg.extraInstructions;
    return extra ? `${base}\n\n${extra}` : base;
  }

  #send(event: ClientEvent): void {
    // Qwen-Omni's beta shapes are not among the SDK's types; the SDK serialises any event as JSON.
    // A failed send is reported through the SDK's `error` event.
    if (!this.#ended) this.#rt?.send(event as Parameters<OpenAIRealtimeWS['send']>[0]);
  }

  #live(): boolean {
    return this.#ready && !this.#ended;
  }

  #requestResponse(): void {
    this.#send(RESPONSE_CREATE);
    this.#awaiting = true;
    this.#armResponseTimer();
  }

  #cancelActive(): void {
    const r = this.#response;
    if (!r || r.cancelled) return;
    r.cancelled = true;
    this.#send(responseCancel(r.id));
  }

  #armResponseTimer(): void {
    clearTimeout(this.#responseTimer);
    const ms = this.#cfg.responseTimeoutMs;
    this.#responseTimer = setTimeout(
      () => this.#fail(new VoiceError(ErrorCode.Timeout, `${WHAT}: the model did not answer within ${ms} ms`)),
      ms,
    );
  }

  #onEvent(raw: { type: string }): void {
    if (this.#ended || !this.#counted()) return;
    const type = gaEventType(raw.type);
    const kind = eventKind(type);
    if (kind === 'unknown') {
      this.#log.debug({ type: raw.type }, `${WHAT}: an event type we do not read, dropped`);
      return;
    }
    if (kind === 'passed') return;
    const parsed = modelEventSchema.safeParse(type === raw.type ? raw : { ...raw, type });
    if (!parsed.success) {
      const message = `${WHAT}: a malformed ${raw.type} event, dropped`;
      this.#log.error({ issues: parsed.error.issues.slice(0, 3) }, message);
      if (this.#ready) this.#emit({ type: 'error', error: new VoiceError(ErrorCode.ProviderFailed, message) });
      return;
    }
    this.#read(parsed.data);
  }

  /** Counts a frame from the model toward the bound; false once past it (the connection is then ended). */
  #counted(): boolean {
    if (++this.#eventsSinceDone > MAX_EVENTS_PER_RESPONSE) {
      this.#fail(new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: more than ${MAX_EVENTS_PER_RESPONSE} events`));
      return false;
    }
    if (this.#awaiting) this.#armResponseTimer();
    return true;
  }

  #read(ev: ModelEvent): void {
    if (!this.#ready) {
      if (ev.type === 'session.updated') this.#onReady();
      else if (ev.type === 'error') this.#fail(apiError(ev.error));
      return;
    }
    const r = this.#response;
    switch (ev.type) {
      case 'session.updated':
      case 'input_audio_buffer.committed':
        return;
      case 'error':
        if (ev.error.code === 'response_cancel_not_active') {
          // A cancel that crossed the response's end on the wire: nothing to do.
          this.#log.debug(`${WHAT}: nothing left to cancel`);
          return;
        }
        this.#emit({ type: 'error', error: apiError(ev.error) });
        return;
      case 'conversation.item.input_audio_transcription.completed':
        this.#emit({ type: 'user_transcript', text: ev.transcript.slice(0, MAX_TRANSCRIPT_CHARS).trim() });
        return;
      case 'response.created':
        this.#response = { id: ev.response.id, cancelled: false, transcript: '', calls: 0, args: new Map() };
        this.#emit({ type: 'response_started', responseId: ev.response.id });
        return;
      case 'response.output_item.added':
        if (!r || r.id !== ev.response_id) return;
        if (ev.item.type === 'message' && ev.item.id) this.#item = { id: ev.item.id, audioBytes: 0, truncated: false };
        if (ev.item.type === 'function_call' && ev.item.call_id && !r.cancelled && !r.args.has(ev.item.call_id))
          this.#beginCall(r, ev.item.call_id, ev.item.name);
        return;
      case 'response.output_audio.delta': {
        if (!r || r.id !== ev.response_id || r.cancelled) return;
        const pcm = decodePcm(ev.delta);
        if (!pcm) {
          const message = `${WHAT}: an audio delta that is not base64 of 16-bit PCM, dropped`;
          this.#log.error({ chars: ev.delta.length }, message);
          this.#emit({ type: 'error', error: new VoiceError(ErrorCode.ProviderFailed, message) });
          return;
        }
        if (this.#item?.id === ev.item_id) this.#item.audioBytes += pcm.length;
        if (pcm.length > 0) this.#emit({ type: 'audio', responseId: r.id, pcm });
        return;
      }
      case 'response.output_audio_transcript.delta':
      case 'response.output_text.delta':
        if (!r || r.id !== ev.response_id || r.cancelled || ev.delta === '') return;
        if (r.transcript.length < MAX_TRANSCRIPT_CHARS)
          r.transcript = (r.transcript + ev.delta).slice(0, MAX_TRANSCRIPT_CHARS);
        this.#emit({ type: 'transcript_delta', responseId: r.id, text: ev.delta });
        return;
      case 'response.function_call_arguments.delta': {
        if (!r || r.id !== ev.response_id || r.cancelled) return;
        const call = r.args.get(ev.call_id) ?? this.#beginCall(r, ev.call_id, undefined);
        if (!call || call.over) return;
        // Past the bound the text is let go; `.done` then finds it too long.
        if (call.text.length + ev.delta.length <= MAX_ARGUMENT_BYTES) call.text += ev.delta;
        else [call.text, call.over] = ['', true];
        return;
      }
      case 'response.function_call_arguments.done':
        this.#functionCallDone(ev);
        return;
      case 'response.done':
        this.#responseDone(ev.response.id, ev.response.status);
        return;
    }
  }

  #functionCallDone(ev: Extract<ModelEvent, { type: 'response.function_call_arguments.done' }>): void {
    const r = this.#response;
    if (!r || r.id !== ev.response_id || r.cancelled) return;
    const call = r.args.get(ev.call_id) ?? this.#beginCall(r, ev.call_id, ev.name);
    if (!call) return;
    r.args.delete(ev.call_id);
    const args = ev.arguments !== '' ? ev.arguments : call.text;
    const name = ev.name ?? call.name;
    let problem: string | undefined;
    if (call.over || Buffer.byteLength(args) > MAX_ARGUMENT_BYTES)
      problem = `function call arguments over ${MAX_ARGUMENT_BYTES} bytes`;
    else if (!name) problem = 'a function call with no name';
    if (problem) {
      this.#stopResponse(ev.call_id, problem);
      return;
    }
    this.#emit({ type: 'function_call', responseId: r.id, callId: ev.call_id, name: name ?? '', arguments: args });
  }

  /**
   * A call heard of for the first time: counted, and kept while it is made, or (past
   * `maxFunctionCallsPerResponse`) the response is stopped, so the calls kept stay bounded.
   */
  #beginCall(r: Response, callId: string, name: string | undefined): PendingCall | undefined {
    if (++r.calls > this.#cfg.maxFunctionCallsPerResponse) {
      this.#stopResponse(callId, `more than ${this.#cfg.maxFunctionCallsPerResponse} function calls in one response`);
      return undefined;
    }
    const call = { name, text: '', over: false };
    r.args.set(callId, call);
    return call;
  }

  #stopResponse(callId: string, problem: string): void {
    // The whole response is stopped: a call we drop would leave the model waiting for its output.
    this.#log.error({ callId }, `${WHAT}: ${problem}; the response is cancelled`);
    this.#cancelActive();
    this.#response?.args.clear();
    this.#emit({ type: 'error', error: new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: ${problem}`) });
  }

  #responseDone(id: string, status: string | undefined): void {
    const r = this.#response?.id === id ? this.#response : undefined;
    this.#response = undefined;
    this.#awaiting = false;
    this.#eventsSinceDone = 0;
    clearTimeout(this.#responseTimer);
    const mapped: RealtimeResponseStatus =
      status === 'completed' || status === 'cancelled' || status === 'failed' ? status : 'incomplete';
    this.#emit({
      type: 'response_done',
      responseId: id,
      status: r?.cancelled && mapped === 'completed' ? 'cancelled' : mapped,
      transcript: r?.transcript ?? '',
    });
    this.#retireIfIdle();
  }

  #retireIfIdle(): void {
    if (!this.#retireWhenIdle || this.#awaiting || this.#response || this.#appendedSinceCommit > 0 || !this.#live())
      return;
    this.#log.info(
      { maxSessionMs: this.#cfg.maxSessionMs },
      `${WHAT}: the connection is at its age, closed between turns`,
    );
    this.#emit({ type: 'closed' });
    this.close();
  }

  /** An `error` the SDK raised itself: a frame that is not a JSON event, or the socket failed. */
  #onSdkError(err: OpenAIRealtimeError): void {
    // API `error` events reach #onEvent as events.
    if (this.#ended || err.error) return;
    const socket = this.#rt?.socket;
    if (socket && socket.readyState === socket.OPEN) {
      // A frame that is not an event: it counts toward the bound like any other, so a flood of them ends.
      if (!this.#counted()) return;
      const message = `${WHAT}: ${err.message}, dropped`;
      this.#log.error({ err: err.cause instanceof Error ? err.cause.message : undefined }, message);
      if (this.#ready) this.#emit({ type: 'error', error: new VoiceError(ErrorCode.ProviderFailed, message) });
      return;
    }
    // The socket failed: its `close` follows and reports it.
    const cause = err.cause instanceof Error ? err.cause.message : undefined;
    this.#transportError = cause && cause !== err.message ? `${err.message}: ${cause}` : err.message;
  }

  #onClose(code: number): void {
    if (this.#ended) return;
    const why = this.#transportError ? `: ${this.#transportError}` : '';
    if (!this.#ready) {
      this.#fail(
        new VoiceError(ErrorCode.ProviderUnavailable, `${WHAT}: cannot connect (${code})${why}`, { retryable: true }),
      );
      return;
    }
    const clean = code === 1000 && !this.#awaiting && !this.#response;
    this.#fail(
      clean
        ? undefined
        : new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: the connection closed (${code})${why}`, {
            retryable: true,
          }),
    );
  }

  /** Ends the connection from our side or the wire's: `closed` once (or the open rejected), the socket cut. */
  #fail(err: VoiceError | undefined): void {
    if (this.#ended) return;
    const wasReady = this.#ready;
    this.#end();
    this.#rt?.socket.terminate();
    if (!wasReady) {
      const e = err ?? new VoiceError(ErrorCode.ProviderUnavailable, `${WHAT}: closed while opening`);
      if (e.code !== ErrorCode.Aborted) this.#log.warn({ code: e.code, err: e.message }, `${WHAT}: cannot open`);
      this.#rejectOpen(e);
      return;
    }
    if (err) this.#log.warn({ code: err.code, err: err.message }, `${WHAT}: connection ended`);
    this.#deliver(err ? { type: 'closed', error: err } : { type: 'closed' });
  }

  #end(): void {
    this.#ended = true;
    this.#watch.dispose();
    clearTimeout(this.#responseTimer);
    clearTimeout(this.#ageTimer);
    this.#response = undefined;
  }

  #emit(event: RealtimeEvent): void {
    if (!this.#ended) this.#deliver(event);
  }

  #deliver(event: RealtimeEvent): void {
    try {
      this.#opts.onEvent(event);
    } catch (err) {
      this.#log.error({ err: (err as Error).message, type: event.type }, `${WHAT}: the event's receiver threw`);
    }
  }
}
