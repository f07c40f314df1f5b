/**
 * The fleet comparison's figures and table: each run's simulator JSON (`--json`, written by that
 * commit's own simulator, so older fields only) reduced to the columns the comparison prints, and
 * one Markdown table with a row per fleet size and commit whose cells span the runs (min–max).
 */
import { z } from 'zod';

/** The figures of one step of one run that the comparison prints; null: not measured (or NaN, which JSON writes as null). */
export interface StepFigures {
  devices: number;
  turnsDone: number;
  turnsExpected: number;
  /** WebSocket upgrades refused with 503 (capacity or admission) and retried. */
  refusals: number;
  /** Device view: last speech packet → first audio frame (includes the VAD silence window). */
  firstFrameP50: number | null;
  firstFrameP95: number | null;
  /** The server log's firstAudioMs (end-of-speech decision → first frame sent), p95. */
  serverAddedP95: number | null;
  latePct: number | null;
  gapPct: number | null;
  serverCores: number | null;
  peakRssMb: number | null;
  stealPct: number | null;
  loadAvg1: number | null;
  /**
   * In the burst of first turns, the share of all CPUs' time busy with something other than the
   * server, the simulator and the fakes (other work on the machine, or the host's steal), %: a
   * run where this is large measured the neighbours as much as the server.
   */
  othersBurstPct: number | null;
}

export type RunOutcome = { ok: true; steps: StepFigures[] } | { ok: false; error: string };

/** One commit's runs, in the order they ran. */
export interface Side {
  label: string;
  runs: RunOutcome[];
}

const num = z.number().nullable().optional();
const pair = z.looseObject({ p50: num, p95: num }).nullable().optional();
const stepSchema = z.looseObject({
  devices: z.number().int(),
  connectRefusals: z.number().optional(),
  turnsExpected: z.number().int(),
  turnsDone: z.number().int(),
  eosToFirstFrameMs: pair,
  serverFirstAudioMs: pair,
  latePct: num,
  gapPct: num,
  serverCpuCores: num,
  serverPeakRssMb: num,
  stealPct: num,
  loadAvg1: num,
});
const burstSchema = z
  .looseObject({
    machineBusyPct: z.number(),
    server: z.looseObject({ total: z.number() }),
    rig: z.looseObject({ simulator: z.number(), fakes: z.number().nullable() }),
  })
  .nullable()
  .optional();
const resultSchema = z.looseObject({ steps: z.array(stepSchema.extend({ burstCpu: burstSchema })) });

/** The steps of one simulator `--json` file; throws a readable error when it is not one. */
export function readSteps(json: string): StepFigures[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw new Error(`not simulator JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const r = resultSchema.safeParse(parsed);
  if (!r.success)
    throw new Error(`not simulator JSON: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const v = (x: number | null | undefined): number | null =>
    x === null || x === undefined || !Number.isFinite(x) ? null : x;
  return r.data.steps.map((s) => ({
    devices: s.devices,
    turnsDone: s.turnsDone,
    turnsExpected: s.turnsExpected,
    refusals: s.connectRefusals ?? 0,
    firstFrameP50: v(s.eosToFirstFrameMs?.p50),
    firstFrameP95: v(s.eosToFirstFrameMs?.p95),
    serverAddedP95: v(s.serverFirstAudioMs?.p95),
    latePct: v(s.latePct),
    gapPct: v(s.gapPct),
    serverCores: v(s.serverCpuCores),
    peakRssMb: v(s.serverPeakRssMb),
    stealPct: v(s.stealPct),
    loadAvg1: v(s.loadAvg1),
    othersBurstPct: s.burstCpu
      ? Math.max(
          0,
          s.burstCpu.machineBusyPct - s.burstCpu.server.total - s.burstCpu.rig.simulator - (s.burstCpu.rig.fakes ?? 0),
        )
      : null,
  }));
}

/** The values rounded to `digits`: one value when they agree, `min–max` when not, `n/a` when none was measured. */
export function span(values: ReadonlyArray<number | null>, digits: number): string {
  const xs = values.filter((x): x is number => x !== null && Number.isFinite(x));
  if (xs.length === 0) return 'n/a';
  const lo = Math.min(...xs).toFixed(digits);
  const hi = Math.max(...xs).toFixed(digits);
  return lo === hi ? lo : `${lo}–${hi}`;
}

export const SUMMARY_COLUMNS = [
  'devices',
  'commit',
  'runs',
  'turns done',
  '503 at upgrade',
  'EoS→1st frame p50 ms',
  'EoS→1st frame p95 ms',
  'server-added p95 ms',
  'late %',
  'gap %',
  'server CPU cores',
  'server peak RSS MB',
  'steal %',
  "others' CPU % in the burst",
  'load 1 min',
] as const;

/** The cells after the first columns, from the steps of one fleet size (one per run that reached it). */
function figureCells(steps: readonly StepFigures[]): string[] {
  const col = (f: (s: StepFigures) => number | null, digits: number): string => span(steps.map(f), digits);
  const turns = steps.length === 0 ? 'n/a' : `${col((s) => s.turnsDone, 0)}/${col((s) => s.turnsExpected, 0)}`;
  return [
    turns,
    col((s) => s.refusals, 0),
    col((s) => s.firstFrameP50, 0),
    col((s) => s.firstFrameP95, 0),
    col((s) => s.serverAddedP95, 0),
    col((s) => s.latePct, 1),
    col((s) => s.gapPct, 2),
    col((s) => s.serverCores, 2),
    col((s) => s.peakRssMb, 0),
    col((s) => s.stealPct, 1),
    col((s) => s.othersBurstPct, 0),
    col((s) => s.loadAvg1, 1),
  ];
}

const row = (cells: readonly string[]): string => `| ${cells.map((c) => c.replaceAll('|', '/')).join(' | ')} |`;

/** One row per fleet size and commit; the runs column says how many runs the cells span. */
export function summaryTable(sides: readonly Side[], devices: readonly number[]): string {
  const lines = [row(SUMMARY_COLUMNS), `|${SUMMARY_COLUMNS.map(() => '---:').join('|')}|`];
  for (const n of devices) {
    for (const side of sides) {
      const failed = side.runs.filter((r) => !r.ok).length;
      const ok = side.runs.flatMap((r) => (r.ok ? [r.steps] : []));
      const steps = ok.flatMap((st) => st.filter((s) => s.devices === n));
      const missing = ok.filter((st) => !st.some((s) => s.devices === n)).length;
      const notes = [failed ? `${failed} failed` : '', missing ? `${missing} without this step` : ''].filter(Boolean);
      const runs = `${steps.length}${notes.length ? ` (${notes.join(', ')})` : ''}`;
      lines.push(row([String(n), side.label, runs, ...figureCells(steps)]));
    }
  }
  return lines.join('\n');
}

const RUN_COLUMNS = [
  'commit',
  'run',
  'devices',
  'turns done',
  '503 at upgrade',
  'EoS→1st frame p50 / p95 ms',
  'server-added p95 ms',
  'late %',
  'gap %',
  'server CPU cores',
  'server peak RSS MB',
  'steal %',
  "others' CPU % in the burst",
  'load 1 min',
] as const;

/** Every run's every step, in the order the runs of each commit ran; a failed run is one line with its reason. */
export function runsTable(sides: readonly Side[]): string {
  const lines = [row(RUN_COLUMNS), `|${RUN_COLUMNS.map(() => '---:').join('|')}|`];
  for (const side of sides) {
    side.runs.forEach((r, i) => {
      if (!r.ok) {
        lines.push(row([side.label, String(i + 1), `failed: ${r.error.split('\n')[0] ?? ''}`]));
        return;
      }
      for (const s of r.steps) {
        const [turns, refusals, p50, p95, ...rest] = figureCells([s]) as [string, string, string, string, ...string[]];
        lines.push(row([side.label, String(i + 1), String(s.devices), turns, refusals, `${p50} / ${p95}`, ...rest]));
      }
    });
  }
  return lines.join('\n');
}
