/**
 * Figures for the fleet simulator: percentiles, and the device's playback model applied to the
 * arrival times of one turn's downlink frames.
 */

/** Nearest-rank percentile (p in 0..100); NaN for an empty list. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))] as number;
}

export interface P50P95 {
  p50: number;
  p95: number;
  n: number;
}

export function p50p95(xs: readonly number[]): P50P95 {
  return { p50: percentile(xs, 50), p95: percentile(xs, 95), n: xs.length };
}

export interface PlaybackStats {
  frames: number;
  /** Intervals between consecutive frames of the turn (frames - 1). */
  intervals: number;
  /** Intervals longer than `lateMs`. */
  lateIntervals: number;
  /** Frames (not the first) that arrived after the device had played everything before them. */
  gaps: number;
  /** Total time the device's playback queue was empty mid-turn, ms. */
  underrunMs: number;
}

/**
 * The device plays frames back to back, `frameMs` each, starting each one as soon as it is there:
 * playEnd = max(playEnd, arrival) + frameMs. A frame that arrives after playEnd (the queue ran dry)
 * is a gap, and the dry time is an underrun. The first frame of the turn is never a gap.
 */
export function playbackStats(arrivals: readonly number[], frameMs = 60, lateMs = 65): PlaybackStats {
  const out: PlaybackStats = {
    frames: arrivals.length,
    intervals: Math.max(0, arrivals.length - 1),
    lateIntervals: 0,
    gaps: 0,
    underrunMs: 0,
  };
  let playEnd = -Infinity;
  let prev = NaN;
  arrivals.forEach((at, i) => {
    if (i > 0) {
      if (at - prev > lateMs) out.lateIntervals++;
      if (at > playEnd) {
        out.gaps++;
        out.underrunMs += at - playEnd;
      }
    }
    playEnd = Math.max(playEnd, at) + frameMs;
    prev = at;
  });
  return out;
}

/** Sums playback stats of several turns. */
export function sumPlayback(list: readonly PlaybackStats[]): PlaybackStats {
  const out: PlaybackStats = { frames: 0, intervals: 0, lateIntervals: 0, gaps: 0, underrunMs: 0 };
  for (const s of list) {
    out.frames += s.frames;
    out.intervals += s.intervals;
    out.lateIntervals += s.lateIntervals;
    out.gaps += s.gaps;
    out.underrunMs += s.underrunMs;
  }
  return out;
}

/** Parses Prometheus text exposition into `name{labels}` → value (labels kept verbatim). */
export function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?)\s+(\S+)/.exec(line);
    if (!m) continue;
    const v = Number(m[2]);
    if (Number.isFinite(v)) out.set(m[1] as string, v);
  }
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));
