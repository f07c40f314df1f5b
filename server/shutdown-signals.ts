/**
 * @module What a SIGTERM or SIGINT asks for. The first starts the drain. A signal sent to a whole
 * process group (Ctrl-C in a terminal, `kill -- -PGID`) reaches npm and the server, and npm
 * forwards its copy: the server hears the same request twice, milliseconds apart. So the second
 * signal within `repeatWindowMs` of the first is that copy and changes nothing; a signal after the
 * window, or any third one (a second Ctrl-C through npm), means "exit now".
 */

/** Long enough for npm's forwarded copy on a loaded machine (it comes 5–60 ms after the first), short for a person pressing again. */
export const REPEAT_WINDOW_MS = 1000;

/** `drain`: start the graceful shutdown; `duplicate`: the same request again, ignore; `force`: exit now. */
export type SignalVerdict = 'drain' | 'duplicate' | 'force';

export class ShutdownSignals {
  readonly #now: () => number;
  readonly #windowMs: number;
  #firstAt: number | undefined;
  #count = 0;

  constructor(opts: { now?: () => number; repeatWindowMs?: number } = {}) {
    this.#now = opts.now ?? (() => performance.now());
    this.#windowMs = opts.repeatWindowMs ?? REPEAT_WINDOW_MS;
  }

  receive(): SignalVerdict {
    this.#count++;
    const now = this.#now();
    if (this.#firstAt === undefined) {
      this.#firstAt = now;
      return 'drain';
    }
    return this.#count === 2 && now - this.#firstAt < this.#windowMs ? 'duplicate' : 'force';
  }
}
