/**
 * @module The track catalog: audio files of a local folder (as file:// URLs) plus a list of
 * remote URLs. `find` scores tracks by how many query words their title contains.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface Track {
  title: string;
  /** http(s):// for remote tracks, file:// for the local folder's. */
  url: string;
  mimeType: string;
  /** Known for local files, in bytes. */
  size?: number;
}

const MIME_BY_EXT: Record<string, string> = {
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.ogg': 'audio/ogg',
  '.opus': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.flac': 'audio/flac',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.webm': 'audio/webm',
};

/** The audio mime type for a path or URL by its extension; octet-stream when unknown. */
export function mimeTypeFor(pathOrUrl: string): string {
  let path = pathOrUrl;
  try {
    path = new URL(pathOrUrl).pathname;
  } catch {
    // a plain path
  }
  return MIME_BY_EXT[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

/** Lists the folder's audio files (not recursive; hidden files skipped). */
export async function loadFolder(dir: string): Promise<Track[]> {
  const root = await realpath(dir);
  const names = (await readdir(root))
    .filter((n) => !n.startsWith('.') && MIME_BY_EXT[extname(n).toLowerCase()] !== undefined)
    .sort();
  const tracks: Track[] = [];
  for (const name of names) {
    const path = join(root, name);
    const info = await stat(path);
    if (!info.isFile()) continue;
    tracks.push({
      title: basename(name, extname(name)),
      url: pathToFileURL(path).href,
      mimeType: mimeTypeFor(name),
      size: info.size,
    });
  }
  return tracks;
}

/** Parses `Title | URL` or a bare URL (its file name becomes the title). Returns undefined for a bad URL. */
export function parseUrlEntry(entry: string): Track | undefined {
  const bar = entry.lastIndexOf('|');
  const rawUrl = (bar >= 0 ? entry.slice(bar + 1) : entry).trim();
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return undefined;
  }
  const fromName = decodeSafe(basename(url.pathname, extname(url.pathname)));
  const title = bar >= 0 ? entry.slice(0, bar).trim() || fromName : fromName;
  return { title, url: url.href, mimeType: mimeTypeFor(url.href) };
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * The best match for `query`: most query words found in the title (case-insensitive), ties
 * broken by catalog order. An empty query or words like "music" match the first track.
 */
export function findTrack(tracks: readonly Track[], query: string): Track | undefined {
  const words = query
    .toLowerCase()
    .split(/[\s,，。.!?！？_-]+/u)
    .filter((w) => w !== '');
  let best: Track | undefined;
  let bestScore = 0;
  for (const track of tracks) {
    const title = track.title.toLowerCase();
    const whole = query.trim() !== '' && title.includes(query.trim().toLowerCase()) ? 100 : 0;
    const score = whole + words.filter((w) => title.includes(w)).length;
    if (score > bestScore) {
      best = track;
      bestScore = score;
    }
  }
  if (best) return best;
  const generic = words.length === 0 || words.every((w) => GENERIC_WORDS.has(w));
  return generic ? tracks[0] : undefined;
}

/** Queries that ask for "some music" rather than a title. */
const GENERIC_WORDS = new Set([
  'music',
  'song',
  'songs',
  'some',
  'any',
  'play',
  'a',
  'track',
  '音乐',
  '歌',
  '一首歌',
  '放歌',
  '随便',
]);
