/**
 * @module One utterance recognised over one sauc WebSocket connection. The protocol has one
 * recognition per connection (the server closes it after the final response), so a stream is a
 * connection: opened at the speech start, closed at its final, its failure or its cancel.
 *
 *   open ─► full client request ─► (init response) ─► audio packets of `packetMs` ─► last packet
 *        ◄─ responses whose `result.text` is the hypothesis so far ◄─ final response (flag "last")
 *
 * Audio pushed before the init response is kept (bounded) and sent at once when it comes. Every
 * frame is decoded with a cap on its size and on what its gzip inflates to, its JSON validated,
 * its text length and the number of frames bounded; anything else fails the stream.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { AsrStream, AsrStreamOptions } from '../../audio/asr/asr.ts';
import { int16ToBuffer } from '../../audio/pcm/pcm.ts';
import { Resampler } from '../../audio/pcm/resample.ts';
import { watchStart, type StartWatch } from '../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { decodeServerFrame, encodeAudioPacket, encodeFullClientRequest, FrameError } from './frames.ts';
import { SAUC_SAMPLE_RATE, SaucResponseSchema, saucRequest } from './messages.ts';
import type { VolcengineAsrOptions } from './options.ts';
import { MAX_REFUSAL_BODY_BYTES, readRefusal } from './refusal.ts';
import { MAX_VENDOR_ERROR_CHARS, vendorError } from './vendor-error.ts';

/** What a vendor (or anything at its URL) can make one stream hold or do. */
export const VOLCENGINE_LIMITS = {
  /** Largest WebSocket message accepted (ws `maxPayload`); a response with a minute's text is a few KB. */
  maxFrameBytes: 256 * 1024,
  /** Largest size a gzip payload may inflate to. */
  maxInflatedBytes: 256 * 1024,
  /** Longest transcript (partial or final), in characters. */
  maxTextChars: 4000,
  /** Most frames one connection may send us (one per 20 ms packet of a 60 s utterance is 3,000). */
  maxMessages: 4000,
  /** Audio kept while the connection opens, in ms; past it the newest audio is dropped. */
  maxPendingMs: 60_000,
  /** Bytes of a refused handshake's body kept for the error message. */
  maxRefusalBodyBytes: MAX_REFUSAL_BODY_BYTES,
  /** Characters of a vendor's error message kept in our error. */
  maxErrorChars: MAX_VENDOR_ERROR_CHARS,
} as const;

const BYTES_PER_SECOND = SAUC_SAMPLE_RATE * 2;

type Outcome = { ok: true; text: string } | { ok: false; error: VoiceError };

export class VolcengineStream implements AsrStream {
  readonly #o: VolcengineAsrOptions;
  readonly #onPartial: (text: string) => void;
  readonly #log: Logger;
  readonly #onEnd: (stream: VolcengineStream) => void;
  readonly #watch: StartWatch;
  readonly #resampler: Resampler | undefined;
  readonly #packetBytes: number;
  readonly #maxPendingBytes: number;
  #ws: WebSocket | undefined;
  #opened = false;
  /** The init response came: audio goes out as it is pushed. */
  #ready = false;
  /** `finish` was called: no more audio, the last packet goes out once ready. */
  #ending = false;
  #lastSent = false;
  #unsent: Buffer[] = [];
  #unsentBytes = 0;
  #droppedMs = 0;
  #partial = '';
  #messages = 0;
  #finalTimer: NodeJS.Timeout | undefined;
  #outcome: Outcome | undefined;
  #finished: Promise<string> | undefined;
  #settle: ((o: Outcome) => void) | undefined;

  /** `onEnd`: called once when the stream has ended (its owner forgets it). */
  constructor(o: VolcengineAsrOptions, opts: AsrStreamOptions, onEnd: (stream: VolcengineStream) => void) {
    this.#o = o;
    this.#onPartial = opts.onPartial;
    this.#log = opts.log;
    this.#onEnd = onEnd;
    this.#packetBytes = Math.round((o.packetMs * BYTES_PER_SECOND) / 1000 / 2) * 2;
    this.#maxPendingBytes = (VOLCENGINE_LIMITS.maxPendingMs * BYTES_PER_SECOND) / 1000;
    this.#resampler =
      opts.sampleRate === SAUC_SAMPLE_RATE ? undefined : new Resampler(opts.sampleRate, SAUC_SAMPLE_RATE);
    this.#watch = watchStart(opts.signal, {
      startTimeoutMs: o.connectTimeoutMs,
      timeoutMessage: `volcengine: no answer to the recognition request within ${o.connectTimeoutMs} ms`,
      onAbort: (reason) => this.#end({ ok: false, error: aborted(reason) }),
      onTimeout: (error) => this.#end({ ok: false, error }),
    });
    if (this.#watch.arm()) this.#connect();
  }

  push(pcm: Int16Array): void {
    if (this.#outcome || this.#ending || pcm.length === 0) return;
    const at16k = this.#resampler ? this.#resampler.push(pcm) : pcm;
    // A copy: the caller may reuse or transfer its buffer, and unsent audio is kept.
    this.#queue(Buffer.from(int16ToBuffer(at16k)));
    this.#drain();
  }

  finish(): Promise<string> {
    if (this.#finished) return this.#finished;
    this.#finished = new Promise<string>((resolve, reject) => {
      this.#settle = (o) => (o.ok ? resolve(o.text) : reject(o.error));
    });
    if (this.#outcome) this.#settle?.(this.#outcome);
    else {
      this.#ending = true;
      if (this.#resampler) this.#queue(Buffer.from(int16ToBuffer(this.#resampler.flush())));
      const ms = this.#o.finalTimeoutMs;
      this.#finalTimer = setTimeout(
        () =>
          this.#end({
            ok: false,
            error: new VoiceError(ErrorCode.Timeout, `volcengine: no final transcript within ${ms} ms`, {
              retryable: true,
            }),
          }),
        ms,
      );
      this.#drain();
    }
    return this.#finished;
  }

  /** True once the stream has its outcome (final, failure or cancel). */
  get ended(): boolean {
    return this.#outcome !== undefined;
  }

  /** Ends the stream as if its signal had aborted (the recogniser is closing). */
  cancel(): void {
    this.#end({ ok: false, error: aborted('the recogniser was closed') });
  }

  #connect(): void {
    const connectId = randomUUID();
    const ws = new WebSocket(this.#o.url, {
      headers: {
        'X-Api-App-Key': this.#o.appKey,
        'X-Api-Access-Key': this.#o.accessKey,
        'X-Api-Resource-Id': this.#o.resourceId,
        'X-Api-Connect-Id': connectId,
      },
      maxPayload: VOLCENGINE_LIMITS.maxFrameBytes,
      perMessageDeflate: false,
    });
    this.#ws = ws;
    ws.on('upgrade', (res: IncomingMessage) => {
      // The vendor's trace id for its support, with ours.
      this.#log.debug({ connectId, logId: res.headers['x-tt-logid'] }, 'volcengine connected');
    });
    ws.on('unexpected-response', (_req, res: IncomingMessage) => this.#refused(res));
    ws.on('open', () => {
      this.#opened = true;
      if (!this.#outcome) ws.send(encodeFullClientRequest(saucRequest(this.#o)));
    });
    ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => this.#onMessage(data, isBinary));
    ws.on('error', (err: Error & { code?: string }) => {
      const message =
        err.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH'
          ? `a frame over ${VOLCENGINE_LIMITS.maxFrameBytes} bytes`
          : err.message;
      const code = this.#opened ? ErrorCode.ProviderFailed : ErrorCode.ProviderUnavailable;
      this.#end({ ok: false, error: new VoiceError(code, `volcengine: ${message}`, { retryable: true, cause: err }) });
    });
    ws.on('close', (code: number) => {
      this.#end({
        ok: false,
        error: new VoiceError(ErrorCode.ProviderFailed, `volcengine closed the connection (${code}) before the final`, {
          retryable: true,
        }),
      });
    });
  }

  /** The handshake got an HTTP answer instead of an upgrade: bad keys, resource id or URL. */
  #refused(res: IncomingMessage): void {
    void readRefusal(res, VOLCENGINE_LIMITS.maxErrorChars).then(({ status, logId, body }) => {
      const hint =
        status === 401 || status === 403
          ? ' (check asr.appKey, asr.accessKey and asr.resourceId)'
          : status === 404
            ? ' (check asr.url)'
            : '';
      this.#log.debug({ status, logId }, 'volcengine refused the connection');
      this.#end({
        ok: false,
        error: new VoiceError(
          ErrorCode.ProviderUnavailable,
          `volcengine refused the connection: HTTP ${status}${hint}${body ? `: ${body}` : ''}`,
        ),
      });
    });
  }

  #onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.#outcome) return;
    const fail = (message: string): void =>
      this.#end({ ok: false, error: new VoiceError(ErrorCode.ProviderFailed, `volcengine: ${message}`) });
    if (++this.#messages > VOLCENGINE_LIMITS.maxMessages) {
      fail(`more than ${VOLCENGINE_LIMITS.maxMessages} frames on one connection`);
      return;
    }
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (!isBinary) {
      fail(`a text frame instead of a binary one: ${bytes.toString('utf8', 0, VOLCENGINE_LIMITS.maxErrorChars)}`);
      return;
    }
    let frame: ReturnType<typeof decodeServerFrame>;
    try {
      frame = decodeServerFrame(bytes, VOLCENGINE_LIMITS.maxInflatedBytes);
    } catch (err) {
      fail(`malformed frame: ${err instanceof FrameError ? err.message : String(err)}`);
      return;
    }
    if (frame.kind === 'error') {
      this.#end({ ok: false, error: vendorError(frame.code, frame.message) });
      return;
    }
    const parsed = SaucResponseSchema.safeParse(frame.payload);
    if (!parsed.success) {
      fail(`a response that does not match the protocol (${parsed.error.issues[0]?.message ?? 'invalid'})`);
      return;
    }
    const text = parsed.data.result?.text ?? '';
    if (text.length > VOLCENGINE_LIMITS.maxTextChars) {
      fail(`a transcript of ${text.length} characters (more than ${VOLCENGINE_LIMITS.maxTextChars})`);
      return;
    }
    if (!this.#ready) {
      // The first response answers the request: the vendor took it, audio may follow.
      this.#ready = true;
      this.#watch.started();
      this.#drain();
    }
    if (frame.last) {
      this.#log.debug({ pii: { text } }, 'volcengine final');
      this.#end({ ok: true, text });
      return;
    }
    if (text === this.#partial) return;
    this.#partial = text;
    this.#log.debug({ pii: { text } }, 'volcengine partial');
    try {
      this.#onPartial(text);
    } catch (err) {
      this.#log.warn({ err }, 'volcengine partial handler failed');
    }
  }

  #queue(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (!this.#ready && this.#unsentBytes + bytes.length > this.#maxPendingBytes) {
      if (this.#droppedMs === 0)
        this.#log.warn(
          { keptMs: VOLCENGINE_LIMITS.maxPendingMs },
          'volcengine is not connected yet and its audio buffer is full: dropping audio',
        );
      this.#droppedMs += (bytes.length * 1000) / BYTES_PER_SECOND;
      return;
    }
    this.#unsent.push(bytes);
    this.#unsentBytes += bytes.length;
  }

  /** Sends whole packets of what is unsent, and the rest as the last packet once finishing. */
  #drain(): void {
    const ws = this.#ws;
    if (!this.#ready || this.#lastSent || this.#outcome || !ws) return;
    if (this.#unsentBytes < this.#packetBytes && !this.#ending) return;
    const all = this.#unsent.length === 1 ? (this.#unsent[0] as Buffer) : Buffer.concat(this.#unsent);
    let at = 0;
    for (; all.length - at >= this.#packetBytes; at += this.#packetBytes)
      ws.send(encodeAudioPacket(all.subarray(at, at + this.#packetBytes), false));
    const rest = all.subarray(at);
    if (this.#ending) {
      ws.send(encodeAudioPacket(rest, true));
      this.#lastSent = true;
      this.#unsent = [];
      this.#unsentBytes = 0;
      if (this.#droppedMs > 0) this.#log.warn({ droppedMs: Math.round(this.#droppedMs) }, 'volcengine audio dropped');
      return;
    }
    this.#unsent = rest.length > 0 ? [rest] : [];
    this.#unsentBytes = rest.length;
  }

  /** Settles the stream once: clears its timers, closes its socket, answers `finish`. */
  #end(outcome: Outcome): void {
    if (this.#outcome) return;
    this.#outcome = outcome;
    this.#watch.dispose();
    clearTimeout(this.#finalTimer);
    this.#unsent = [];
    this.#unsentBytes = 0;
    // After the final the vendor closes too; nothing more is wanted from the socket in any case.
    this.#ws?.terminate();
    if (!outcome.ok) {
      if (outcome.error.code === ErrorCode.Aborted) this.#log.debug('volcengine stream cancelled');
      else this.#log.warn({ code: outcome.error.code, err: outcome.error.message }, 'volcengine stream failed');
    }
    this.#settle?.(outcome);
    this.#onEnd(this);
  }
}

function aborted(reason: unknown): VoiceError {
  return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: reason });
}
