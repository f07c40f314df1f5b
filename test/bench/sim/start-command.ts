/**
 * @module How the server is started: `npm start` (package.json's `start` script, `exec node
 * ARGS…`), which the simulator runs so that it measures what a user runs, and the image's CMD,
 * which the container checks run. `test/unit/server/start-command.test.ts` keeps their flags equal.
 */
import { readFileSync } from 'node:fs';

/** The node arguments of `npm start` (its flags, then the entry script), from package.json. */
export function npmStartArgs(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    scripts?: Record<string, string>;
  };
  const start = pkg.scripts?.start ?? '';
  const words = start.trim().split(/\s+/);
  // Plain words only: the simulator runs them without a shell.
  if (words[0] !== 'exec' || words[1] !== 'node' || words.length < 3 || /["'$`\\]/.test(start))
    throw new Error(`package.json's start script is not \`exec node ARGS…\` in plain words: ${JSON.stringify(start)}`);
  return words.slice(2);
}

/** The arguments for the node binary: `npm start`'s, `extra` node arguments before its script, then the config. */
export function serverCommandArgs(configFile: string, extra: readonly string[]): string[] {
  const args = npmStartArgs();
  const script = args.at(-1) as string;
  return [...args.slice(0, -1), ...extra, script, '--config', configFile];
}

/** The image's CMD (the Dockerfile's exec form), e.g. `['node', FLAGS…, 'dist/server/main.js']`. */
export function imageCmd(): string[] {
  const line = readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('CMD ['));
  if (!line) throw new Error('the Dockerfile has no exec-form CMD');
  return JSON.parse(line.slice('CMD '.length)) as string[];
}
