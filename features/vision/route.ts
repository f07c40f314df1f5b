/**
 * @module `POST /mcp/vision/explain`: the camera's photo, as the firmware sends it
 * (`Esp32Camera::Explain`: chunked multipart/form-data, a `question` then a `file` part, the
 * `Device-Id`, `Client-Id` and `Authorization: Bearer <token>` headers). Checked in this order,
 * each before any work the next costs: the session's token and its device (401), the device's
 * photos per minute (429), a vision model for its agent (503), the body's type (415), the photos
 * in flight server-wide (503 past `vision.maxUploads`); then the body
 * is read as it streams with hard bounds (413 cut off at `vision.maxImageBytes`, 408 past
 * `vision.uploadTimeoutMs`, 400 malformed), the image's header checked (415), the image decoded by
 * ffmpeg (415 when it does not decode; 503 past `vision.maxDecodes` at once or
 * `vision.decodeTimeoutMs`), the model asked (502, 504 past `vision.timeoutMs`). Every answer is a short JSON body: the firmware hands it to
 * its model verbatim as the tool's result, so an error says in words what went wrong.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { ErrorCode, toVoiceError } from '../../core/errors.ts';
import { makeRoom } from '../../core/bounded-map.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import type { Logger } from '../../core/logger.ts';
import { truncateForLog } from '../../core/log-fields.ts';
import { TokenBucket } from '../../core/token-bucket.ts';
import { checkImage } from './image-check.ts';
import type { ImageDecoder } from './image-decode.ts';
import type { LastImages } from './last-images.ts';
import type { VisionChoice } from './model-choice.ts';
import { boundaryOf, MultipartError, MultipartReader } from './multipart.ts';
import type { VisionTokens } from './tokens.ts';
import type { VisionModels } from './vision-model.ts';
import type { VisionSettings } from './vision-settings.ts';

export const VISION_EXPLAIN_PATH = '/mcp/vision/explain';

/** Bytes of the question at most (UTF-8). */
export const MAX_QUESTION_BYTES = 2048;
/** Parts of the body at most (the firmware sends two). */
const MAX_PARTS = 4;
/** Bytes of one part's headers at most. */
const MAX_PART_HEADER_BYTES = 1024;
/** Room for the boundaries and part headers around the image and the question. */
const BODY_OVERHEAD = 16 * 1024;
/** Devices whose photo rate is tracked at most (the oldest forgotten first). */
const MAX_RATED_DEVICES = 10_000;

export interface VisionRouteOptions {
  settings: VisionSettings;
  /** `server.httpRequestTimeoutMs`: the upload deadline never outlasts it. */
  httpRequestTimeoutMs: number;
  tokens: VisionTokens;
  models: VisionModels;
  /** The decode after the header check (ffmpeg); asked at registration whether ffmpeg runs. */
  decoder: ImageDecoder;
  /** The model a device's photos go to now (its agent's); null: none configured. */
  modelFor(deviceId: string): VisionChoice | null;
  /** Each device's last photo, with `vision.keepLast`. */
  lastImages?: LastImages;
}

type Outcome = { status: number; message: string };

function bearer(header: string | undefined): string {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1] ?? '';
}

function headerOf(request: FastifyRequest, name: string): string | null {
  const v = request.headers[name];
  return typeof v === 'string' && v !== '' ? v : null;
}

/**
 * Reads what is left of the body and drops it, within `maxBytes` and the deadline: an early
 * refusal still reaches a client that sends the whole body before it reads (the firmware does),
 * instead of a reset. Past either bound the socket is destroyed.
 */
function drainThenClose(raw: IncomingMessage, maxBytes: number, deadline: number): void {
  if (raw.readableEnded) return;
  let read = 0;
  const stop = (): void => {
    clearTimeout(timer);
    raw.socket?.destroy();
  };
  const timer = setTimeout(stop, Math.max(0, deadline - Date.now()));
  raw.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > maxBytes) stop();
  });
  raw.once('end', () => clearTimeout(timer));
  raw.once('close', () => clearTimeout(timer));
}

/** Ends the exchange without reading more: the answer goes out, then the socket is closed. */
function closeAfter(reply: FastifyReply): void {
  const socket = reply.raw.socket;
  reply.raw.once('finish', () => socket?.destroy());
  reply.raw.once('close', () => socket?.destroy());
}

/** `bytes`: of the body read when it stopped (the log says how little of a refused upload was read). */
type BodyRead =
  | { ok: true; reader: MultipartReader; bytes: number }
  | { ok: false; error: MultipartError | 'timeout' | 'closed'; bytes: number };

/** Feeds the body to the reader as it arrives; stops at the first bound passed, the deadline or a close. */
function readBody(
  raw: IncomingMessage,
  reader: MultipartReader,
  maxBytes: number,
  deadline: number,
): Promise<BodyRead> {
  return new Promise((resolve) => {
    let total = 0;
    let settled = false;
    const finish = (
      r: { ok: true; reader: MultipartReader } | { ok: false; error: MultipartError | 'timeout' | 'closed' },
    ): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('close', onClose);
      raw.pause();
      resolve({ ...r, bytes: total });
    };
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      try {
        if (total > maxBytes) throw new MultipartError(413, 'image too large');
        reader.push(chunk);
      } catch (err) {
        finish({ ok: false, error: err instanceof MultipartError ? err : new MultipartError(400, 'malformed body') });
      }
    };
    const onEnd = (): void => {
      try {
        reader.end();
        finish({ ok: true, reader });
      } catch (err) {
        finish({ ok: false, error: err instanceof MultipartError ? err : new MultipartError(400, 'malformed body') });
      }
    };
    const onClose = (): void => finish({ ok: false, error: 'closed' });
    const timer = setTimeout(() => finish({ ok: false, error: 'timeout' }), Math.max(0, deadline - Date.now()));
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('close', onClose);
  });
}

export function visionRoute(o: VisionRouteOptions): (app: FastifyInstance) => Promise<void> {
  const s = o.settings;
  const rates = new Map<string, TokenBucket>();
  /** Photos between their body's first byte and their answer, server-wide (`vision.maxUploads`). */
  let inFlight = 0;
  // Strangers can send any number of unauthorized requests: their lines are bounded.
  const refusals = createLogRateLimit({ perSecond: 1, burst: 5 });
  const maxBody = s.maxImageBytes + MAX_QUESTION_BYTES + BODY_OVERHEAD;
  const uploadMs = Math.min(s.uploadTimeoutMs, o.httpRequestTimeoutMs);

  const rateOk = (deviceId: string): boolean => {
    const key = deviceId.toLowerCase();
    let bucket = rates.get(key);
    if (!bucket) {
      makeRoom(rates, MAX_RATED_DEVICES);
      bucket = new TokenBucket({ perSecond: s.imagesPerMinute / 60, burst: s.imagesPerMinute });
      rates.set(key, bucket);
    }
    return bucket.take();
  };

  return async (app) => {
    // Whether photos are decoded or only header-checked is known (and a missing ffmpeg said) at start.
    await o.decoder.ready();
    // This route reads its own body, as it streams; no parser reads it first (nor applies the
    // app's bodyLimit to a buffered copy).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    // What Fastify refuses before the handler (a Content-Type it cannot read) still answers in the
    // shape the firmware passes on, and the unread body is not waited for.
    app.setErrorHandler((err: { statusCode?: number; message: string }, request, reply) => {
      const status =
        err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) request.log.error({ err: err.message }, 'vision request failed unexpectedly');
      else refusals.wrap(request.log).warn({ status, reason: err.message }, 'vision request refused');
      closeAfter(reply);
      return reply
        .code(status)
        .header('connection', 'close')
        .send({ success: false, message: status === 500 ? 'internal error' : 'malformed request' });
    });

    app.post(VISION_EXPLAIN_PATH, async (request, reply) => {
      const started = performance.now();
      const deadline = Date.now() + uploadMs;
      const raw = request.raw;
      const deviceId = headerOf(request, 'device-id');
      const check = o.tokens.check(bearer(request.headers.authorization), deviceId);
      const log: Logger = check.ok
        ? request.log.child({ sessionId: check.grant.sessionId, deviceId: check.grant.deviceId })
        : request.log.child({ deviceId: truncateForLog(deviceId ?? undefined, 64) });
      let bytesRead = 0;
      const send = (
        out: Outcome,
        after: 'drain' | 'close' | 'done',
        more: Record<string, unknown> = {},
      ): FastifyReply => {
        const ms = Math.round(performance.now() - started);
        const fields = { status: out.status, ms, reason: out.message, bytesRead, ...more };
        if (out.status >= 500) log.warn(fields, 'vision request failed');
        // Unauthorized and over-the-rate refusals can come without end: their lines are bounded;
        // the rest cost a photo of the rate each.
        else if (out.status === 401 || out.status === 429) refusals.wrap(log).warn(fields, 'vision request refused');
        else log.warn(fields, 'vision request refused');
        if (after !== 'done') reply.header('connection', 'close');
        if (after === 'drain') drainThenClose(raw, maxBody, deadline);
        if (after === 'close') closeAfter(reply);
        return reply.code(out.status).send({ success: false, message: out.message });
      };

      if (!check.ok)
        return send(
          { status: 401, message: check.reason === 'expired' ? 'vision token expired' : 'unauthorized' },
          'drain',
        );
      const grant = check.grant;
      if (!rateOk(grant.deviceId))
        return send({ status: 429, message: `too many photos: at most ${s.imagesPerMinute} a minute` }, 'drain');
      const choice = o.modelFor(grant.deviceId);
      if (!choice) return send({ status: 503, message: 'no vision model is configured' }, 'drain');
      const boundary = boundaryOf(headerOf(request, 'content-type') ?? undefined);
      if (!boundary) return send({ status: 415, message: 'expected a multipart/form-data upload' }, 'drain');
      const declared = Number(request.headers['content-length'] ?? 0);
      if (declared > maxBody) return send({ status: 413, message: 'image too large' }, 'close');
      // Each photo in flight holds it (and at the model its base64 copies) for up to the model's
      // timeout: many devices at once must not add up without end.
      if (inFlight >= s.maxUploads)
        return send({ status: 503, message: 'busy with other photos: try again in a moment' }, 'drain');
      inFlight++;
      try {
        const reader = new MultipartReader(boundary, {
          maxFileBytes: s.maxImageBytes,
          maxFieldBytes: MAX_QUESTION_BYTES,
          maxParts: MAX_PARTS,
          maxHeaderBytes: MAX_PART_HEADER_BYTES,
        });
        const body = await readBody(raw, reader, maxBody, deadline);
        bytesRead = body.bytes;
        if (!body.ok) {
          if (body.error === 'closed') {
            log.info({ ms: Math.round(performance.now() - started) }, 'vision upload abandoned by the device');
            return reply;
          }
          if (body.error === 'timeout') return send({ status: 408, message: 'upload too slow' }, 'close');
          // 413: cut off while streaming, the rest is not read; a malformed body is not read on either.
          return send({ status: body.error.status, message: body.error.message }, 'close');
        }
        const file = reader.file;
        if (!file) return send({ status: 400, message: 'no file part in the upload' }, 'done');
        const image = checkImage(file.data);
        if (!image.ok) return send({ status: 415, message: `not a usable image: ${image.reason}` }, 'done');
        const question = reader.fields.get('question') ?? '';

        const gone = new AbortController();
        const onGone = (): void => gone.abort();
        reply.raw.once('close', onGone);
        const abandoned = (): FastifyReply => {
          log.info({ ms: Math.round(performance.now() - started) }, 'vision request abandoned by the device');
          return reply;
        };
        let answer: string;
        try {
          const decoded = await o.decoder.decode(file.data, image.mime, gone.signal);
          if (decoded.kind === 'aborted') return abandoned();
          if (decoded.kind === 'undecodable')
            return send({ status: 415, message: 'not a usable image: it does not decode' }, 'done', {
              decoder: decoded.detail,
            });
          if (decoded.kind === 'busy')
            return send({ status: 503, message: 'busy checking other photos: try again in a moment' }, 'done');
          if (decoded.kind === 'timeout')
            return send({ status: 503, message: 'the photo could not be checked in time' }, 'done');
          try {
            answer = await o.models.ask(choice.model, {
              question,
              image: file.data,
              mime: image.mime,
              timeoutMs: s.timeoutMs,
              signal: gone.signal,
            });
          } catch (err) {
            const e = toVoiceError(err);
            if (gone.signal.aborted) return abandoned();
            log.warn(
              { err: truncateForLog(e.message, 300), code: e.code, model: choice.model.model },
              'vision model failed',
            );
            return e.code === ErrorCode.Timeout
              ? send({ status: 504, message: 'the vision model did not answer in time' }, 'done')
              : send({ status: 502, message: 'the vision model failed' }, 'done');
          }
        } finally {
          reply.raw.off('close', onGone);
        }
        o.lastImages?.keep({
          deviceId: grant.deviceId,
          mime: image.mime,
          width: image.width,
          height: image.height,
          data: file.data,
          question,
          answer,
          at: new Date().toISOString(),
        });
        log.info(
          {
            ms: Math.round(performance.now() - started),
            bytes: file.data.length,
            width: image.width,
            height: image.height,
            model: choice.model.model,
            source: choice.source,
          },
          'vision answered',
        );
        return reply.code(200).send({ success: true, action: 'RESPONSE', response: answer });
      } finally {
        inFlight--;
      }
    });
  };
}
