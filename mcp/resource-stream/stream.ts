/**
 * @module The paged resource stream: reads a ResourceLink page by page with
 * `resources/read` and yields the bytes, so playback can start while later pages are still
 * unread. Pull-based: a page is requested only when the consumer asks for the next chunk, so
 * memory stays at about one page whatever the length, and a slow consumer (the real-time pacer
 * behind ffmpeg) slows the reads down. Depends only on the `ResourceSource` interface.
 */
import { runScoped, sleep, throwIfAborted } from '../../core/abort.ts';
import { ErrorCode, VoiceError, isAbortError } from '../../core/errors.ts';
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../core/logger.ts';
import { silentLogger } from '../../core/logger.ts';
import type {
  ResourceContents,
  ResourceLinkContent,
  ResourceSource,
  ResourceTemplateInfo,
} from '../contract/tool-source.ts';
import { decodePage } from './page-contents.ts';
import type { PagePlan, PageStyle } from './page-request.ts';
import { argumentsPlan, templatePlan } from './page-request.ts';

export { STREAM_DONE_FLAG } from './page-contents.ts';
export type { PageStyle } from './page-request.ts';

/**
 * 100 KB: the page size mcp-go-based xiaozhi servers read with (McpReadResourcePageSize in
 * xiaozhi-esp32-server-golang), so a music server written for them pages the same way here.
 */
export const DEFAULT_PAGE_SIZE = 100 * 1024;
/** Per-page read timeout, in ms (30 s, as those servers wait). */
export const DEFAULT_PAGE_TIMEOUT_MS = 30_000;
/** Pause before retrying a failed page, in ms (those servers pause 1 s too). */
export const DEFAULT_RETRY_DELAY_MS = 1_000;
/** Attempts per page before the stream fails. */
export const DEFAULT_MAX_TRIES = 3;
/** Safety cap on one stream's length: a server that ignores `start` would otherwise loop forever. */
export const DEFAULT_MAX_BYTES = 1024 * 1024 * 1024;

/** Reported after each page is read. `ms` covers the whole page, retries included. */
export interface PageInfo {
  index: number;
  bytes: number;
  ms: number;
}

export interface ResourceStreamOptions {
  /** Bytes asked for per page; default 100 KB. A page shorter than this ends the stream. */
  pageSize?: number;
  /** Timeout of one read attempt, in ms; default 30000. */
  pageTimeoutMs?: number;
  /** Pause before retrying a timed-out or failed page, in ms; default 1000. */
  retryDelayMs?: number;
  /** Attempts per page (first try included); default 3. */
  maxTries?: number;
  /**
   * 'arguments': the mcp-go style (`uri` + `arguments { url, start, end }`).
   * 'template': expand a server template with start/end variables and read that URI only.
   * 'auto' (default): template when one fits, else arguments. When `templates` is not given,
   * 'auto' and 'template' ask the source once with `listResourceTemplates` (failures mean none).
   */
  style?: PageStyle;
  /** The server's resource templates, when the caller already has them. */
  templates?: ResourceTemplateInfo[];
  /** Stops the stream at once; the in-flight read gets the signal too. */
  signal: AbortSignal;
  log?: Logger;
  onPage?: (info: PageInfo) => void;
  /** Stream length cap in bytes; default 1 GiB. Exceeding it fails the stream. */
  maxBytes?: number;
}

/**
 * Reads `link` in pages and yields each page's bytes (blob pages base64-decoded, text pages as
 * utf-8). Ends after a page whose decoded blob is exactly `[DONE]` (not yielded), a short page
 * (yielded), a page longer than asked (the server ignored paging: yielded once), or an empty
 * result. Text entries are not audio: a first page of text only fails the stream with that text.
 * A page that times out (or whose connection dropped) is retried after `retryDelayMs`, up to
 * `maxTries` attempts; a JSON-RPC error fails at once. Failures throw a VoiceError whose message
 * says which resource and page failed and why. An abort throws an Aborted VoiceError at once.
 */
export async function* readResourceStream(
  source: ResourceSource,
  link: ResourceLinkContent,
  opts: ResourceStreamOptions,
): AsyncGenerator<Uint8Array, void, undefined> {
  const pageSize = positiveInt(opts.pageSize, DEFAULT_PAGE_SIZE, 'pageSize');
  const pageTimeoutMs = positiveInt(opts.pageTimeoutMs, DEFAULT_PAGE_TIMEOUT_MS, 'pageTimeoutMs');
  const retryDelayMs = Math.max(0, opts.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS);
  const maxTries = positiveInt(opts.maxTries, DEFAULT_MAX_TRIES, 'maxTries');
  const maxBytes = positiveInt(opts.maxBytes, DEFAULT_MAX_BYTES, 'maxBytes');
  const { signal } = opts;
  const log = (opts.log ?? silentLogger).child({ resource: link.uri });
  throwIfAborted(signal);

  const plan = await choosePlan(source, link, opts.style ?? 'auto', opts.templates, pageTimeoutMs, signal, log);
  log.debug({ style: plan.style, template: plan.template, pageSize }, 'resource stream started');

  const startedAt = performance.now();
  let offset = 0;
  let index = 0;
  let finished = false;
  try {
    for (;;) {
      const pageStartedAt = performance.now();
      const request = plan.request(offset, offset + pageSize);
      const contents = await readPageWithRetry(source, request.uri, request.arguments, {
        index,
        offset,
        pageTimeoutMs,
        retryDelayMs,
        maxTries,
        signal,
        log,
      });
      const page = decodePage(contents);
      const ms = performance.now() - pageStartedAt;
      log.debug({ index, bytes: page.bytes.length, done: page.done, ms }, 'resource page read');
      opts.onPage?.({ index, bytes: page.bytes.length, ms });
      index += 1;
      if (page.text !== undefined && page.bytes.length === 0 && !page.done) {
        // A text answer where audio was expected is the server's message (often an error), not audio.
        if (offset === 0)
          throw new VoiceError(
            ErrorCode.ToolFailed,
            `resource ${link.uri} answered text, not audio: ${clip(page.text)}`,
          );
        log.warn({ index, text: clip(page.text) }, 'resource page held only text; ending the stream');
        break;
      }
      // A server that ignores start/end (SDK-built servers strip unknown params) answers the whole
      // resource to every read: a page longer than asked is that whole answer, played once.
      const unpaged = page.bytes.length > pageSize;
      if (unpaged)
        log.info(
          { index, bytes: page.bytes.length, pageSize },
          'resource answered more than a page: taking it as the whole resource',
        );
      offset += page.bytes.length;
      if (offset > maxBytes) {
        throw new VoiceError(ErrorCode.ToolFailed, `resource ${link.uri} exceeded the ${maxBytes}-byte stream limit`);
      }
      // The three end conditions mcp-go readers use (the [DONE] flag, a short page, an empty
      // result), and an answer that was not paged at all.
      const last = page.done || unpaged || page.bytes.length < pageSize;
      if (page.bytes.length > 0) {
        throwIfAborted(signal);
        yield page.bytes;
      }
      if (last) break;
    }
    finished = true;
    log.info(
      { pages: index, bytes: offset, ms: Math.round(performance.now() - startedAt) },
      'resource stream finished',
    );
  } finally {
    if (!finished) log.debug({ pages: index, bytes: offset, aborted: signal.aborted }, 'resource stream stopped early');
  }
}

async function choosePlan(
  source: ResourceSource,
  link: ResourceLinkContent,
  style: PageStyle,
  known: ResourceTemplateInfo[] | undefined,
  timeoutMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<PagePlan> {
  if (style === 'arguments') return argumentsPlan(link);
  const templates = known ?? (await listTemplates(source, timeoutMs, signal, log));
  const plan = templatePlan(link, templates);
  if (plan) return plan;
  if (style === 'template') {
    throw new VoiceError(
      ErrorCode.BadInput,
      `no resource template with start and end variables fits ${link.uri} (server offers: ${templates.map((t) => t.uriTemplate).join(', ') || 'none'})`,
    );
  }
  return argumentsPlan(link);
}

async function listTemplates(
  source: ResourceSource,
  timeoutMs: number,
  signal: AbortSignal,
  log: Logger,
): Promise<ResourceTemplateInfo[]> {
  try {
    return await runScoped(signal, (s) => source.listResourceTemplates(s), {
      timeoutMs,
      what: 'resources/templates/list',
    });
  } catch (err) {
    if (signal.aborted) throw abortedError(signal);
    // mcp-go servers often have no templates: that only means the arguments style.
    log.debug({ err: describe(err) }, 'resource templates unavailable; using arguments style');
    return [];
  }
}

interface PageReadContext {
  index: number;
  offset: number;
  pageTimeoutMs: number;
  retryDelayMs: number;
  maxTries: number;
  signal: AbortSignal;
  log: Logger;
}

async function readPageWithRetry(
  source: ResourceSource,
  uri: string,
  args: Record<string, unknown> | undefined,
  ctx: PageReadContext,
): Promise<ResourceContents[]> {
  let lastError: unknown;
  let tries = 0;
  for (let attempt = 1; attempt <= ctx.maxTries; attempt++) {
    tries = attempt;
    try {
      return await runScoped(
        ctx.signal,
        // The source gets a little longer than our own timer so that our clearer Timeout error wins.
        (s) =>
          source.readResource(uri, {
            signal: s,
            timeoutMs: ctx.pageTimeoutMs + 1_000,
            ...(args ? { arguments: args } : {}),
          }),
        { timeoutMs: ctx.pageTimeoutMs, what: `resource page ${ctx.index}` },
      );
    } catch (err) {
      if (ctx.signal.aborted) throw abortedError(ctx.signal);
      lastError = err;
      if (!worthRetrying(err) || attempt === ctx.maxTries) break;
      ctx.log.warn(
        { index: ctx.index, offset: ctx.offset, attempt, err: describe(err) },
        'resource page failed; retrying',
      );
      await sleep(ctx.retryDelayMs, ctx.signal);
    }
  }
  const timedOut = lastError instanceof VoiceError && lastError.code === ErrorCode.Timeout;
  throw new VoiceError(
    timedOut ? ErrorCode.Timeout : ErrorCode.ToolFailed,
    `reading ${uri} failed at page ${ctx.index} (byte ${ctx.offset}) after ${tries} ${tries === 1 ? 'try' : 'tries'}: ${describe(lastError)}`,
    { cause: lastError },
  );
}

/**
 * A page that timed out is retried (after `retryDelayMs`), and so is one whose
 * connection dropped (the connection reconnects meanwhile); a JSON-RPC error is the server's
 * definite answer and fails the stream at once, so the user hears why without waiting.
 */
function worthRetrying(err: unknown): boolean {
  if (err instanceof VoiceError) return err.code === ErrorCode.Timeout || err.code === ErrorCode.ProviderUnavailable;
  if (err instanceof McpError)
    return err.code === McpErrorCode.RequestTimeout || err.code === McpErrorCode.ConnectionClosed;
  return false;
}

function abortedError(signal: AbortSignal): VoiceError {
  return new VoiceError(ErrorCode.Aborted, 'aborted', { cause: signal.reason });
}

function clip(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 200 ? `${t.slice(0, 200)}…` : t;
}

function describe(err: unknown): string {
  if (isAbortError(err)) return 'aborted';
  return err instanceof Error ? err.message : String(err);
}

function positiveInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 1)
    throw new VoiceError(ErrorCode.BadInput, `${name} must be a positive number, got ${value}`);
  return Math.floor(value);
}
