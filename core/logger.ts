/**
 * @module The logging interface every folder accepts: a structural subset of pino's Logger, so
 * that only server/ creates the real pino instance and everything else receives it (or a child)
 * as a parameter. Messages are static strings; values go in the object argument.
 */

export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

const noop: LogFn = () => {};

/** A logger that drops everything; for library defaults and unit tests that do not read logs. */
export const silentLogger: Logger = {
  trace: noop,
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  fatal: noop,
  child: () => silentLogger,
};
