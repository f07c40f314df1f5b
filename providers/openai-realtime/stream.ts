/**
 * @module One utterance through a Realtime transcription session: one connection per utterance,
 * opened at the speech start (the connect and TLS round trips pass while the user speaks).
 *
 * The uplink's 16 kHz PCM is resampled to the 24 kHz the API takes and sent as
 * `input_audio_buffer.append` events; audio pushed before the socket is open waits (bounded) and
 * goes out as soon as it opens, right after the `session.update`. With turn detection off the
 * vendor makes one item of the whole utterance: streaming models send `…transcription.delta`s for it
 * while the audio arrives (the hypothesis is their concatenation), `finish` commits the buffer, and
 * the item's `…transcription.completed` is the final.
 *
 * Every way it can end settles one promise exactly once (final, vendor error, dropped socket, bad
 * frame, a bound passed, timeout, abort), and settling releases everything: the socket (a close
 * frame after a final, cut at once otherwise), the timers and the abort link.
 */
import type { OpenAIRealtimeError } from 'openai/realtime/index';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import type { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { watchStart, type StartWatch } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { AsrStream, AsrStreamOptions } from '../../audio/asr/asr.ts';
import { concatInt16, int16ToBuffer } from '../../audio/pcm/pcm.ts';
import { Resampler } from '../../audio/pcm/resample.ts';
import { apiError } from './api-error.ts';
import { closeConnection, WHAT, type RealtimeConnector } from './connect.ts';
import {
  appendAudio,
  COMMIT,
  isReadEventType,
  REALTIME_PCM_RATE,
  readEventSchema,
  sessionUpdate,
  type TranscriptionSettings,
} from './events.ts';

/** Audio kept while the connection opens: past it the newest is dropped (with one warning). */
export const MAX_PENDING_MS = 60_000;
/** Events one utterance may receive: a delta per word or token, far below this. */
export const MAX_EVENTS = 5000;
/** Longest hypothesis or final, in characters (a minute of fast speech is about 1,000). */
export const MAX_TRANSCRIPT_CHARS = 4000;
/** The API refuses to commit less than 100 ms of audio; such an utterance has no words anyway. */
const MIN_COMMIT_SAMPLES = REALTIME_PCM_RATE / 10;
/** Largest append sent when the audio kept during the connect goes out (one second). */
const MAX_APPEND_SAMPLES = REALTIME_PCM_RATE;

export interface StreamConfig {
  connect: RealtimeConnector;
  settings: TranscriptionSettings;
  finalTimeoutMs: number;
  connectTimeoutMs: number;
  /** Told once, when the stream has settled (the provider forgets it). */
  onEnd?: (stream: RealtimeTranscriptionStream) => void;
}

type Phase = 'connecting' | 'open' | 'ended';

export class RealtimeTranscriptionStream implements AsrStream {
  readonly #cfg: StreamConfig;
  readonly #log: Logger;
  readonly #onPartial: (text: string) => void;
  readonly #watch: StartWatch;
  readonly #result: Promise<string>;
  #resolve: (text: string) => void = () => {};
  #reject: (err: VoiceError) => void = () => {};
  #resampler: Resampler | undefined;

  #phase: Phase = 'connecting';
  #settled = false;
  #finishing = false;
  #rt: OpenAIRealtimeWS | undefined;
  #pending: Int16Array[] = [];
  #pendingSamples = 0;
  #droppedWarned = false;
  /** 24 kHz samples queued or sent: what a commit would hold. */
  #samples = 0;
  #events = 0;
  #itemText = '';
  #lastPartial = '';
  #committedItem: string | undefined;
  #completed = new Map<string, string>();
  #finalTimer: NodeJS.Timeout | undefined;
  #openedAt = performance.now();
  #finishAt = 0;

  constructor(opts: AsrStreamOptions, cfg: StreamConfig) {
    this.#cfg = cfg;
    this.#log = opts.log;
    this.#onPartial = opts.onPartial;
    this.#result = new Promise<string>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A failure nobody has asked about yet (finish not called) must not be an unhandled rejection.
    this.#result.catch(() => {});
    this.#watch = watchStart(opts.signal, {
      startTimeoutMs: cfg.connectTimeoutMs,
      timeoutMessage: `${WHAT}: no connection within ${cfg.connectTimeoutMs} ms`,
      onAbort: (reason) => this.#fail(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: reason })),
      onTimeout: (error) => this.#fail(error),
    });
    if (!this.#watch.arm()) return;
    try {
      this.#resampler = new Resampler(opts.sampleRate, REALTIME_PCM_RATE);
    } catch (err) {
      this.#fail(new VoiceError(ErrorCode.BadInput, `${WHAT}: sample rate ${opts.sampleRate}`, { cause: err }));
      return;
    }
    cfg.connect().then(
      (rt) => this.#attach(rt),
      (err: unknown) => this.#fail(this.#transportError(err)),
    );
  }

  push(pcm: Int16Array): void {
    if (this.#settled || this.#finishing || !this.#resampler) return;
    try {
      this.#queue(this.#resampler.push(pcm));
    } catch (err) {
      this.#fail(new VoiceError(ErrorCode.Internal, `${WHAT}: cannot send audio`, { cause: err }));
    }
  }

  finish(): Promise<string> {
    if (this.#finishing || this.#settled) return this.#result;
    this.#finishing = true;
    this.#finishAt = performance.now();
    const ms = this.#cfg.finalTimeoutMs;
    this.#finalTimer = setTimeout(
      () => this.#fail(new VoiceError(ErrorCode.Timeout, `${WHAT}: no final within ${ms} ms`, { retryable: true })),
      ms,
    );
    try {
      if (this.#resampler) this.#queue(this.#resampler.flush());
      if (this.#samples < MIN_COMMIT_SAMPLES) this.#succeed('');
      else if (this.#phase === 'open') this.#send(COMMIT);
    } catch (err) {
      this.#fail(new VoiceError(ErrorCode.Internal, `${WHAT}: cannot end the utterance`, { cause: err }));
    }
    return this.#result;
  }

  #attach(rt: OpenAIRealtimeWS): void {
    this.#rt = rt;
    // The SDK turns an `error` with no listener into an unhandled rejection: this one stays.
    rt.on('error', (err) => this.#onSdkError(err));
    rt.on('event', (event) => this.#onEvent(event));
    rt.socket.on('open', () => this.#onOpen());
    rt.socket.on('close', (code: number) => this.#onClose(code));
    if (this.#settled) rt.socket.terminate();
  }

  #onOpen(): void {
    if (this.#settled) return;
    this.#watch.started();
    this.#phase = 'open';
    this.#log.debug({ ms: Math.round(performance.now() - this.#openedAt) }, `${WHAT} connected`);
    this.#send(sessionUpdate(this.#cfg.settings));
    const pending = concatInt16(this.#pending);
    this.#pending = [];
    this.#pendingSamples = 0;
    for (let i = 0; i < pending.length; i += MAX_APPEND_SAMPLES)
      this.#sendAudio(pending.subarray(i, i + MAX_APPEND_SAMPLES));
    if (this.#finishing && !this.#settled) this.#send(COMMIT);
  }

  #queue(pcm24k: Int16Array): void {
    if (pcm24k.length === 0) return;
    if (this.#phase === 'open') {
      this.#samples += pcm24k.length;
      this.#sendAudio(pcm24k);
      return;
    }
    if (this.#pendingSamples + pcm24k.length > (MAX_PENDING_MS / 1000) * REALTIME_PCM_RATE) {
      if (!this.#droppedWarned)
        this.#log.warn({ keptMs: MAX_PENDING_MS }, `${WHAT}: still connecting, audio past the bound dropped`);
      this.#droppedWarned = true;
      return;
    }
    // A copy: at equal rates the resampler hands back the caller's own array, which it may reuse.
    this.#pending.push(pcm24k.slice());
    this.#pendingSamples += pcm24k.length;
    this.#samples += pcm24k.length;
  }

  #sendAudio(pcm24k: Int16Array): void {
    if (pcm24k.length > 0) this.#send(appendAudio(int16ToBuffer(pcm24k).toString('base64')));
  }

  #send(event: Parameters<OpenAIRealtimeWS['send']>[0]): void {
    // The SDK reports a failed send through its `error` event.
    if (!this.#settled) this.#rt?.send(event);
  }

  #onEvent(event: RealtimeServerEvent): void {
    if (this.#settled) return;
    if (++this.#events > MAX_EVENTS) {
      this.#fail(new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: more than ${MAX_EVENTS} events for one utterance`));
      return;
    }
    if (!isReadEventType(event.type)) return;
    const parsed = readEventSchema.safeParse(event);
    if (!parsed.success) {
      this.#fail(
        new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: malformed ${event.type} event`, { cause: parsed.error }),
      );
      return;
    }
    const ev = parsed.data;
    switch (ev.type) {
      case 'conversation.item.input_audio_transcription.delta':
        if (this.#tooLong(this.#itemText.length + (ev.delta?.length ?? 0))) return;
        this.#itemText += ev.delta ?? '';
        this.#partial(this.#itemText);
        return;
      case 'conversation.item.input_audio_transcription.completed':
        if (this.#tooLong(ev.transcript.length)) return;
        this.#completed.set(ev.item_id, ev.transcript);
        // A server that does not acknowledge the commit still ends the utterance with its transcript.
        if (ev.item_id === this.#committedItem || (this.#finishing && this.#committedItem === undefined))
          this.#succeed(ev.transcript);
        else this.#partial(ev.transcript);
        return;
      case 'input_audio_buffer.committed': {
        this.#committedItem = ev.item_id;
        const done = this.#completed.get(ev.item_id);
        if (done !== undefined) this.#succeed(done);
        return;
      }
      case 'conversation.item.input_audio_transcription.failed':
        this.#fail(
          new VoiceError(
            ErrorCode.ProviderFailed,
            `${WHAT}: transcription failed (${ev.error.code ?? 'no code'}): ${ev.error.message ?? ''}`,
            { retryable: true },
          ),
        );
        return;
      case 'error':
        this.#fail(apiError(ev.error));
        return;
    }
  }

  #tooLong(chars: number): boolean {
    if (chars <= MAX_TRANSCRIPT_CHARS) return false;
    this.#fail(new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: transcript over ${MAX_TRANSCRIPT_CHARS} characters`));
    return true;
  }

  #partial(raw: string): void {
    const text = raw.trim();
    if (text === '' || text === this.#lastPartial) return;
    this.#lastPartial = text;
    this.#log.debug({ pii: { text } }, `${WHAT} partial`);
    try {
      this.#onPartial(text);
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, `${WHAT}: the partial's receiver threw`);
    }
  }

  /** An `error` the SDK raised itself: the socket failed, or a frame was not a JSON event. */
  #onSdkError(err: OpenAIRealtimeError): void {
    // API `error` events reach #onEvent first and have settled the stream by now.
    if (this.#settled || err.error) return;
    this.#fail(this.#transportError(err));
  }

  #transportError(err: unknown): VoiceError {
    if (err instanceof VoiceError) return err;
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    const message = `${err instanceof Error ? err.message : String(err)}${cause}`;
    if (this.#phase === 'connecting')
      return new VoiceError(ErrorCode.ProviderUnavailable, `${WHAT}: cannot connect: ${message}`, {
        retryable: true,
        cause: err,
      });
    return new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: ${message}`, { retryable: true, cause: err });
  }

  #onClose(code: number): void {
    this.#phase = 'ended';
    if (!this.#settled)
      this.#fail(
        new VoiceError(ErrorCode.ProviderFailed, `${WHAT}: the server closed the connection (${code})`, {
          retryable: true,
        }),
      );
  }

  #succeed(raw: string): void {
    if (this.#settled) return;
    const text = raw.trim();
    this.#log.debug(
      { pii: { text }, ms: Math.round(performance.now() - this.#finishAt), events: this.#events },
      `${WHAT} final`,
    );
    this.#settle();
    this.#resolve(text);
    if (this.#rt) closeConnection(this.#rt);
  }

  #fail(err: VoiceError): void {
    if (this.#settled) return;
    if (err.code !== ErrorCode.Aborted) this.#log.warn({ code: err.code, err: err.message }, `${WHAT} stream failed`);
    this.#settle();
    this.#reject(err);
    this.#rt?.socket.terminate();
  }

  #settle(): void {
    this.#settled = true;
    this.#watch.dispose();
    clearTimeout(this.#finalTimer);
    this.#pending = [];
    this.#cfg.onEnd?.(this);
  }

  /** True once the stream has its final or its failure. */
  get settled(): boolean {
    return this.#settled;
  }

  /** Cuts the connection, as an abort would (the provider closing). */
  cancel(): void {
    this.#fail(new VoiceError(ErrorCode.Aborted, 'aborted: the recogniser is closing'));
  }
}
