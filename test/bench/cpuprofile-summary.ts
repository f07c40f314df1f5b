/**
 * `node --import tsx test/bench/cpuprofile-summary.ts [--top N] [--each] [--from S --to S] FILE.cpuprofile…`
 *
 * Where a profiled server's time went (test/bench/sim/cpuprofile.ts), as Markdown: node --cpu-prof
 * writes one file per thread, `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`, thread 0 being
 * the main thread. By default the main thread's files are summarized together and the worker
 * threads' together; with --each every file on its own. --from/--to keep the samples between
 * those seconds after the earliest file's start (all threads share the clock). See BENCHMARKS.md for how the fleet
 * profiles were taken.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { earliestStart, summarize, summaryMarkdown, type ProfileWindow } from './sim/cpuprofile.ts';

/** The thread number in node's profile file name; null when the name is not node's. */
export function threadOf(file: string): number | null {
  const m = /^CPU\.\d+\.\d+\.\d+\.(\d+)\.\d+\.cpuprofile$/.exec(basename(file));
  return m ? Number(m[1]) : null;
}

function main(argv: string[]): void {
  let top = 20;
  let each = false;
  let fromS = 0;
  let toS = Infinity;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--top') top = Number(argv[++i]);
    else if (a === '--each') each = true;
    else if (a === '--from') fromS = Number(argv[++i]);
    else if (a === '--to') toS = Number(argv[++i]);
    else if (a.startsWith('-')) throw new Error(`unknown argument ${a}`);
    else files.push(a);
  }
  if (files.length === 0 || !Number.isInteger(top) || top < 1)
    throw new Error('usage: cpuprofile-summary.ts [--top N] [--each] FILE.cpuprofile…');
  if (!(fromS >= 0 && toS > fromS)) throw new Error('--from and --to are seconds, --to after --from');
  const texts = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
  const window: ProfileWindow | undefined =
    fromS > 0 || toS < Infinity
      ? { originUs: earliestStart([...texts.values()]), fromMs: fromS * 1000, toMs: toS * 1000 }
      : undefined;
  const groups: Array<[string, string[]]> = each
    ? files.map((f) => [basename(f), [f]])
    : [
        ['main thread', files.filter((f) => threadOf(f) === 0)],
        ['worker threads', files.filter((f) => threadOf(f) !== 0)],
      ];
  for (const [title, group] of groups) {
    if (group.length === 0) continue;
    const s = summarize(
      group.map((f) => texts.get(f) as string),
      window,
    );
    console.log(
      `${summaryMarkdown(`${title} (${group.length} file${group.length === 1 ? '' : 's'})${window ? `, ${fromS}–${toS} s` : ''}`, s, top)}\n`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`cpuprofile-summary: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(2);
  }
}
