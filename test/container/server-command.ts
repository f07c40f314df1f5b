/**
 * How the container checks start the image's server: the launcher's words, then tini (PID 1 as in
 * the image), `env` with the variables given, and the compiled entry point.
 */
export function imageServerArgs(launcherPrefix: readonly string[], env: Record<string, string>): string[] {
  return [
    ...launcherPrefix,
    '/usr/bin/tini',
    '--',
    'env',
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    'node',
    'dist/server/main.js',
  ];
}
