/**
 * @module Reads bytes [start, end) of a track: HTTP Range requests for remote URLs (206 is the
 * slice; 200 means the host ignored Range, so the body is sliced here and cached when small;
 * 416 or start past the end means the stream is over), plain file reads for the local folder.
 * Redirects are followed by hand so that each hop passes the URL policy again.
 */
import { open } from 'node:fs/promises';
import type { BodyCache } from './body-cache.ts';
import type { UrlPolicy } from './url-policy.ts';
import { checkUrl } from './url-policy.ts';

/** The slice, or `done` when start is at or past the end of the track. */
export type RangeResult = { done: false; bytes: Buffer } | { done: true };

/** A refusal or upstream failure, with a message meant for the MCP client. */
export class ReadRefused extends Error {}

export interface RangeReaderDeps {
  policy: UrlPolicy;
  cache: BodyCache;
  cacheBytes: number;
  fetchTimeoutMs: number;
}

const MAX_REDIRECTS = 5;

/** Reads [start, end) of `rawUrl`. Throws ReadRefused with a clear reason for anything refused or failed. */
export async function readRange(
  rawUrl: string,
  start: number,
  end: number,
  deps: RangeReaderDeps,
  signal: AbortSignal,
): Promise<RangeResult> {
  const verdict = await checkUrl(rawUrl, deps.policy);
  if (!verdict.ok) throw new ReadRefused(verdict.reason);
  if (verdict.localPath !== undefined) return readFileRange(verdict.localPath, start, end);
  const cached = deps.cache.get(verdict.url.href);
  if (cached) return slice(cached, start, end);
  return readHttpRange(verdict.url, start, end, deps, signal);
}

async function readFileRange(path: string, start: number, end: number): Promise<RangeResult> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    if (start >= size) return { done: true };
    const length = Math.min(end, size) - start;
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await file.read(bytes, 0, length, start);
    return { done: false, bytes: bytes.subarray(0, bytesRead) };
  } finally {
    await file.close();
  }
}

async function readHttpRange(
  first: URL,
  start: number,
  end: number,
  deps: RangeReaderDeps,
  signal: AbortSignal,
): Promise<RangeResult> {
  const requestSignal = AbortSignal.any([signal, AbortSignal.timeout(deps.fetchTimeoutMs)]);
  let url = first;
  for (let hop = 0; ; hop++) {
    let res: Response;
    try {
      res = await fetch(url, {
        headers: { Range: `bytes=${start}-${end - 1}` },
        redirect: 'manual',
        signal: requestSignal,
      });
    } catch (err) {
      if (signal.aborted) throw err;
      const why = requestSignal.aborted ? `timed out after ${deps.fetchTimeoutMs} ms` : errMessage(err);
      throw new ReadRefused(`fetching ${url.host} failed: ${why}`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.has('location')) {
      await res.body?.cancel();
      if (hop >= MAX_REDIRECTS) throw new ReadRefused(`more than ${MAX_REDIRECTS} redirects from ${first.host}`);
      const next = new URL(res.headers.get('location') as string, url);
      const verdict = await checkUrl(next.href, { allowHosts: deps.policy.allowHosts });
      if (!verdict.ok) throw new ReadRefused(`redirect refused: ${verdict.reason}`);
      url = verdict.url;
      continue;
    }
    if (res.status === 416) {
      await res.body?.cancel();
      return { done: true };
    }
    if (res.status === 206) return { done: false, ...(await fromPartial(res, start, end)) };
    if (res.status === 200) return fromFullBody(res, first.href, start, end, deps);
    await res.body?.cancel();
    throw new ReadRefused(`${url.host} answered HTTP ${res.status} for bytes ${start}-${end - 1}`);
  }
}

async function fromPartial(res: Response, start: number, end: number): Promise<{ bytes: Buffer }> {
  // Content-Range: bytes first-last/total. A host may start earlier than asked; never later.
  const m = /^bytes\s+(\d+)-(\d+)\/(\d+|\*)$/i.exec(res.headers.get('content-range') ?? '');
  const firstByte = m ? Number(m[1]) : start;
  if (firstByte > start) {
    await res.body?.cancel();
    throw new ReadRefused(`host answered bytes from ${firstByte} when ${start} was asked`);
  }
  const body = await readUpTo(res, end - firstByte);
  return { bytes: body.bytes.subarray(start - firstByte, end - firstByte) };
}

async function fromFullBody(
  res: Response,
  href: string,
  start: number,
  end: number,
  deps: RangeReaderDeps,
): Promise<RangeResult> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  const cacheable = Number.isFinite(declared) ? declared <= deps.cacheBytes : false;
  // Read the whole body only when it will be cached; otherwise stop as soon as `end` is reached.
  const body = await readUpTo(res, cacheable ? deps.cacheBytes + 1 : end);
  if (body.ended && body.bytes.length <= deps.cacheBytes) deps.cache.set(href, body.bytes);
  return slice(body.bytes, start, end);
}

function slice(body: Buffer, start: number, end: number): RangeResult {
  if (start >= body.length) return { done: true };
  return { done: false, bytes: body.subarray(start, Math.min(end, body.length)) };
}

/** Reads at most `limit` bytes of the body, cancelling the rest. `ended` is true when the body ended by itself. */
async function readUpTo(res: Response, limit: number): Promise<{ bytes: Buffer; ended: boolean }> {
  if (res.body === null) return { bytes: Buffer.alloc(0), ended: true };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks, total), ended: true };
      chunks.push(value);
      total += value.length;
      if (total >= limit) {
        await reader.cancel();
        return { bytes: Buffer.concat(chunks, total).subarray(0, limit), ended: false };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function errMessage(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return (err instanceof Error ? err.message : String(err)) + cause;
}
