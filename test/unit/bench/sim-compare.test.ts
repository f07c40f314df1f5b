/**
 * The fleet comparison (`npm run simulate:compare`): its command line keeps the columns comparable
 * (the fleet's shape is the tool's, never a pass-through), it reads each commit's own simulator
 * JSON (older ones lack newer fields; NaN arrives as null), and it prints one table whose cells
 * span the runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCompareArgs } from '../../bench/sim/compare-options.ts';
import { readSteps, runsTable, span, summaryTable, type Side } from '../../bench/sim/compare-report.ts';

function opts(argv: string[]): Exclude<ReturnType<typeof parseCompareArgs>, 'help'> {
  const o = parseCompareArgs(argv);
  assert.notEqual(o, 'help');
  return o as Exclude<typeof o, 'help'>;
}

test('compare args: one ref runs against the checkout, the fleet of 100, 200 and 300 devices is the default, simulator flags pass after --', () => {
  const o = opts(['6505278']);
  assert.deepEqual(o.refs, ['6505278']);
  assert.deepEqual(o.devices, [100, 200, 300]);
  assert.equal(o.turns, 2);
  assert.equal(o.staggerMs, 37);
  assert.equal(o.runs, 3);
  assert.deepEqual(o.simulatorArgs, []);
  const p = opts(['old', 'new', '--devices=50,100', '--runs', '1', '--', '--transport', 'mqtt']);
  assert.deepEqual(p.refs, ['old', 'new']);
  assert.deepEqual(p.devices, [50, 100]);
  assert.equal(p.runs, 1);
  assert.deepEqual(p.simulatorArgs, ['--transport', 'mqtt']);
});

test('compare args: the fleet shape cannot be passed through, and bad input is refused', () => {
  assert.throws(() => parseCompareArgs([]), /needs a ref/);
  assert.throws(() => parseCompareArgs(['a', 'b', 'c']), /at most two refs/);
  assert.throws(() => parseCompareArgs(['a', '--', '--devices', '5']), /--devices belongs to the comparison/);
  assert.throws(() => parseCompareArgs(['a', '--', '--json=/tmp/x']), /--json belongs to the comparison/);
  assert.throws(() => parseCompareArgs(['a', '--', '--url', 'ws://x']), /--url/);
  assert.throws(() => parseCompareArgs(['a', '--runs', '0']), /--runs needs an integer >= 1/);
  assert.throws(() => parseCompareArgs(['a', '--bogus']), /unknown argument --bogus/);
  assert.equal(parseCompareArgs(['--help']), 'help');
});

/** A step as a simulator writes it to --json (only the fields the comparison reads, plus noise). */
function step(devices: number, f: Partial<Record<string, unknown>> = {}): Record<string, unknown> {
  return {
    devices,
    connectRefusals: 0,
    turnsExpected: devices * 2,
    turnsDone: devices * 2,
    eosToFirstFrameMs: { p50: 700, p95: 800, n: devices * 2 },
    serverFirstAudioMs: { p50: 5, p95: 90, n: devices * 2 },
    latePct: 2,
    gapPct: 0,
    serverCpuCores: 0.6,
    serverPeakRssMb: 400,
    stealPct: 0.5,
    loadAvg1: 1.2,
    burstCpu: { windowMs: 2000, machineBusyPct: 99, server: { total: 50, main: 8 }, rig: { simulator: 6, fakes: 4 } },
    turns: [{ done: true }],
    ...f,
  };
}

test('compare report: a run JSON is read step by step; null (NaN) and fields an older simulator lacks are n/a, not 0', () => {
  const json = JSON.stringify({
    steps: [step(100), step(200, { latePct: null, stealPct: undefined, serverFirstAudioMs: null, burstCpu: null })],
  });
  const s = readSteps(json);
  assert.equal(s.length, 2);
  assert.equal(s[0]?.othersBurstPct, 39, 'a 99 % busy machine of which the server, simulator and fakes used 60 %');
  assert.equal(s[1]?.othersBurstPct, null, 'no burst measured');
  assert.equal(s[0]?.firstFrameP95, 800);
  assert.equal(s[0]?.serverAddedP95, 90);
  assert.equal(s[1]?.latePct, null);
  assert.equal(s[1]?.stealPct, null);
  assert.equal(s[1]?.serverAddedP95, null);
  assert.throws(() => readSteps('{"steps":[{"devices":"many"}]}'), /simulator JSON/);
  assert.throws(() => readSteps('not json'), /simulator JSON/);
});

test('compare report: span gives one value when the runs agree, min–max when not, n/a when none measured', () => {
  assert.equal(span([2.04, 2.049], 1), '2.0');
  assert.equal(span([1.8, 2.5, 2.1], 1), '1.8–2.5');
  assert.equal(span([null, 3], 0), '3');
  assert.equal(span([null, null], 0), 'n/a');
  assert.equal(span([], 0), 'n/a');
});

test('compare report: one row per fleet size and commit, cells spanning the runs; failed runs are counted, not averaged in', () => {
  const before: Side = {
    label: 'before 6505278',
    runs: [
      { ok: true, steps: readSteps(JSON.stringify({ steps: [step(200, { latePct: 4.5 })] })) },
      {
        ok: true,
        steps: readSteps(
          JSON.stringify({ steps: [step(200, { latePct: 4.1, eosToFirstFrameMs: { p50: 720, p95: 881, n: 400 } })] }),
        ),
      },
    ],
  };
  const main: Side = {
    label: 'main b27fa19',
    runs: [
      {
        ok: true,
        steps: readSteps(JSON.stringify({ steps: [step(200, { turnsDone: 246, connectRefusals: 57, gapPct: 0.41 })] })),
      },
      {
        ok: true,
        steps: readSteps(JSON.stringify({ steps: [step(200, { turnsDone: 352, connectRefusals: 12, gapPct: 0.03 })] })),
      },
      { ok: false, error: 'simulator exited with code 1' },
    ],
  };
  const table = summaryTable([before, main], [200]);
  const rows = table.split('\n');
  assert.match(rows[0] ?? '', /^\| devices \| commit \| runs \| turns done \| 503 at upgrade \|/);
  const row = (label: string): string[] => (rows.find((r) => r.includes(label)) ?? '').split('|').map((c) => c.trim());
  const b = row('before 6505278');
  assert.deepEqual(b.slice(1, 7), ['200', 'before 6505278', '2', '400/400', '0', '700–720']);
  assert.equal(b[7], '800–881', 'p95 spans the runs');
  assert.equal(b[9], '4.1–4.5', 'late % spans the runs');
  const m = row('main b27fa19');
  assert.equal(m[3], '2 (1 failed)');
  assert.equal(m[4], '246–352/400');
  assert.equal(m[5], '12–57');
  assert.equal(m[10], '0.03–0.41', 'gap % with two decimals');
  assert.equal(m[14], '39', "others' CPU share in the burst");
  assert.ok(!table.includes('NaN'), table);

  const detail = runsTable([before, main]);
  assert.match(detail, /\| main b27fa19 \| 3 \| failed: simulator exited with code 1 \|/);
  assert.equal(detail.split('\n').filter((l) => l.startsWith('| before 6505278 | ')).length, 2);
});

test('compare report: a fleet size a run did not reach shows as missing for that commit', () => {
  const side: Side = { label: 'x', runs: [{ ok: true, steps: readSteps(JSON.stringify({ steps: [step(100)] })) }] };
  const row = summaryTable([side], [100, 300])
    .split('\n')
    .find((r) => r.startsWith('| 300 |'));
  assert.ok(row?.includes('| 0 (1 without this step) |'), String(row));
});
