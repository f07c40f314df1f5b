/**
 * @module Built-in tool: play music without any MCP server, from a configured folder or an
 * http(s) URL on an allowlisted host (online playback is what xiaozhi users ask for most). The
 * result carries a MediaStream that the dispatcher plays through the same ffmpeg → Opus → pacer
 * path as MCP audio; an abort stops the download or file read at once. URLs are checked by host,
 * port and resolved address (address-guard.ts), redirects included.
 */
import { createReadStream } from 'node:fs';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { get as httpsGet } from 'node:https';
import { isIP } from 'node:net';
import { readdir } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { LocalTool } from '../contract/local-tool.ts';
import { guardedLookup, resolveChecked, type AddressGuardOptions } from './address-guard.ts';
import { errorResult, type MediaStream, type ToolResult } from '../contract/tool-source.ts';

export interface PlayMusicToolOptions {
  /** Folder searched for audio files; empty: none. */
  folder: string;
  /**
   * Hosts URLs may come from (exact, or `*.example.com` for subdomains); empty: no URLs. Only ports
   * 80/443 unless an entry names its port (`music.lan:8080`).
   */
  allowedHosts: readonly string[];
  /** Also connect when a host resolves to a loopback, private or link-local address (a LAN music server). */
  allowPrivateAddresses?: boolean;
  /** Tests only: the resolver the address check uses. */
  resolve?: AddressGuardOptions['resolve'];
  name?: string;
}

const AUDIO_EXT = new Set(['.mp3', '.wav', '.ogg', '.opus', '.oga', '.m4a', '.aac', '.flac', '.webm']);
/** Bounds on the folder scan: music folders can be huge and must not stall a turn. */
const MAX_FILES = 5000;
const MAX_DEPTH = 4;
/** Redirects followed for a URL, each one checked against the allowlist. */
const MAX_REDIRECTS = 3;

async function listAudio(dir: string, depth = 0, out: string[] = []): Promise<string[]> {
  if (depth > MAX_DEPTH || out.length >= MAX_FILES) return out;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (out.length >= MAX_FILES) break;
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) await listAudio(p, depth + 1, out);
    else if (e.isFile() && AUDIO_EXT.has(extname(e.name).toLowerCase())) out.push(p);
  }
  return out;
}

function words(s: string): string[] {
  return s
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

/** Best file for the query by words in common with its name; a random one without a query. */
export function pickTrack(files: readonly string[], query: string): string | undefined {
  if (files.length === 0) return undefined;
  const q = words(query);
  if (q.length === 0) return files[Math.floor(Math.random() * files.length)];
  let best: string | undefined;
  let bestScore = 0;
  for (const f of files) {
    const name = basename(f, extname(f)).toLowerCase();
    const score = q.reduce((n, w) => n + (name.includes(w) ? w.length : 0), 0);
    if (score > bestScore) {
      bestScore = score;
      best = f;
    }
  }
  return best;
}

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** Whether `host` on `port` is on the list: an entry without a port allows only the scheme's default port. */
export function hostAllowed(host: string, allowed: readonly string[], port = '', protocol = 'http:'): boolean {
  const h = host.toLowerCase();
  const effective = port || DEFAULT_PORTS[protocol] || '';
  return allowed.some((a) => {
    const m = /^(.*?)(?::(\d+))?$/.exec(a.trim().toLowerCase());
    const name = m?.[1] ?? '';
    const entryPort = m?.[2] ?? DEFAULT_PORTS[protocol] ?? '';
    if (entryPort !== effective) return false;
    return name.startsWith('*.') ? h.endsWith(name.slice(1)) && h.length > name.length - 1 : h === name;
  });
}

/** Why a URL may not be played, or null when it may (its address is checked again at connect time). */
export function urlProblem(raw: string, allowed: readonly string[]): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'it is not a valid URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return `only http and https URLs can be played, not ${u.protocol}`;
  if (u.username || u.password) return 'URLs with credentials are not played';
  if (allowed.length === 0) return 'playing URLs is not enabled on this server (tools.music.allowedHosts is empty)';
  if (!hostAllowed(u.hostname, allowed, u.port, u.protocol)) {
    return u.port
      ? `the host ${u.hostname} on port ${u.port} is not on the allowed list`
      : `the host ${u.hostname} is not on the allowed list`;
  }
  return null;
}

async function* fileBytes(path: string, signal: AbortSignal): AsyncIterable<Uint8Array> {
  const stream = createReadStream(path, { highWaterMark: 64 * 1024, signal });
  for await (const chunk of stream) yield chunk as Buffer;
}

/** One GET whose connection goes only to checked addresses (see address-guard.ts). */
async function getChecked(url: URL, guard: AddressGuardOptions, signal: AbortSignal): Promise<IncomingMessage> {
  const host = url.hostname;
  // An IP literal is connected to without any lookup: check it here.
  if (isIP(host.replace(/^\[|\]$/g, ''))) {
    const r = await resolveChecked(host, guard);
    if (!r.ok) throw new VoiceError(ErrorCode.BadInput, r.reason);
  }
  const get = url.protocol === 'https:' ? httpsGet : httpGet;
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = get(url, { signal, lookup: guardedLookup(guard), headers: { accept: 'audio/*, */*' } }, resolve);
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRNOTALLOWED') reject(new VoiceError(ErrorCode.BadInput, err.message));
      else reject(err);
    });
  });
}

async function* urlBytes(url: string, opts: PlayMusicToolOptions, signal: AbortSignal): AsyncIterable<Uint8Array> {
  const guard: AddressGuardOptions = {
    allowPrivate: opts.allowPrivateAddresses === true,
    ...(opts.resolve ? { resolve: opts.resolve } : {}),
  };
  let current = new URL(url);
  for (let hop = 0; ; hop++) {
    const res = await getChecked(current, guard, signal);
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400) {
      const next = res.headers.location;
      res.resume();
      if (!next || hop >= MAX_REDIRECTS) throw new VoiceError(ErrorCode.ToolFailed, `too many redirects for ${url}`);
      const target = new URL(next, current);
      // Host, port and (at connect time) address are checked again for every hop.
      const problem = urlProblem(target.toString(), opts.allowedHosts);
      if (problem) throw new VoiceError(ErrorCode.BadInput, `redirect refused: ${problem}`);
      current = target;
      continue;
    }
    if (status < 200 || status >= 300) {
      res.resume();
      throw new VoiceError(ErrorCode.ToolFailed, `the music URL answered HTTP ${status}`);
    }
    try {
      for await (const chunk of res) yield chunk as Buffer;
    } finally {
      res.destroy();
    }
    return;
  }
}

export function playMusicTool(opts: PlayMusicToolOptions): LocalTool {
  return {
    name: opts.name ?? 'play_music',
    description:
      'Play music for the user: a song from the local music library matching the query (or a random one without a query), or an http(s) audio URL the user gave. Playback stops when the user interrupts.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Song title, artist or keywords; empty for any song.' },
        url: { type: 'string', description: 'An http(s) link to an audio file, only when the user gave one.' },
      },
    },
    async handler(args): Promise<ToolResult> {
      const url = typeof args.url === 'string' ? args.url.trim() : '';
      const query = typeof args.query === 'string' ? args.query.trim() : '';
      let media: MediaStream;
      if (url) {
        const problem = urlProblem(url, opts.allowedHosts);
        if (problem) return errorResult(`Cannot play that URL: ${problem}.`);
        const label = decodeURIComponent(basename(new URL(url).pathname)) || new URL(url).hostname;
        media = { label, open: (signal) => urlBytes(url, opts, signal) };
      } else {
        if (!opts.folder) return errorResult('No music library is configured on this server (tools.music.folder).');
        const files = await listAudio(opts.folder);
        const track = pickTrack(files, query);
        if (!track)
          return errorResult(query ? `No song matching "${query}" was found.` : 'The music library is empty.');
        media = { label: basename(track, extname(track)), open: (signal) => fileBytes(track, signal) };
      }
      return {
        content: [{ type: 'text', text: `Playing ${media.label}.` }],
        isError: false,
        action: { final: true },
        media,
      };
    },
  };
}
