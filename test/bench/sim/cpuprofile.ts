/**
 * Reads a V8 `.cpuprofile` (node --cpu-prof; one file per thread, worker threads included) and
 * says where the thread's time went: the functions with the most self time, and each sample
 * charged to one part of the server, the deepest frame of its stack that belongs to a known part
 * (so a native better-sqlite3 call made through kysely from store code counts as SQLite, and
 * pino's JSON under a store call as logging). Used to profile fleet bursts (BENCHMARKS.md).
 */
import { z } from 'zod';

const callFrame = z.looseObject({ functionName: z.string(), url: z.string(), lineNumber: z.number() });
const profileSchema = z.looseObject({
  nodes: z.array(z.looseObject({ id: z.number(), callFrame, children: z.array(z.number()).optional() })),
  startTime: z.number(),
  endTime: z.number(),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});

type Frame = z.infer<typeof callFrame>;

/** The parts a sample can be charged to, in the order they are tried on each frame. */
export const PARTS: ReadonlyArray<{ part: string; test: (f: Frame) => boolean }> = [
  {
    part: 'SQLite (better-sqlite3 and its kysely driver)',
    test: (f) => /node_modules\/better-sqlite3\/|node_modules\/kysely\/.*sqlite/i.test(f.url),
  },
  { part: 'kysely (query building, compiling)', test: (f) => f.url.includes('node_modules/kysely/') },
  { part: 'change feed (polling)', test: (f) => /\/store\/(change-feed|sqlite-feed|postgres-feed)\.ts/.test(f.url) },
  { part: 'store (our code)', test: (f) => /\/store\/[^/]+\.ts/.test(f.url) },
  { part: 'redaction', test: (f) => /redact/i.test(f.url) || /redact/i.test(f.functionName) },
  {
    part: 'logging (pino)',
    test: (f) => /node_modules\/(pino|sonic-boom|thread-stream|@pinojs)|\/server\/logger\.ts/.test(f.url),
  },
  {
    part: 'turn assembly (agent, memory, tools)',
    test: (f) =>
      /\/server\/(agents|memory)\/|\/voice\/conversation\/(turn-profile|session-memory)\.ts|\/llm\//.test(f.url),
  },
  { part: 'push and reminders', test: (f) => /\/server\/(push|reminders)\//.test(f.url) },
  { part: 'MCP', test: (f) => /\/mcp\/|\/server\/mcp-endpoint\/|node_modules\/@modelcontextprotocol\//.test(f.url) },
  {
    part: 'HTTP, WebSocket, MQTT',
    test: (f) =>
      /node_modules\/(ws|fastify|@fastify|find-my-way|light-my-request|aedes|mqtt-packet)\/|\/server\/(http|mqtt)\//.test(
        f.url,
      ),
  },
  {
    part: 'media (Opus, VAD, TTS, resampling)',
    test: (f) =>
      /\/(audio|providers)\/|node_modules\/(opusscript|@discordjs|onnxruntime|@jjhbw|@echogarden)/.test(f.url),
  },
  { part: 'voice session and turn', test: (f) => /\/voice\//.test(f.url) },
  { part: 'metrics', test: (f) => /node_modules\/prom-client\/|\/server\/metrics/.test(f.url) },
  { part: 'server (other)', test: (f) => /\/(server|core|protocol)\//.test(f.url) },
  { part: 'tsx loader', test: (f) => /node_modules\/(tsx|esbuild)\//.test(f.url) },
];

const SPECIAL: Record<string, string> = {
  '(idle)': 'idle',
  '(garbage collector)': 'garbage collector',
  '(program)': 'V8/native, unattributed (program)',
};

export interface FunctionTime {
  name: string;
  /** file:line, the path from the repository or package folder on. */
  where: string;
  selfMs: number;
}

export interface ProfileSummary {
  wallMs: number;
  /** Sampled time not idle. */
  busyMs: number;
  idleMs: number;
  /** Part → ms, busy time only (idle excluded), largest first. */
  parts: Array<{ part: string; ms: number }>;
  /** Functions by self time, busy only, largest first. */
  functions: FunctionTime[];
  /**
   * The longest stretches without an idle sample (the thread never got back to waiting for
   * events: for the main thread, the event loop stalled this long), longest first, with the parts
   * they were spent in. At most STALLS_KEPT, each at least STALL_MIN_MS.
   */
  stalls: Stall[];
}

export interface Stall {
  /** From the start of its profile, ms. */
  atMs: number;
  ms: number;
  parts: Array<{ part: string; ms: number }>;
}

/** Busy stretches shorter than this are not stalls worth listing (the loop's 10 ms resolution, and more). */
export const STALL_MIN_MS = 50;
const STALLS_KEPT = 10;

/** The path from the package (node_modules/x/…) or the repository's top folder on; `node:` and native as they are. */
export function shortUrl(url: string): string {
  if (url === '') return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const m = /\/((?:core|protocol|audio|mcp|llm|providers|voice|store|server|web|test|scripts)\/.*)$/.exec(url);
  return m ? (m[1] as string) : url.replace(/^file:\/\//, '');
}

/** A time window of the profiles, ms from `originUs` (a profile's startTime: all threads of a process share the clock). */
export interface ProfileWindow {
  originUs: number;
  fromMs: number;
  toMs: number;
}

/** The earliest startTime of the profiles (µs), for a window common to all threads. */
export function earliestStart(texts: readonly string[]): number {
  return Math.min(...texts.map((t) => profileSchema.parse(JSON.parse(t)).startTime));
}

/**
 * Summarizes one or more profiles (e.g. all media workers' together), optionally only the samples
 * within `window`; throws a readable error on a file that is not one.
 */
export function summarize(texts: readonly string[], window?: ProfileWindow): ProfileSummary {
  const parts = new Map<string, number>();
  const fns = new Map<string, FunctionTime>();
  let wallMs = 0;
  let idleMs = 0;
  let busyMs = 0;
  const stalls: Stall[] = [];
  for (const text of texts) {
    const r = profileSchema.safeParse(JSON.parse(text));
    if (!r.success) throw new Error(`not a .cpuprofile: ${r.error.issues[0]?.message ?? 'unknown'}`);
    const p = r.data;
    const t0 = p.startTime;
    const inWindow = (atMs: number): boolean =>
      !window ||
      (atMs + (t0 - window.originUs) / 1000 >= window.fromMs && atMs + (t0 - window.originUs) / 1000 < window.toMs);
    wallMs += window
      ? Math.max(
          0,
          Math.min(window.toMs, (p.endTime - window.originUs) / 1000) -
            Math.max(window.fromMs, (t0 - window.originUs) / 1000),
        )
      : (p.endTime - t0) / 1000;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    // Each node's part, from itself up to the root: the deepest frame that belongs to a known part.
    const partOf = new Map<number, string>();
    const resolve = (id: number): string => {
      const known = partOf.get(id);
      if (known !== undefined) return known;
      const n = byId.get(id);
      let part = 'other (node internals, unknown)';
      if (n) {
        const special = SPECIAL[n.callFrame.functionName];
        const own = special ?? PARTS.find((x) => x.test(n.callFrame))?.part;
        const up = parent.get(id);
        part = own ?? (up === undefined ? part : resolve(up));
      }
      partOf.set(id, part);
      return part;
    };
    let at = 0;
    let stall: { atMs: number; ms: number; parts: Map<string, number> } | null = null;
    const endStall = (): void => {
      if (stall && stall.ms >= STALL_MIN_MS)
        stalls.push({
          atMs: stall.atMs,
          ms: stall.ms,
          parts: [...stall.parts].map(([part, ms]) => ({ part, ms })).sort((a, b) => b.ms - a.ms),
        });
      stall = null;
    };
    p.samples.forEach((id, i) => {
      at += (p.timeDeltas[i] ?? 0) / 1000;
      // A sample's time is the gap to the next one (the last sample gets the previous gap).
      const ms = (p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0) / 1000;
      const n = byId.get(id);
      if (!n || !inWindow(at)) return;
      if (n.callFrame.functionName === '(idle)') {
        idleMs += ms;
        endStall();
        return;
      }
      busyMs += ms;
      const part = resolve(id);
      parts.set(part, (parts.get(part) ?? 0) + ms);
      stall ??= { atMs: at, ms: 0, parts: new Map() };
      stall.ms += ms;
      stall.parts.set(part, (stall.parts.get(part) ?? 0) + ms);
      const name = n.callFrame.functionName || '(anonymous)';
      const where = n.callFrame.url === '' ? '(native)' : `${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
      const key = `${name} ${where}`;
      const f = fns.get(key) ?? { name, where, selfMs: 0 };
      f.selfMs += ms;
      fns.set(key, f);
    });
    endStall();
  }
  return {
    wallMs,
    busyMs,
    idleMs,
    parts: [...parts].map(([part, ms]) => ({ part, ms })).sort((a, b) => b.ms - a.ms),
    functions: [...fns.values()].sort((a, b) => b.selfMs - a.selfMs),
    stalls: stalls.sort((a, b) => b.ms - a.ms).slice(0, STALLS_KEPT),
  };
}

/** The summary as Markdown: the parts, then the top functions by self time, each with its share of busy time. */
export function summaryMarkdown(title: string, s: ProfileSummary, top = 20): string {
  const pct = (ms: number): string => (s.busyMs > 0 ? ((100 * ms) / s.busyMs).toFixed(1) : 'n/a');
  const lines = [
    `### ${title}`,
    '',
    `${(s.wallMs / 1000).toFixed(1)} s profiled, ${(s.busyMs / 1000).toFixed(1)} s busy (${s.wallMs > 0 ? ((100 * s.busyMs) / s.wallMs).toFixed(0) : 'n/a'} % of the time)`,
    '',
    '| part (deepest frame of the stack) | ms | % of busy |',
    '|---|---:|---:|',
    ...s.parts.map((p) => `| ${p.part} | ${p.ms.toFixed(0)} | ${pct(p.ms)} |`),
    '',
    '| function (self time) | where | ms | % of busy |',
    '|---|---|---:|---:|',
    ...s.functions
      .slice(0, top)
      .map((f) => `| ${f.name.replaceAll('|', '/')} | ${f.where} | ${f.selfMs.toFixed(0)} | ${pct(f.selfMs)} |`),
    '',
    `Longest stretches without an idle sample (at least ${STALL_MIN_MS} ms):`,
    '',
    ...s.stalls.map(
      (x) =>
        `- ${x.ms.toFixed(0)} ms at ${(x.atMs / 1000).toFixed(2)} s: ${x.parts
          .slice(0, 4)
          .map((q) => `${q.part} ${q.ms.toFixed(0)}`)
          .join(', ')}`,
    ),
  ];
  return lines.join('\n');
}
