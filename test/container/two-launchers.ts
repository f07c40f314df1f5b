/**
 * The command line of a container check that runs two launchers (each the command that runs a
 * program in one container): `[--timeout-ms N] -- <first launcher...> --- <second launcher...>`.
 * A malformed line prints `usage` and exits 2.
 */
export function parseTwoLaunchers(
  argv: readonly string[],
  usage: string,
): { timeoutMs: number; first: string[]; second: string[] } {
  const sep = argv.indexOf('--');
  const own = sep >= 0 ? argv.slice(0, sep) : argv;
  const rest = sep >= 0 ? argv.slice(sep + 1) : [];
  const mid = rest.indexOf('---');
  const t = own.indexOf('--timeout-ms');
  const timeoutMs = t >= 0 ? Number(own[t + 1]) : 240_000;
  if (mid <= 0 || mid === rest.length - 1 || !Number.isFinite(timeoutMs)) {
    process.stderr.write(`usage: ${usage}\n`);
    process.exit(2);
  }
  return { timeoutMs, first: rest.slice(0, mid), second: rest.slice(mid + 1) };
}
