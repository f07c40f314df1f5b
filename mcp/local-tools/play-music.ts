/**
 * @module Built-in tool: play music without any MCP server, from a configured folder or an
 * http(s) URL on an allowlisted host (online playback is what xiaozhi users ask for most). The
 * result carries a MediaStream that the dispatcher plays through the same ffmpeg → Opus → pacer
 * path as MCP audio; an abort stops the download or file read at once.
 */
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { LocalTool } from '../local-tools.ts';
import { errorResult, type MediaStream, type ToolResult } from '../tool-source.ts';

export interface PlayMusicToolOptions {
  /** Folder searched for audio files; empty: none. */
  folder: string;
  /** Hosts URLs may come from (exact, or `*.example.com` for subdomains); empty: no URLs. */
  allowedHosts: readonly string[];
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
  return s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0);
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

export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const h = host.toLowerCase();
  return allowed.some((a) => {
    const p = a.toLowerCase();
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) && h.length > p.length - 1 : h === p;
  });
}

/** Why a URL may not be played, or null when it may. */
export function urlProblem(raw: string, allowed: readonly string[]): string | null {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'it is not a valid URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `only http and https URLs can be played, not ${u.protocol}`;
  if (u.username || u.password) return 'URLs with credentials are not played';
  if (allowed.length === 0) return 'playing URLs is not enabled on this server (tools.music.allowedHosts is empty)';
  if (!hostAllowed(u.hostname, allowed)) return `the host ${u.hostname} is not on the allowed list`;
  return null;
}

async function* fileBytes(path: string, signal: AbortSignal): AsyncIterable<Uint8Array> {
  const stream = createReadStream(path, { highWaterMark: 64 * 1024, signal });
  for await (const chunk of stream) yield chunk as Buffer;
}

async function* urlBytes(url: string, allowed: readonly string[], signal: AbortSignal): AsyncIterable<Uint8Array> {
  let current = url;
  for (let hop = 0; ; hop++) {
    const res = await fetch(current, { signal, redirect: 'manual' });
    if (res.status >= 300 && res.status < 400) {
      const next = res.headers.get('location');
      await res.body?.cancel();
      if (!next || hop >= MAX_REDIRECTS) throw new VoiceError(ErrorCode.ToolFailed, `too many redirects for ${url}`);
      const target = new URL(next, current).toString();
      const problem = urlProblem(target, allowed);
      if (problem) throw new VoiceError(ErrorCode.BadInput, `redirect refused: ${problem}`);
      current = target;
      continue;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new VoiceError(ErrorCode.ToolFailed, `the music URL answered HTTP ${res.status}`);
    }
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
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
        media = { label, open: (signal) => urlBytes(url, opts.allowedHosts, signal) };
      } else {
        if (!opts.folder) return errorResult('No music library is configured on this server (tools.music.folder).');
        const files = await listAudio(opts.folder);
        const track = pickTrack(files, query);
        if (!track) return errorResult(query ? `No song matching "${query}" was found.` : 'The music library is empty.');
        media = { label: basename(track, extname(track)), open: (signal) => fileBytes(track, signal) };
      }
      return { content: [{ type: 'text', text: `Playing ${media.label}.` }], isError: false, action: { final: true }, media };
    },
  };
}
