/**
 * The command line of the fleet comparison (`npm run simulate:compare`, test/bench/compare.ts).
 * The fleet's shape (devices, turns, stagger) belongs to the comparison: both commits get the same
 * one, so it cannot be passed through to one simulator; other simulator flags pass after `--`.
 */

export interface CompareOptions {
  /** One ref: it runs against the checkout as it stands. Two: both run from worktrees, first one first. */
  refs: [string] | [string, string];
  devices: number[];
  turns: number;
  staggerMs: number;
  /** Runs of each commit, alternated (A B, B A, A B, …). */
  runs: number;
  /** Pause between two simulator runs, so the machine's load settles. */
  cooldownS: number;
  /** Where the runs' JSON and output are kept; unset: a temporary folder (kept, printed). */
  outDir?: string;
  /** Flags passed to both simulators as they are (after `--`). */
  simulatorArgs: string[];
}

export const COMPARE_USAGE = `Fleet comparison: the same simulated fleet against two commits, back to back.

  npm run simulate:compare -- REF                  REF (a worktree) against this checkout
  npm run simulate:compare -- REF OTHER            both from worktrees
  npm run simulate:compare -- 6505278 --devices 100,200,300 --runs 3 -- --transport mqtt

Options
  --devices N[,N...]   fleet sizes, each a step of every run (default 100,200,300)
  --turns K            spoken turns per device (default 2)
  --stagger-ms N       first utterances start within N ms of each other (default 37)
  --runs N             runs of each commit, alternated A B, B A, ... (default 3)
  --cooldown-s N       pause between runs (default 10)
  --out DIR            keep each run's JSON and output here (default: a new folder under /tmp)
  -- ARGS              passed to both simulators (not --devices, --turns, --stagger-ms, --json,
                       --url, --idle: the comparison sets or forbids those)
`;

/** Simulator flags the comparison sets itself or cannot compare (a --url run is one server, not two commits). */
const OWNED = ['--devices', '--turns', '--stagger-ms', '--json', '--url', '--idle'];

function int(flag: string, v: string | undefined, min: number): number {
  const n = Number(v);
  if (v === undefined || !Number.isInteger(n) || n < min)
    throw new Error(`${flag} needs an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

/** Parses the command line; throws a readable message on anything it does not know. */
export function parseCompareArgs(argv: readonly string[]): CompareOptions | 'help' {
  const refs: string[] = [];
  const o: Omit<CompareOptions, 'refs'> = {
    devices: [100, 200, 300],
    turns: 2,
    staggerMs: 37,
    runs: 3,
    cooldownS: 10,
    simulatorArgs: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i] as string;
    if (raw === '--') {
      o.simulatorArgs = argv.slice(i + 1);
      break;
    }
    if (!raw.startsWith('-')) {
      refs.push(raw);
      continue;
    }
    const eq = raw.indexOf('=');
    const flag = eq > 0 ? raw.slice(0, eq) : raw;
    const value = (): string | undefined => (eq > 0 ? raw.slice(eq + 1) : argv[++i]);
    switch (flag) {
      case '--help':
      case '-h':
        return 'help';
      case '--devices':
        o.devices = (value() ?? '').split(',').map((s) => int('--devices', s.trim(), 1));
        break;
      case '--turns':
        o.turns = int(flag, value(), 1);
        break;
      case '--stagger-ms':
        o.staggerMs = int(flag, value(), 0);
        break;
      case '--runs':
        o.runs = int(flag, value(), 1);
        break;
      case '--cooldown-s':
        o.cooldownS = int(flag, value(), 0);
        break;
      case '--out': {
        const v = value();
        if (!v) throw new Error('--out needs a folder');
        o.outDir = v;
        break;
      }
      default:
        throw new Error(`unknown argument ${flag} (see --help; simulator flags go after --)`);
    }
  }
  for (const a of o.simulatorArgs) {
    const flag = a.split('=')[0] as string;
    if (OWNED.includes(flag)) throw new Error(`${flag} belongs to the comparison, not to one simulator (see --help)`);
  }
  if (refs.length === 0) throw new Error('simulate:compare needs a ref to compare against (see --help)');
  if (refs.length > 2) throw new Error(`at most two refs, got ${refs.length}`);
  return { ...o, refs: refs as [string] | [string, string] };
}
