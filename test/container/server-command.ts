/**
 * How the container checks start the image's server: the launcher's words, then tini (PID 1 as in
 * the image), `env` with the variables given, and the image's CMD (node, its flags, the compiled
 * entry point) as the Dockerfile has it.
 */
import { imageCmd } from '../bench/sim/start-command.ts';

export function imageServerArgs(launcherPrefix: readonly string[], env: Record<string, string>): string[] {
  return [
    ...launcherPrefix,
    '/usr/bin/tini',
    '--',
    'env',
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    ...imageCmd(),
  ];
}
