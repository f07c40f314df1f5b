/**
 * `npm run simulate:compare -- REF [OTHER] [--devices 100,200,300 --turns 2 --stagger-ms 37 --runs 3] [-- simulator flags]`
 *
 * The same simulated fleet against two commits, back to back on the same machine: REF is checked
 * out as a `git worktree` in a temporary folder (with this checkout's node_modules and build/
 * linked in), OTHER likewise or, when not given, this checkout as it stands. Each run is that
 * commit's own `test/bench/simulate.ts` (its own server, fakes and figures), so an older commit is
 * measured by the simulator it had; the columns compared are those every simulator writes to
 * `--json`. Runs alternate A B, B A, A B … so a drifting machine weighs on both alike. At the end
 * one table (test/bench/sim/compare-report.ts); the worktrees are removed, also on Ctrl-C.
 * See docs/simulate.md.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMPARE_USAGE, parseCompareArgs, type CompareOptions } from './sim/compare-options.ts';
import { readSteps, runsTable, summaryTable, type RunOutcome, type Side } from './sim/compare-report.ts';
import { sleep } from './sim/stats.ts';

/** What this checkout links into each worktree: the installed dependencies and the native helpers. */
const LINKED = ['node_modules', 'build'];
/** After the first signal, how long the running simulator gets to stop its server before a second one. */
const STOP_GRACE_MS = 12_000;

interface SideDir {
  label: string;
  dir: string;
  /** A worktree made here (removed at the end); false for this checkout. */
  worktree: boolean;
}

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The CPU model and count, for the table's header: figures compare only on the same host. */
function hostLine(): string {
  let model = 'unknown CPU';
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? model;
  } catch {
    // Not Linux: the model stays unknown.
  }
  return `host: ${model}, ${availableParallelism()} CPUs, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
}

class Comparison {
  readonly root: string;
  readonly opts: CompareOptions;
  readonly tmp: string;
  readonly outDir: string;
  readonly sides: SideDir[] = [];
  child: ChildProcess | null = null;
  stopping = false;
  #cleaned = false;

  constructor(opts: CompareOptions) {
    this.opts = opts;
    this.root = git(process.cwd(), ['rev-parse', '--show-toplevel']);
    this.tmp = mkdtempSync(join(tmpdir(), 'xz-compare-'));
    this.outDir = opts.outDir ?? join(this.tmp, 'out');
    mkdirSync(this.outDir, { recursive: true });
  }

  /** A worktree of `ref` with this checkout's dependencies linked in. */
  addWorktree(ref: string): SideDir {
    const sha = git(this.root, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
    const short = git(this.root, ['rev-parse', '--short', sha]);
    const dir = join(this.tmp, `wt-${short}`);
    git(this.root, ['worktree', 'add', '--detach', '--quiet', dir, sha]);
    const side: SideDir = {
      label: ref === short || sha.startsWith(ref) ? short : `${ref} ${short}`,
      dir,
      worktree: true,
    };
    this.sides.push(side);
    for (const name of LINKED) {
      const from = join(this.root, name);
      if (existsSync(from) && !existsSync(join(dir, name))) symlinkSync(realpathSync(from), join(dir, name));
    }
    return side;
  }

  thisCheckout(): SideDir {
    const short = git(this.root, ['rev-parse', '--short', 'HEAD']);
    const dirty = git(this.root, ['status', '--porcelain', '--untracked-files=no']) !== '';
    const side: SideDir = { label: `checkout ${short}${dirty ? ' + changes' : ''}`, dir: this.root, worktree: false };
    this.sides.push(side);
    return side;
  }

  /** One run of a side's own simulator; its whole output goes to a log file, its rows to the console. */
  async run(side: SideDir, n: number): Promise<RunOutcome> {
    const o = this.opts;
    const base = join(this.outDir, `${side.label.replaceAll(/[^A-Za-z0-9._-]+/g, '_')}-run${n}`);
    const jsonFile = `${base}.json`;
    const args = [
      '--import',
      'tsx',
      'test/bench/simulate.ts',
      '--devices',
      o.devices.join(','),
      '--turns',
      String(o.turns),
      '--stagger-ms',
      String(o.staggerMs),
      '--json',
      jsonFile,
      ...o.simulatorArgs,
    ];
    console.log(`[${side.label} run ${n}] node ${args.join(' ')}  (in ${side.dir})`);
    const log = createWriteStream(`${base}.log`);
    // Its own process group: Ctrl-C reaches the simulator once, through stopChild(), not also
    // from the terminal (a second signal makes it exit at once instead of stopping its server).
    const child = spawn(process.execPath, args, { cwd: side.dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    const prefix = `[${side.label} run ${n}] `;
    let tail = '';
    const forward = (b: Buffer): void => {
      log.write(b);
      const text = b.toString('utf8');
      tail = (tail + text).slice(-2000);
      process.stdout.write(text.replace(/^(?=.)/gm, prefix));
    };
    child.stdout?.on('data', forward);
    child.stderr?.on('data', forward);
    const code = await new Promise<number | null>((resolve) => {
      child.once('close', (c, sig) => resolve(c ?? (sig ? 128 : null)));
      child.once('error', () => resolve(null));
    });
    this.child = null;
    await new Promise<void>((resolve) => log.end(resolve));
    if (code !== 0)
      return {
        ok: false,
        error: `simulator exited with code ${code} (log ${base}.log): ${tail.trim().split('\n').at(-1) ?? ''}`,
      };
    try {
      return { ok: true, steps: readSteps(readFileSync(jsonFile, 'utf8')) };
    } catch (e) {
      return { ok: false, error: `${e instanceof Error ? e.message : String(e)} (${jsonFile})` };
    }
  }

  /** Stops the running simulator the way Ctrl-C does: it stops its server and fakes; a second signal makes it exit at once. */
  async stopChild(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGTERM'), STOP_GRACE_MS);
    await closed;
    clearTimeout(timer);
  }

  /** Removes the worktrees made here (and their registration); synchronous, so the exit hook can call it. */
  cleanup(): void {
    if (this.#cleaned) return;
    this.#cleaned = true;
    for (const s of this.sides) {
      if (!s.worktree) continue;
      try {
        git(this.root, ['worktree', 'remove', '--force', s.dir]);
      } catch (e) {
        console.error(
          `simulate:compare: could not remove the worktree ${s.dir}: ${e instanceof Error ? e.message : String(e)}`,
        );
      }
    }
    try {
      git(this.root, ['worktree', 'prune']);
    } catch {
      // Nothing registered is left to prune.
    }
    // The temporary folder goes too, unless the results were written into it.
    if (!this.opts.outDir) {
      for (const s of this.sides) if (s.worktree) rmSync(s.dir, { recursive: true, force: true });
    } else rmSync(this.tmp, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  let opts: CompareOptions | 'help';
  try {
    opts = parseCompareArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`simulate:compare: ${err instanceof Error ? err.message : String(err)}\n\n${COMPARE_USAGE}`);
    process.exit(2);
  }
  if (opts === 'help') {
    console.log(COMPARE_USAGE);
    return;
  }
  const cmp = new Comparison(opts);
  process.on('exit', () => {
    // Exiting without having stopped it (a second Ctrl-C): the simulator's own exit hook kills its server.
    if (cmp.child?.exitCode === null) cmp.child.kill('SIGTERM');
    cmp.cleanup();
  });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    cmp.stopping = true;
    if (signals === 1) {
      console.error(
        `simulate:compare: ${sig}: stopping the running simulator, then removing the worktrees (again: the simulator exits at once)`,
      );
      void cmp.stopChild().then(() => process.exit(130));
      return;
    }
    // The simulator's second signal: it exits at once, its exit hook killing its server and fakes;
    // this process still waits for it (stopChild) before removing the worktrees.
    cmp.child?.kill(signals === 2 ? 'SIGTERM' : 'SIGKILL');
    if (signals > 2) process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);

  const a = cmp.addWorktree(opts.refs[0]);
  const b = opts.refs[1] === undefined ? cmp.thisCheckout() : cmp.addWorktree(opts.refs[1]);
  const host = hostLine();
  console.log(host);
  console.log(
    `fleet: ${opts.devices.join(', ')} devices, ${opts.turns} turns each, first utterances within ${opts.staggerMs} ms; ${opts.runs} runs of each; results in ${cmp.outDir}`,
  );
  const results = new Map<SideDir, RunOutcome[]>([
    [a, []],
    [b, []],
  ]);
  for (let i = 0; i < opts.runs && !cmp.stopping; i++) {
    // A B, then B A: a machine whose load drifts over the comparison weighs on both commits alike.
    for (const side of i % 2 === 0 ? [a, b] : [b, a]) {
      if (cmp.stopping) break;
      if (results.get(a)?.length || results.get(b)?.length) await sleep(opts.cooldownS * 1000);
      if (cmp.stopping) break;
      results.get(side)?.push(await cmp.run(side, i + 1));
    }
  }
  if (cmp.stopping) return;
  const sides: Side[] = [a, b].map((s) => ({ label: s.label, runs: results.get(s) ?? [] }));
  const report = [
    `${host} (at the end)`,
    `fleet: ${opts.devices.join(', ')} devices, ${opts.turns} turns each, first utterances within ${opts.staggerMs} ms${opts.simulatorArgs.length ? `, simulator flags ${opts.simulatorArgs.join(' ')}` : ''}`,
    '',
    summaryTable(sides, opts.devices),
    '',
    'Every run:',
    '',
    runsTable(sides),
  ].join('\n');
  writeFileSync(join(cmp.outDir, 'summary.md'), `${report}\n`);
  console.log(`\n${report}\n\n(runs' JSON and output, and this table as summary.md, in ${cmp.outDir})`);
  if (sides.some((s) => s.runs.some((r) => !r.ok))) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    () => process.exit(process.exitCode ?? 0),
    (err: unknown) => {
      console.error(`simulate:compare failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(1);
    },
  );
}
