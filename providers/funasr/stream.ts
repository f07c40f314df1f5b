/**
 * @module One utterance streamed to a FunASR server over its own connection.
 *
 * Opened at the VAD's speech start: the connection is made at once and the audio pushed meanwhile
 * is kept (at most `MAX_PENDING_MS`) and sent after the config message once it opens, cut into
 * FunASR's frames. `finish` sends the end marker and waits, at most `finalTimeoutMs`, for the
 * server to say the utterance is decoded. How each server says it (see messages.ts and the
 * stand-in, test/fixtures/fake-funasr.ts), after our end marker and on a result stamped with the
 * end marker's `wav_name` (or none):
 * - the Python server's acknowledgement `is_end:true` (with `is_final:false` and `error` when it
 *   failed);
 * - any result with `is_final:true` (the C++ server's one end-of-input result; the Python server's
 *   last sentence);
 * - an `offline` result (the C++ offline server says `is_final:false` on its only result);
 * - the server closing the connection after it answered the end marker.
 *
 * One connection per utterance: both servers keep per-connection decoder state that is only reset
 * by a new connection, and the connection is made while the user speaks, so its cost is hidden.
 */
import { randomUUID } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import type { AsrStream, AsrStreamOptions } from '../../audio/asr/asr.ts';
import { int16ToBuffer, PcmFramer } from '../../audio/pcm/pcm.ts';
import { Resampler } from '../../audio/pcm/resample.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { redactUrl } from '../../core/redact-url.ts';
import { connectFailure, openFunasrSocket, subprotocolRefused, type FunasrPeer } from './connect.ts';
import { configMessage, endMessage, frameSamples, FUNASR_SAMPLE_RATE, FunasrMessageSchema } from './messages.ts';
import type { FunasrAsrOptions } from './options.ts';
import { FunasrTranscript, MAX_TRANSCRIPT_CHARS } from './transcript.ts';

/** Audio kept while the connection opens; past it the newest audio is dropped (with one warning). */
export const MAX_PENDING_MS = 60_000;
/** Messages accepted from the server for one utterance (a minute of `2pass` speech makes a few hundred). */
export const MAX_MESSAGES = 2000;

const noop = (): void => {};

export interface FunasrStreamContext {
  opts: FunasrAsrOptions;
  ca: Buffer | undefined;
  peer: FunasrPeer;
  /** Called once when the stream has ended, however it ended. */
  onEnded: () => void;
}

export class FunasrStream implements AsrStream {
  readonly #o: FunasrAsrOptions;
  readonly #ctx: FunasrStreamContext;
  readonly #log: Logger;
  readonly #signal: AbortSignal;
  readonly #onPartial: (text: string) => void;
  readonly #wavName = `xiaozhi-${randomUUID().slice(0, 8)}`;
  readonly #endWavName = `${this.#wavName}-end`;
  readonly #framer: PcmFramer;
  readonly #resampler: Resampler | undefined;
  readonly #transcript = new FunasrTranscript();
  #ws: WebSocket | undefined;
  #open = false;
  #retried = false;
  #pending: Buffer[] = [];
  #pendingSamples = 0;
  #dropWarned = false;
  #messages = 0;
  /** `finish` was called: pushes are ignored and the end marker goes out once open. */
  #finishing = false;
  #endSent = false;
  /** A result made after our end marker arrived (see the module comment). */
  #answeredEnd = false;
  /** Resolved, failed or aborted: nothing more is sent or called. */
  #settled = false;
  #failure: VoiceError | undefined;
  #finish: Promise<string> | undefined;
  #resolve: (text: string) => void = noop;
  #reject: (err: VoiceError) => void = noop;
  #connectTimer: NodeJS.Timeout | undefined;
  #finalTimer: NodeJS.Timeout | undefined;
  readonly #onAbort = (): void => {
    this.#fail(new VoiceError(ErrorCode.Aborted, 'aborted', { cause: this.#signal.reason }));
  };

  constructor(stream: AsrStreamOptions, ctx: FunasrStreamContext) {
    this.#o = ctx.opts;
    this.#ctx = ctx;
    this.#log = stream.log;
    this.#signal = stream.signal;
    this.#onPartial = stream.onPartial;
    this.#framer = new PcmFramer(frameSamples(ctx.opts));
    this.#resampler =
      stream.sampleRate === FUNASR_SAMPLE_RATE ? undefined : new Resampler(stream.sampleRate, FUNASR_SAMPLE_RATE);
    if (this.#signal.aborted) {
      this.#onAbort();
      return;
    }
    this.#signal.addEventListener('abort', this.#onAbort, { once: true });
    this.#connectTimer = setTimeout(() => {
      this.#fail(
        new VoiceError(ErrorCode.Timeout, `funasr: no connection within ${this.#o.connectTimeoutMs} ms`, {
          retryable: true,
        }),
      );
    }, this.#o.connectTimeoutMs);
    this.#connect();
  }

  push(pcm: Int16Array): void {
    if (this.#settled || this.#finishing || pcm.length === 0) return;
    const at16k = this.#resampler ? this.#resampler.push(pcm) : pcm;
    for (const frame of this.#framer.push(at16k)) this.#sendAudio(frame);
  }

  finish(): Promise<string> {
    if (this.#finish) return this.#finish;
    this.#finishing = true;
    if (this.#failure) {
      this.#finish = Promise.reject(this.#failure);
      return this.#finish;
    }
    this.#finish = new Promise<string>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#finalTimer = setTimeout(() => {
      this.#fail(
        new VoiceError(ErrorCode.Timeout, `funasr: no final transcript within ${this.#o.finalTimeoutMs} ms`, {
          retryable: true,
        }),
      );
    }, this.#o.finalTimeoutMs);
    if (this.#open) this.#sendEnd();
    return this.#finish;
  }

  #connect(): void {
    const ws = openFunasrSocket(this.#o.url, {
      offerBinary: this.#ctx.peer.offerBinary,
      rejectUnauthorized: this.#o.rejectUnauthorized,
      ca: this.#ctx.ca,
    });
    this.#ws = ws;
    ws.on('open', () => this.#onOpen());
    ws.on('message', (data: RawData, isBinary: boolean) => this.#onMessage(data, isBinary));
    ws.on('error', (err: Error) => this.#onError(err));
    ws.on('close', (code: number) => this.#onClose(code));
  }

  #onOpen(): void {
    const ws = this.#ws;
    if (this.#settled || !ws) return;
    this.#open = true;
    clearTimeout(this.#connectTimer);
    this.#log.debug({ url: redactUrl(this.#o.url), mode: this.#o.mode, wavName: this.#wavName }, 'funasr stream open');
    ws.send(configMessage(this.#o, this.#wavName));
    for (const frame of this.#pending) ws.send(frame);
    this.#pending = [];
    this.#pendingSamples = 0;
    if (this.#finishing) this.#sendEnd();
  }

  #sendAudio(frame: Int16Array): void {
    const bytes = int16ToBuffer(frame);
    if (this.#open) {
      this.#ws?.send(bytes);
      return;
    }
    if (((this.#pendingSamples + frame.length) * 1000) / FUNASR_SAMPLE_RATE > MAX_PENDING_MS) {
      if (!this.#dropWarned)
        this.#log.warn({ limitMs: MAX_PENDING_MS }, 'funasr not connected yet: audio past the limit dropped');
      this.#dropWarned = true;
      return;
    }
    this.#pending.push(bytes);
    this.#pendingSamples += frame.length;
  }

  #sendEnd(): void {
    if (this.#endSent || this.#settled) return;
    if (this.#resampler) for (const frame of this.#framer.push(this.#resampler.flush())) this.#sendAudio(frame);
    const rest = this.#framer.buffered;
    const last = this.#framer.flush();
    // The last frame as it is, not padded: FunASR's client sends a short last frame too.
    if (last) this.#sendAudio(last.subarray(0, rest));
    this.#ws?.send(endMessage(this.#endWavName));
    this.#endSent = true;
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#settled) return;
    if (++this.#messages > MAX_MESSAGES)
      return this.#fail(this.#failed(`more than ${MAX_MESSAGES} messages for one utterance`));
    if (isBinary) return this.#fail(this.#failed('a binary frame (results are JSON text)'));
    let json: unknown;
    try {
      json = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : String(data));
    } catch {
      return this.#fail(this.#failed('a text frame that is not JSON'));
    }
    const parsed = FunasrMessageSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return this.#fail(this.#failed(`a malformed message (${issue?.path.join('.') || 'root'}: ${issue?.message})`));
    }
    const m = parsed.data;
    if (m.is_end === true) {
      if (m.is_final === false)
        return this.#fail(
          new VoiceError(
            ErrorCode.ProviderRejected,
            `funasr could not decode the utterance: ${m.error ?? 'no reason'}`,
          ),
        );
      if (this.#endSent) this.#complete();
      return;
    }
    if (m.mode === undefined && m.text?.startsWith('ERROR.'))
      return this.#fail(
        new VoiceError(ErrorCode.ProviderRejected, `funasr refused the stream: ${m.text.slice(0, 200)}`),
      );
    const answersEnd = this.#endSent && (m.wav_name === undefined || m.wav_name === this.#endWavName);
    if (answersEnd) this.#answeredEnd = true;
    const applied = this.#transcript.apply(m.mode, m.text ?? '');
    if (applied === 'too_long') return this.#fail(this.#failed(`a transcript over ${MAX_TRANSCRIPT_CHARS} characters`));
    if (applied === 'changed') {
      const text = this.#transcript.text;
      this.#log.debug({ text }, 'funasr partial');
      try {
        this.#onPartial(text);
      } catch (err) {
        this.#log.warn({ err: String(err) }, 'funasr partial: the listener threw');
      }
      if (this.#settled) return; // the listener may have cancelled the stream
    }
    if (answersEnd && (m.is_final === true || m.mode === 'offline')) this.#complete();
  }

  #onError(err: Error): void {
    if (this.#settled) return;
    if (this.#open) return this.#fail(this.#failed(`the connection failed (${err.message})`, err));
    const offered = this.#ctx.peer.offerBinary;
    if (!this.#retried && subprotocolRefused(err, offered)) {
      this.#retried = true;
      this.#ctx.peer.offerBinary = !offered;
      this.#log.info(
        { offerBinary: !offered },
        'funasr: the server refused the subprotocol choice; connecting the other way from now on',
      );
      this.#drop();
      this.#connect();
      return;
    }
    this.#fail(connectFailure(err));
  }

  #onClose(code: number): void {
    if (this.#settled) return;
    if (!this.#open) return this.#fail(connectFailure(new Error(`closed during the handshake (code ${code})`)));
    // A server that answered our end marker and hung up without saying final has said all it will.
    if (this.#answeredEnd) return this.#complete();
    this.#fail(this.#failed(`the connection closed before the final transcript (code ${code})`));
  }

  #failed(what: string, cause?: unknown): VoiceError {
    return new VoiceError(ErrorCode.ProviderFailed, `funasr: ${what}`, { retryable: true, cause });
  }

  #complete(): void {
    if (this.#settled) return;
    this.#settled = true;
    const text = this.#transcript.text;
    this.#log.debug({ text }, 'funasr final');
    this.#release(false);
    this.#resolve(text);
  }

  #fail(err: VoiceError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#failure = err;
    if (err.code !== ErrorCode.Aborted) this.#log.warn({ code: err.code, err: err.message }, 'funasr stream failed');
    this.#release(true);
    this.#reject(err);
  }

  /** Clears the timers, unhooks the signal and closes the socket (at once when `hard`). */
  #release(hard: boolean): void {
    clearTimeout(this.#connectTimer);
    clearTimeout(this.#finalTimer);
    this.#signal.removeEventListener('abort', this.#onAbort);
    this.#pending = [];
    const ws = this.#ws;
    const graceful = !hard && ws?.readyState === ws?.OPEN;
    if (graceful) {
      ws?.removeAllListeners();
      ws?.on('error', noop);
      ws?.close(1000);
      this.#ws = undefined;
    } else this.#drop();
    this.#ctx.onEnded();
  }

  /** Destroys the socket; late events from it are ignored. */
  #drop(): void {
    const ws = this.#ws;
    if (!ws) return;
    this.#ws = undefined;
    ws.removeAllListeners();
    ws.on('error', noop);
    ws.terminate();
  }
}
