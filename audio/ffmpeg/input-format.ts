/**
 * @module What ffmpeg must be told about an input it cannot probe. Compressed and containered
 * audio (mp3, wav, ogg, flac, aac, …) carries its own headers and is left to ffmpeg's probe: a
 * wrong MIME type from an MCP server must not break a file ffmpeg would have recognised. Raw
 * sample streams have no header at all, so their MIME type is the only description there is:
 * - `audio/L16;rate=…;channels=…` (RFC 2586): 16-bit big-endian, rate required (8000 if absent);
 * - `audio/pcm` (and `audio/x-pcm`, `audio/raw`): 16-bit little-endian, as OpenAI-style TTS and
 *   most tools emit it, 24000 Hz mono unless `rate` / `channels` say otherwise;
 * - `audio/basic`, `audio/pcmu`: 8 kHz μ-law; `audio/pcma`: 8 kHz A-law.
 */
import type { TranscodeOptions } from './transcode.ts';

export type FfmpegInput = Pick<TranscodeOptions, 'inputFormat' | 'inputArgs'>;

interface RawFormat {
  format: string;
  rate: number;
}

const RAW: Record<string, RawFormat> = {
  'audio/l16': { format: 's16be', rate: 8000 },
  'audio/pcm': { format: 's16le', rate: 24000 },
  'audio/x-pcm': { format: 's16le', rate: 24000 },
  'audio/raw': { format: 's16le', rate: 24000 },
  'audio/basic': { format: 'mulaw', rate: 8000 },
  'audio/pcmu': { format: 'mulaw', rate: 8000 },
  'audio/pcma': { format: 'alaw', rate: 8000 },
};

/** Bounds on what a MIME parameter may ask ffmpeg for. */
const MAX_RATE = 384_000;
const MAX_CHANNELS = 8;

/** The ffmpeg input options for `mimeType`; empty for anything ffmpeg can probe itself. */
export function ffmpegInputFor(mimeType: string | undefined): FfmpegInput {
  if (!mimeType) return {};
  const [type = '', ...params] = mimeType.split(';').map((p) => p.trim());
  const raw = RAW[type.toLowerCase()];
  if (!raw) return {};
  const param = (name: string): number | undefined => {
    const p = params.find((x) => x.toLowerCase().startsWith(`${name}=`));
    const n = p === undefined ? NaN : Number(p.slice(name.length + 1).replace(/"/g, ''));
    return Number.isInteger(n) && n > 0 ? n : undefined;
  };
  const rate = Math.min(param('rate') ?? raw.rate, MAX_RATE);
  const channels = Math.min(param('channels') ?? 1, MAX_CHANNELS);
  return { inputFormat: raw.format, inputArgs: ['-ar', String(rate), '-ac', String(channels)] };
}
