/**
 * @module The logger of the operator's commands (`devices`, `db`): warnings and errors as one line
 * each on stderr, the rest (info about the import of an old registry file) too, without debug noise.
 */
import type { LogFn, Logger } from '../core/logger.ts';

function line(level: string): LogFn {
  return ((obj: object | string, msg?: string) => {
    if (typeof obj === 'string') process.stderr.write(`${level}: ${obj}\n`);
    else process.stderr.write(`${level}: ${msg ?? ''} ${JSON.stringify(obj)}\n`);
  }) as LogFn;
}

const quiet: LogFn = () => {};

export const cliLog: Logger = {
  trace: quiet,
  debug: quiet,
  info: line('info'),
  warn: line('warning'),
  error: line('error'),
  fatal: line('error'),
  child: () => cliLog,
};
