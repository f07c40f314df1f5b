/**
 * @module One answer synthesised by CosyVoice: one DashScope task on a pooled connection.
 *
 *   run-task ─► task-started ─► continue-task (text, as pushed) … ─► finish-task
 *            ◄─ result-generated: sentence-begin (its text) ─► audio frames … ─► task-finished
 *
 * Commands wait for `task-started` (the service's rule; some clients send early and the service
 * seems to queue, but that is not documented): text pushed before is kept and sent then. The
 * answer's text is bounded (`maxChars`), and so is what the service may send for it (events,
 * sentence length, audio held while the consumer is behind: the socket stops being read).
 * Failures end `events` with a VoiceError after the audio that came; an abort (or the consumer
 * leaving) cancels the task at once and ends `events` with Aborted.
 */
import { randomUUID } from 'node:crypto';
import { watchStart, type StartWatch } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { TtsStreamEvent, TtsTextStream, TtsTextStreamOptions } from '../../audio/tts/tts.ts';
import type { DashscopeSocket, SocketListener } from './connection.ts';
import { continueTask, failure, finishTask, runTask, sentenceText, type DashscopeEvent } from './messages.ts';
import type { DashscopePool } from './pool.ts';
import type { CosyVoiceTtsOptions } from './tts-options.ts';

/** What the service can make one answer hold or do. */
export const COSYVOICE_LIMITS = {
  /** Most events and audio frames for one task. */
  maxMessages: 100_000,
  /** Longest sentence text in a `sentence-begin`. */
  maxSentenceChars: 4000,
  /** Audio held for a consumer that is behind, past which the socket is not read (TCP holds the rest). */
  pauseAboveBytes: 2 * 1024 * 1024,
  /** …and read again below this. */
  resumeBelowBytes: 512 * 1024,
} as const;

/** `task-failed` codes that are the service's own trouble or its rate limit rather than our request. */
const SERVICE_TROUBLE = /internal|server|unavailable|busy|overload/i;
const RATE_LIMITED = /throttl|rate ?limit/i;

function vendorError(code: string, message: string): VoiceError {
  const text = `cosyvoice task failed: ${code}${message ? `: ${message}` : ''}`;
  if (RATE_LIMITED.test(code) || RATE_LIMITED.test(message))
    return new VoiceError(ErrorCode.RateLimited, text, { retryable: true });
  if (SERVICE_TROUBLE.test(code)) return new VoiceError(ErrorCode.ProviderFailed, text, { retryable: true });
  // The request: a model or voice the key cannot use (a voice belongs to one model version), a
  // parameter out of range, a task idle for 23 s.
  return new VoiceError(ErrorCode.ProviderRejected, `${text} (check tts.model, tts.voice and the other tts settings)`);
}

function aborted(reason: unknown): VoiceError {
  return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: reason });
}

type Outcome = { ok: true } | { ok: false; error: VoiceError };

export class CosyVoiceTask implements TtsTextStream, SocketListener {
  readonly #o: CosyVoiceTtsOptions;
  readonly #pool: DashscopePool;
  readonly #log: Logger;
  readonly #watch: StartWatch;
  readonly #onEnd: (task: CosyVoiceTask) => void;
  readonly #taskId = randomUUID().replaceAll('-', '');
  readonly #openedAt = performance.now();
  #socket: DashscopeSocket | undefined;
  #started = false;
  #finishing = false;
  #finishSent = false;
  /** Text pushed before `task-started`. */
  #pending = '';
  #chars = 0;
  #droppedChars = 0;
  #messages = 0;
  #firstAudioAt: number | undefined;
  #stallTimer: NodeJS.Timeout | undefined;
  #queue: TtsStreamEvent[] = [];
  #queuedBytes = 0;
  #paused = false;
  #wake: (() => void) | undefined;
  #outcome: Outcome | undefined;
  #iterated = false;

  /** `onEnd`: called once when the task has its outcome (its owner forgets it). */
  constructor(
    o: CosyVoiceTtsOptions,
    pool: DashscopePool,
    opts: TtsTextStreamOptions,
    onEnd: (t: CosyVoiceTask) => void,
  ) {
    this.#o = o;
    this.#pool = pool;
    this.#log = opts.log;
    this.#onEnd = onEnd;
    this.#watch = watchStart(opts.signal, {
      startTimeoutMs: o.connectTimeoutMs,
      timeoutMessage: `cosyvoice: the task did not start within ${o.connectTimeoutMs} ms`,
      onAbort: (reason) => this.#end({ ok: false, error: aborted(reason) }),
      onTimeout: (error) => this.#end({ ok: false, error }),
    });
    if (this.#watch.arm()) void this.#start();
  }

  /** True once the task has its outcome. */
  get ended(): boolean {
    return this.#outcome !== undefined;
  }

  push(text: string): void {
    if (this.#outcome || this.#finishing || text.length === 0) return;
    const room = this.#o.maxChars - this.#chars;
    if (text.length > room) {
      if (this.#droppedChars === 0)
        this.#log.warn(
          { maxChars: this.#o.maxChars },
          'cosyvoice: the answer is longer than tts.maxChars; the rest is not spoken',
        );
      this.#droppedChars += text.length - Math.max(0, room);
      if (room <= 0) return;
      text = text.slice(0, room);
    }
    this.#chars += text.length;
    if (this.#started) this.#sendText(text);
    else this.#pending += text;
  }

  finish(): void {
    if (this.#outcome || this.#finishing) return;
    this.#finishing = true;
    // An answer without text (the model only called a tool) needs no task: nothing to speak.
    if (this.#chars === 0 && !this.#started) this.#end({ ok: true });
    else if (this.#started) this.#sendFinish();
  }

  get events(): AsyncIterable<TtsStreamEvent> {
    return { [Symbol.asyncIterator]: () => this.#iterate() };
  }

  /** Ends the task as if its signal had aborted (the provider is closing). */
  cancel(): void {
    this.#end({ ok: false, error: aborted('the cosyvoice provider was closed') });
  }

  // SocketListener: what the connection delivers while this task holds it.

  event(e: DashscopeEvent): void {
    if (this.#outcome || this.#counted()) return;
    if (e.header.task_id !== undefined && e.header.task_id !== this.#taskId) {
      this.#log.debug({ event: e.header.event }, 'cosyvoice: an event of another task ignored');
      return;
    }
    this.#armStall();
    switch (e.header.event) {
      case 'task-started':
        if (this.#started) return;
        this.#started = true;
        this.#watch.started();
        this.#log.debug(
          { taskId: this.#taskId, ms: Math.round(performance.now() - this.#openedAt) },
          'cosyvoice task started',
        );
        if (this.#pending) this.#sendText(this.#pending);
        this.#pending = '';
        if (this.#finishing) this.#sendFinish();
        return;
      case 'result-generated': {
        if (e.payload?.output?.type !== 'sentence-begin') return;
        const text = sentenceText(e);
        if (text.length > COSYVOICE_LIMITS.maxSentenceChars) {
          this.#fail(`a sentence of ${text.length} characters (more than ${COSYVOICE_LIMITS.maxSentenceChars})`);
          return;
        }
        if (text) this.#enqueue({ type: 'sentence', text });
        return;
      }
      case 'task-finished':
        this.#end({ ok: true });
        return;
      case 'task-failed': {
        const { code, message } = failure(e);
        this.#end({ ok: false, error: vendorError(code, message) });
        return;
      }
      default:
        this.#log.debug({ event: e.header.event }, 'cosyvoice: an unknown event ignored');
    }
  }

  audio(data: Buffer): void {
    if (this.#outcome || this.#counted()) return;
    if (!this.#started) {
      this.#fail('audio before task-started');
      return;
    }
    this.#armStall();
    if (data.length === 0) return;
    if (this.#firstAudioAt === undefined) {
      this.#firstAudioAt = performance.now();
      this.#log.debug({ ms: Math.round(this.#firstAudioAt - this.#openedAt) }, 'cosyvoice first audio');
    }
    this.#enqueue({ type: 'audio', data });
  }

  lost(error: VoiceError): void {
    this.#end({ ok: false, error });
  }

  async #start(): Promise<void> {
    const socket = this.#pool.acquire(this.#log);
    this.#socket = socket;
    socket.listen(this);
    try {
      await socket.ready;
    } catch (err) {
      this.#end({ ok: false, error: err as VoiceError });
      return;
    }
    if (this.#outcome) return;
    socket.send(runTask(this.#o, this.#taskId));
  }

  /**
   * One command per piece: a piece (or the text kept before the start) is at most `maxChars`,
   * which the schema keeps within the service's 20,000 characters per `continue-task`.
   */
  #sendText(text: string): void {
    this.#socket?.send(continueTask(this.#taskId, text));
  }

  #sendFinish(): void {
    if (this.#finishSent) return;
    this.#finishSent = true;
    this.#socket?.send(finishTask(this.#taskId));
    this.#armStall();
  }

  /** Audio is owed once the text is finished: the service must not go quiet for `timeoutMs`. */
  #armStall(): void {
    if (!this.#finishSent || this.#outcome) return;
    clearTimeout(this.#stallTimer);
    const ms = this.#o.timeoutMs;
    this.#stallTimer = setTimeout(
      () =>
        this.#end({
          ok: false,
          error: new VoiceError(ErrorCode.Timeout, `cosyvoice: nothing from the service for ${ms} ms`, {
            retryable: true,
          }),
        }),
      ms,
    );
  }

  /** Counts a message; true (and the task failed) past the bound. */
  #counted(): boolean {
    if (++this.#messages <= COSYVOICE_LIMITS.maxMessages) return false;
    this.#fail(`more than ${COSYVOICE_LIMITS.maxMessages} messages for one answer`);
    return true;
  }

  #fail(message: string): void {
    this.#end({ ok: false, error: new VoiceError(ErrorCode.ProviderFailed, `cosyvoice: ${message}`) });
  }

  #enqueue(event: TtsStreamEvent): void {
    this.#queue.push(event);
    if (event.type === 'audio') {
      this.#queuedBytes += event.data.length;
      if (!this.#paused && this.#queuedBytes > COSYVOICE_LIMITS.pauseAboveBytes) {
        this.#paused = true;
        this.#socket?.pause();
      }
    }
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *#iterate(): AsyncGenerator<TtsStreamEvent> {
    if (this.#iterated) throw new VoiceError(ErrorCode.Internal, 'cosyvoice: events iterated twice');
    this.#iterated = true;
    try {
      for (;;) {
        const next = this.#queue.shift();
        if (next) {
          if (next.type === 'audio') {
            this.#queuedBytes -= next.data.length;
            if (this.#paused && this.#queuedBytes < COSYVOICE_LIMITS.resumeBelowBytes) {
              this.#paused = false;
              this.#socket?.resume();
            }
          }
          yield next;
          continue;
        }
        const outcome = this.#outcome;
        if (outcome) {
          if (outcome.ok) return;
          throw outcome.error;
        }
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      // The consumer left early (a `break`): the task is cancelled like an abort.
      if (!this.#outcome) this.#end({ ok: false, error: aborted('the consumer stopped reading') });
    }
  }

  /** Settles the task once: timers cleared, the connection given back or closed, `events` told. */
  #end(outcome: Outcome): void {
    if (this.#outcome) return;
    this.#outcome = outcome;
    this.#watch.dispose();
    clearTimeout(this.#stallTimer);
    this.#pending = '';
    const socket = this.#socket;
    this.#socket = undefined;
    if (!outcome.ok && outcome.error.code === ErrorCode.Aborted) {
      // An abort yields nothing more: what is queued is dropped.
      this.#queue = [];
      this.#queuedBytes = 0;
      if (socket && this.#started && socket.send(finishTask(this.#taskId, true)))
        this.#pool.releaseAfterCancel(socket, this.#taskId);
      else if (socket) this.#pool.discard(socket);
      this.#log.debug({ taskId: this.#taskId }, 'cosyvoice task cancelled');
    } else if (outcome.ok) {
      // Finished by the service (`task-finished`): the connection is free. Not started (no text):
      // a run-task may be on its way, so the connection is not given to another answer.
      if (socket && this.#started) this.#pool.release(socket);
      else if (socket) this.#pool.discard(socket);
      this.#log.debug(
        {
          taskId: this.#taskId,
          firstAudioMs: this.#firstAudioAt === undefined ? undefined : Math.round(this.#firstAudioAt - this.#openedAt),
          ms: Math.round(performance.now() - this.#openedAt),
          ...(this.#droppedChars > 0 ? { droppedChars: this.#droppedChars } : {}),
        },
        'cosyvoice task finished',
      );
    } else {
      if (socket) this.#pool.discard(socket);
      this.#log.warn(
        { code: outcome.error.code, err: outcome.error.message, taskId: this.#taskId },
        'cosyvoice task failed',
      );
    }
    this.#wakeUp();
    this.#onEnd(this);
  }
}
