/**
 * @module The MCP server itself: tools `musicPlayer` and `set_volume`, and the paged reader
 * `resource://read_from_http`, read either through the template
 * `resource://read_from_http{?url,start,end}` (MCP's resource templates) or with mcp-go servers'
 * `arguments { url, start, end }` on the base URI (mcp-go / Go xiaozhi server style). One `AudioServerContext` is shared by
 * every McpServer instance (HTTP mode builds one per request), so the volume and the body cache
 * outlive a request.
 */
import { realpath } from 'node:fs/promises';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import {
  ErrorCode,
  McpError,
  ReadResourceRequestParamsSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { BodyCache } from './body-cache.ts';
import type { Track } from './catalog.ts';
import { findTrack, loadFolder, mimeTypeFor, parseUrlEntry } from './catalog.ts';
import type { AudioServerConfig } from './config.ts';
import { ReadRefused, readRange } from './range-reader.ts';
import type { RangeReaderDeps } from './range-reader.ts';
import { checkUrl, normalizeHosts } from './url-policy.ts';

/** The base URI a `musicPlayer` link carries (as mcp-go servers send it); pages are read through the template. */
export const READ_BASE_URI = 'resource://read_from_http';
/** The spec-conformant paged reader: expand it with the track URL and [start, end) byte offsets. */
export const READ_TEMPLATE = `${READ_BASE_URI}{?url,start,end}`;
/** The end-of-stream flag mcp-go style readers look for, as a decoded blob. */
export const DONE_FLAG = '[DONE]';

export interface AudioServerContext {
  tracks: Track[];
  reader: RangeReaderDeps;
  maxPageBytes: number;
  volume: number;
  /** Where diagnostics go (stderr in main); never stdout, which is the stdio transport. */
  log: (msg: string, fields?: Record<string, unknown>) => void;
}

function normalizedHref(raw: string): string | undefined {
  try {
    return new URL(raw).href;
  } catch {
    return undefined;
  }
}

/** Whether `url` names one of the catalog's tracks (compared as normalised URLs). */
function isCatalogUrl(tracks: readonly Track[], url: string): boolean {
  const href = normalizedHref(url);
  return href !== undefined && tracks.some((t) => normalizedHref(t.url) === href);
}

/** Loads the catalog and builds the shared context. Bad URL entries are logged and skipped. */
export async function createContext(
  config: AudioServerConfig,
  log: AudioServerContext['log'],
): Promise<AudioServerContext> {
  const tracks: Track[] = [];
  let musicRoot: string | undefined;
  if (config.musicDir !== undefined) {
    tracks.push(...(await loadFolder(config.musicDir)));
    musicRoot = await realpath(config.musicDir);
  }
  for (const entry of config.urls) {
    const track = parseUrlEntry(entry);
    if (track) tracks.push(track);
    else log('skipping catalog entry: not a URL', { entry });
  }
  const allowHosts = normalizeHosts(
    config.allowHosts.length > 0
      ? config.allowHosts
      : tracks.filter((t) => !t.url.startsWith('file:')).map((t) => new URL(t.url).host),
  );
  const cacheBytes = config.cacheBytes;
  return {
    tracks,
    reader: {
      policy: { allowHosts, ...(musicRoot !== undefined ? { musicRoot } : {}) },
      cache: new BodyCache(cacheBytes),
      cacheBytes,
      fetchTimeoutMs: config.fetchTimeoutMs,
    },
    maxPageBytes: config.maxPageBytes,
    volume: 50,
    log,
  };
}

/** Builds an McpServer over the shared context; connect it to any transport. */
export function createAudioServer(ctx: AudioServerContext): McpServer {
  const mcp = new McpServer(
    { name: 'mcp-audio-server', version: '0.1.0' },
    {
      capabilities: { resources: {} },
      instructions: `musicPlayer returns a resource_link; read it in pages through ${READ_TEMPLATE} (end exclusive) until a short page or a blob of ${DONE_FLAG}.`,
    },
  );

  mcp.registerTool(
    'musicPlayer',
    {
      description: 'Find a song in the music catalog by title or words of it and play it on the speaker.',
      inputSchema: {
        query: z.string().max(200).describe('Song title or words from it; "music" plays the first track'),
      },
    },
    async ({ query }) => {
      const track = findTrack(ctx.tracks, query);
      if (!track) {
        const titles = ctx.tracks
          .slice(0, 10)
          .map((t) => t.title)
          .join(', ');
        return {
          isError: true,
          content: [{ type: 'text', text: `No track matches "${query}". Available: ${titles || 'none'}.` }],
        };
      }
      const verdict = await checkUrl(track.url, ctx.reader.policy);
      if (!verdict.ok)
        return { isError: true, content: [{ type: 'text', text: `Cannot play "${track.title}": ${verdict.reason}.` }] };
      ctx.log('track chosen', { query, title: track.title });
      return {
        content: [
          {
            type: 'resource_link',
            uri: READ_BASE_URI,
            name: track.title,
            title: track.title,
            // mcp-go style readers take the real URL from `description` and send it back as `url`.
            description: track.url,
            mimeType: track.mimeType,
            ...(track.size !== undefined ? { size: track.size } : {}),
          },
        ],
      };
    },
  );

  mcp.registerTool(
    'set_volume',
    {
      description: 'Set the speaker volume, 1 to 100.',
      inputSchema: { volume: z.number().int().min(1).max(100).describe('Volume percent, 1..100') },
    },
    ({ volume }) => {
      ctx.volume = volume;
      return { content: [{ type: 'text', text: `Volume set to ${volume}.` }] };
    },
  );

  const readPage = async (
    uri: string,
    vars: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ReadResourceResult> => {
    const url = decodeVar(vars.url, 'url');
    const start = intVar(vars.start, 'start');
    const end = intVar(vars.end, 'end');
    if (end <= start) throw new McpError(ErrorCode.InvalidParams, `end (${end}) must be greater than start (${start})`);
    if (end - start > ctx.maxPageBytes) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `page of ${end - start} bytes is larger than the ${ctx.maxPageBytes}-byte limit`,
      );
    }
    // Only tracks of the catalog are read: a client must not make this server fetch other URLs
    // (SSRF) or read other files of the music folder.
    if (!isCatalogUrl(ctx.tracks, url)) {
      ctx.log('read refused', { url, start, reason: 'not a catalog track' });
      throw new McpError(ErrorCode.InvalidParams, "read refused: not a track of this server's catalog");
    }
    let result;
    try {
      result = await readRange(url, start, end, ctx.reader, signal);
    } catch (err) {
      if (err instanceof ReadRefused) {
        ctx.log('read refused', { url, start, reason: err.message });
        throw new McpError(ErrorCode.InvalidParams, `read refused: ${err.message}`);
      }
      throw err;
    }
    const mimeType = mimeTypeFor(url);
    const blob = result.done ? Buffer.from(DONE_FLAG).toString('base64') : result.bytes.toString('base64');
    return { contents: [{ uri, mimeType, blob }] };
  };

  // Registered so that resources/templates/list announces the template to spec-style clients.
  mcp.registerResource(
    'read_from_http',
    new ResourceTemplate(READ_TEMPLATE, { list: undefined }),
    {
      description: 'Bytes [start, end) of a track URL, base64. A blob of [DONE] means the end was passed.',
      mimeType: 'application/octet-stream',
    },
    (uri, variables, extra) => readPage(uri.href, variables, extra.signal),
  );

  // The SDK's own resources/read handler strips unknown params, so the mcp-go style (the Go
  // xiaozhi server, mcp-go clients: `uri` = the base URI plus `arguments { url, start, end }`)
  // would never reach the template above. This handler reads both styles.
  const template = new UriTemplate(READ_TEMPLATE);
  mcp.server.setRequestHandler(SeedOrTemplateReadSchema, (req, extra) => {
    const { uri } = req.params;
    const args = req.params.arguments;
    if (args !== undefined && (uri === READ_BASE_URI || uri.startsWith(`${READ_BASE_URI}?`))) {
      // Values may come in the URI's query (`?url=…`) and in `arguments`; arguments win.
      const fromQuery = template.match(uri) ?? {};
      return readPage(uri, { ...fromQuery, ...stringify(args) }, extra.signal);
    }
    const vars = uri.startsWith(READ_BASE_URI) ? template.match(uri) : null;
    if (!vars) throw new McpError(ErrorCode.InvalidParams, `Resource ${uri} not found`);
    return readPage(uri, vars, extra.signal);
  });
  return mcp;
}

/** resources/read with mcp-go's non-standard `arguments` kept (the SDK's schema drops it). */
const SeedOrTemplateReadSchema = ReadResourceRequestSchema.extend({
  params: ReadResourceRequestParamsSchema.extend({ arguments: z.record(z.string(), z.unknown()).optional() }),
});

/**
 * The arguments as the strings a template match yields: numbers become digits, and strings are
 * percent-encoded so that `decodeVar` treats both styles alike.
 */
function stringify(args: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(args)) {
    if (typeof v === 'number' && Number.isFinite(v)) out[k] = String(v);
    else if (typeof v === 'string') out[k] = encodeURIComponent(v);
  }
  return out;
}

function decodeVar(v: unknown, name: string): string {
  const first: unknown = Array.isArray(v) ? v[0] : v;
  const raw = typeof first === 'string' ? first : undefined;
  if (raw === undefined || raw === '') throw new McpError(ErrorCode.InvalidParams, `missing ${name}`);
  try {
    // The SDK hands template variables over still percent-encoded.
    return decodeURIComponent(raw);
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `${name} is not valid percent-encoding`);
  }
}

function intVar(v: unknown, name: string): number {
  const s = decodeVar(v, name);
  if (!/^\d{1,15}$/.test(s))
    throw new McpError(ErrorCode.InvalidParams, `${name} must be a non-negative integer, got ${s.slice(0, 20)}`);
  return Number(s);
}
