/**
 * @module The MCP server itself: tools `musicPlayer` and `set_volume`, and the paged reader
 * template `resource://read_from_http{?url,start,end}`. One `AudioServerContext` is shared by
 * every McpServer instance (HTTP mode builds one per request), so the volume and the body cache
 * outlive a request.
 */
import { realpath } from 'node:fs/promises';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { BodyCache } from './body-cache.ts';
import type { Track } from './catalog.ts';
import { findTrack, loadFolder, mimeTypeFor, parseUrlEntry } from './catalog.ts';
import type { AudioServerConfig } from './config.ts';
import { ReadRefused, readRange } from './range-reader.ts';
import type { RangeReaderDeps } from './range-reader.ts';
import { checkUrl, normalizeHosts } from './url-policy.ts';

/** The base URI a `musicPlayer` link carries (as in the seed); pages are read through the template. */
export const READ_BASE_URI = 'resource://read_from_http';
/** The spec-conformant paged reader: expand it with the track URL and [start, end) byte offsets. */
export const READ_TEMPLATE = `${READ_BASE_URI}{?url,start,end}`;
/** The end-of-stream flag the seed's readers look for, as a decoded blob. */
export const DONE_FLAG = '[DONE]';

export interface AudioServerContext {
  tracks: Track[];
  reader: RangeReaderDeps;
  maxPageBytes: number;
  volume: number;
  /** Where diagnostics go (stderr in main); never stdout, which is the stdio transport. */
  log: (msg: string, fields?: Record<string, unknown>) => void;
}

/** Loads the catalog and builds the shared context. Bad URL entries are logged and skipped. */
export async function createContext(config: AudioServerConfig, log: AudioServerContext['log']): Promise<AudioServerContext> {
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
    config.allowHosts.length > 0 ? config.allowHosts : tracks.filter((t) => !t.url.startsWith('file:')).map((t) => new URL(t.url).host),
  );
  const cacheBytes = config.cacheBytes;
  return {
    tracks,
    reader: { policy: { allowHosts, ...(musicRoot !== undefined ? { musicRoot } : {}) }, cache: new BodyCache(cacheBytes), cacheBytes, fetchTimeoutMs: config.fetchTimeoutMs },
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
      inputSchema: { query: z.string().max(200).describe('Song title or words from it; "music" plays the first track') },
    },
    async ({ query }) => {
      const track = findTrack(ctx.tracks, query);
      if (!track) {
        const titles = ctx.tracks.slice(0, 10).map((t) => t.title).join(', ');
        return { isError: true, content: [{ type: 'text', text: `No track matches "${query}". Available: ${titles || 'none'}.` }] };
      }
      const verdict = await checkUrl(track.url, ctx.reader.policy);
      if (!verdict.ok) return { isError: true, content: [{ type: 'text', text: `Cannot play "${track.title}": ${verdict.reason}.` }] };
      ctx.log('track chosen', { query, title: track.title });
      return {
        content: [
          {
            type: 'resource_link',
            uri: READ_BASE_URI,
            name: track.title,
            title: track.title,
            // The seed's readers take the real URL from `description` and send it back as `url`.
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

  mcp.registerResource(
    'read_from_http',
    new ResourceTemplate(READ_TEMPLATE, { list: undefined }),
    {
      description: 'Bytes [start, end) of a track URL, base64. A blob of [DONE] means the end was passed.',
      mimeType: 'application/octet-stream',
    },
    async (uri, variables, extra) => {
      const url = decodeVar(variables.url, 'url');
      const start = intVar(variables.start, 'start');
      const end = intVar(variables.end, 'end');
      if (end <= start) throw new McpError(ErrorCode.InvalidParams, `end (${end}) must be greater than start (${start})`);
      if (end - start > ctx.maxPageBytes) {
        throw new McpError(ErrorCode.InvalidParams, `page of ${end - start} bytes is larger than the ${ctx.maxPageBytes}-byte limit`);
      }
      let result;
      try {
        result = await readRange(url, start, end, ctx.reader, extra.signal);
      } catch (err) {
        if (err instanceof ReadRefused) {
          ctx.log('read refused', { url, start, reason: err.message });
          throw new McpError(ErrorCode.InvalidParams, `read refused: ${err.message}`);
        }
        throw err;
      }
      const mimeType = mimeTypeFor(url);
      const blob = result.done ? Buffer.from(DONE_FLAG).toString('base64') : result.bytes.toString('base64');
      return { contents: [{ uri: uri.href, mimeType, blob }] };
    },
  );
  return mcp;
}

function decodeVar(v: string | string[] | undefined, name: string): string {
  const raw = Array.isArray(v) ? v[0] : v;
  if (raw === undefined || raw === '') throw new McpError(ErrorCode.InvalidParams, `missing ${name}`);
  try {
    // The SDK hands template variables over still percent-encoded.
    return decodeURIComponent(raw);
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `${name} is not valid percent-encoding`);
  }
}

function intVar(v: string | string[] | undefined, name: string): number {
  const s = decodeVar(v, name);
  if (!/^\d{1,15}$/.test(s)) throw new McpError(ErrorCode.InvalidParams, `${name} must be a non-negative integer, got ${s.slice(0, 20)}`);
  return Number(s);
}
