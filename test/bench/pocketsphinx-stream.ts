/**
 * What streaming the embedded recogniser costs and gives: the `continuous` engine (one
 * pocketsphinx_continuous process, each utterance decoded once it has ended) against the `stream`
 * engine (the helper, each utterance decoded while it is spoken by a decoder forked for it), with
 * N devices speaking at once.
 *
 *   node --import tsx test/bench/pocketsphinx-stream.ts [--n 1,10,50] [--max-streams 1,2,8] [--runs 1]
 *     [--engines continuous,stream] [--continuous-nice 0]
 *
 * Each device speaks a flite sentence (three of them, in turn) in 60 ms frames at real-time pace,
 * all starting together; its utterance ends when its audio does (0.3 s of quiet before the speech,
 * 0.5 s after). `continuous`: the whole utterance is transcribed then; `stream`: it was pushed as
 * it was spoken and is finished then. Printed per engine and N:
 *   final after end   from the utterance's end to its transcript, p50 / max (ms)
 *   words right       how many transcripts are the sentence, word for word
 *   CPU               the recogniser's processes' CPU time (theirs and their reaped children's)
 *                     per second of audio
 *   peak memory       the largest sum of their proportional set sizes (PSS), sampled every 100 ms
 */
import { readdirSync, readFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parseArgs } from 'node:util';
import type { Asr, AsrStream } from '../../audio/asr/asr.ts';
import { silentLogger } from '../../core/logger.ts';
import { createAsr } from '../../providers/index.ts';
import { flitePcm, makeTempDir, noise } from '../fixtures/audio/make-audio.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1,10,50' },
    'max-streams': { type: 'string', default: '8' },
    runs: { type: 'string', default: '1' },
    engines: { type: 'string', default: 'continuous,stream' },
    'continuous-nice': { type: 'string', default: '0' },
  },
});
const COUNTS = values.n.split(',').map(Number);
const MAX_STREAMS = values['max-streams'].split(',').map(Number);
const RUNS = Number(values.runs);
const ENGINES = values.engines.split(',') as Array<'continuous' | 'stream'>;
/** pocketsphinx_continuous runs at nice 0, the stream decoders at 10: on a machine shared with other work, 10 makes them equal. */
const CONTINUOUS_NICE = Number(values['continuous-nice']);
const RATE = 16000;
const FRAME = 960;
const TICK = 100; // /proc/<pid>/stat counts in clock ticks of 10 ms

const PHRASES = ['what is the weather today', 'turn the volume up to fifty percent', 'play some music'];
const tmp = makeTempDir();
const utterances = PHRASES.map((p, i) => {
  const speech = flitePcm(p, tmp.dir);
  const lead = noise(300, RATE, 24, 11 + i);
  const trail = noise(500, RATE, 24, 21 + i);
  const pcm = new Int16Array(lead.length + speech.length + trail.length);
  pcm.set(lead);
  pcm.set(speech, lead.length);
  pcm.set(trail, lead.length + speech.length);
  return { text: p, pcm };
});
tmp.cleanup();

/** This process's descendants whose program is pocketsphinx (the helper, its decoders, or pocketsphinx_continuous). */
function recognisers(): number[] {
  const ppid = new Map<number, number>();
  const name = new Map<number, string>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      ppid.set(Number(d), Number(stat.slice(close + 2).split(' ')[1]));
      name.set(Number(d), stat.slice(stat.indexOf('(') + 1, close));
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const isOurs = (pid: number): boolean => {
    for (let p = ppid.get(pid); p !== undefined && p > 1; p = ppid.get(p)) if (p === process.pid) return true;
    return false;
  };
  for (const [pid, n] of name) if (n.startsWith('pocketsphinx') && isOurs(pid)) out.push(pid);
  return out;
}

/** CPU seconds of a process: its own, and with `reaped` its reaped children's too. */
function cpuSeconds(pid: number, reaped = true): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0)) / TICK;
  } catch {
    return 0;
  }
}

function pssMb(pid: number): number {
  try {
    const kb = /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
    return Number(kb ?? 0) / 1024;
  } catch {
    return 0;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};

async function warm(asr: Asr): Promise<void> {
  await asr.transcribe(utterances[0]?.pcm as Int16Array, { signal: new AbortController().signal, sampleRate: RATE });
}

async function run(engine: 'continuous' | 'stream', n: number, maxStreams: number): Promise<string> {
  const asr = await createAsr(
    // No timeout: the bench measures how long finals take, however long.
    { provider: 'pocketsphinx', engine, maxStreams, finalTimeoutMs: 600_000, timeoutMs: 600_000 },
    silentLogger,
  );
  await warm(asr);
  await sleep(300);
  // The helper or pocketsphinx_continuous: the warm-up's decoder has exited by now.
  const [root] = recognisers();
  if (root === undefined || recognisers().length !== 1) throw new Error('expected one recogniser process');
  if (engine === 'continuous') setPriority(root, CONTINUOUS_NICE);
  const cpu0 = cpuSeconds(root);
  let peak = 0;
  // Cores in use by the recognisers, over 500 ms windows: the live decoders' CPU plus what the
  // helper has reaped. (A decoder that exits between two samples moves its time from one count to
  // the other; over a window that is the same total.)
  let peakCores = 0;
  const busy = (): number => {
    const procs = recognisers();
    return procs.reduce((sum, pid) => sum + cpuSeconds(pid, false), 0) + cpuSeconds(root) - cpuSeconds(root, false);
  };
  const windows: Array<[number, number]> = [];
  const sampler = setInterval(() => {
    const total = recognisers().reduce((sum, pid) => sum + pssMb(pid), 0);
    peak = Math.max(peak, total);
    windows.push([performance.now(), busy()]);
    const [t0, c0] = windows[0] as [number, number];
    const [t1, c1] = windows.at(-1) as [number, number];
    if (t1 - t0 >= 500) {
      peakCores = Math.max(peakCores, (c1 - c0) / ((t1 - t0) / 1000));
      windows.shift();
    }
  }, 100);

  const devices = Array.from({ length: n }, (_, i) => utterances[i % utterances.length] as (typeof utterances)[0]);
  const latencies: number[] = [];
  let right = 0;
  const never = new AbortController().signal;
  const streams: Array<AsrStream | undefined> = devices.map(() =>
    engine === 'stream' && asr.openStream
      ? asr.openStream({ sampleRate: RATE, signal: never, log: silentLogger, onPartial: () => {} })
      : undefined,
  );
  const results: Array<Promise<void>> = [];
  const t0 = performance.now();
  const longest = Math.max(...devices.map((d) => d.pcm.length));
  for (let off = 0, tick = 0; off < longest; off += FRAME, tick++) {
    // Real-time pace on the wall clock, not on the timer's drift.
    const due = t0 + (tick * FRAME * 1000) / RATE;
    if (due > performance.now()) await sleep(due - performance.now());
    for (const [i, d] of devices.entries()) {
      if (off >= d.pcm.length) continue;
      streams[i]?.push(d.pcm.subarray(off, off + FRAME));
      if (off + FRAME < d.pcm.length) continue;
      const end = performance.now();
      const text = streams[i]?.finish() ?? asr.transcribe(d.pcm, { signal: never, sampleRate: RATE });
      results.push(
        text.then((t) => {
          latencies.push(performance.now() - end);
          if (t === d.text) right++;
        }),
      );
    }
  }
  await Promise.all(results);
  await sleep(300); // the decoders exit and are reaped: their CPU moves into the helper's count
  clearInterval(sampler);
  const cpu = cpuSeconds(root) - cpu0;
  const audioS = devices.reduce((s, d) => s + d.pcm.length / RATE, 0);
  await asr.close();
  return [
    (engine === 'stream' ? `stream/${maxStreams}` : engine).padEnd(10),
    String(n).padStart(3),
    `${pct(latencies, 50).toFixed(0).padStart(6)} / ${Math.max(...latencies)
      .toFixed(0)
      .padStart(6)} ms`,
    `${right}/${n}`.padStart(6),
    `${((cpu / audioS) * 1000).toFixed(0).padStart(4)} ms CPU per s of audio, peak ${peakCores.toFixed(2)} cores`,
    `${peak.toFixed(0).padStart(5)} MB peak PSS`,
  ].join('  ');
}

console.log(`pocketsphinx: continuous vs stream/maxStreams, ${PHRASES.length} flite sentences in turn`);
console.log('engine        N  final after end p50 / max   right   CPU                                      memory');
for (const n of COUNTS)
  for (let r = 0; r < RUNS; r++)
    for (const engine of ENGINES)
      for (const max of engine === 'stream' ? MAX_STREAMS : [1]) console.log(await run(engine, n, max));
