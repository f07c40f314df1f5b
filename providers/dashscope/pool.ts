/**
 * @module The connections of one CosyVoice provider, reused across answers. The service runs
 * tasks one after another on a connection (a new `run-task` after `task-finished`), which saves
 * the next answer its TCP, TLS and WebSocket handshakes (a round trip or three to the region,
 * before any audio). Never two tasks at once on one connection, and never after `task-failed`
 * (the service does not take another task there); an answer cancelled mid-way gives its
 * connection back only once the service has confirmed the cancel (`task-finished`) within
 * `CANCEL_GRACE_MS`. A parked connection is closed after `keepAliveMs`, or at once if the service
 * sends anything on it or drops it; at most `MAX_IDLE` are parked.
 */
import type { Logger } from '../../core/logger.ts';
import { DashscopeSocket, type SocketListener } from './connection.ts';
import type { DashscopeEvent } from './messages.ts';
import type { CosyVoiceTtsOptions } from './tts-options.ts';

/** Most connections parked for reuse; the rest are closed when their answer ends. */
export const MAX_IDLE = 8;
/** How long a cancelled task's connection waits for the service's `task-finished`, in ms. */
export const CANCEL_GRACE_MS = 2000;

export class DashscopePool {
  readonly #o: CosyVoiceTtsOptions;
  readonly #log: Logger;
  readonly #idle = new Set<DashscopeSocket>();
  /** Every connection not closed yet, and its timer while parked or draining. */
  readonly #timers = new Map<DashscopeSocket, NodeJS.Timeout | undefined>();
  #closed = false;

  constructor(o: CosyVoiceTtsOptions, log: Logger) {
    this.#o = o;
    this.#log = log;
  }

  /** A parked connection, else a new one (still connecting: await its `ready`). */
  acquire(log: Logger): DashscopeSocket {
    for (const socket of this.#idle) {
      this.#unpark(socket);
      if (socket.idle) {
        log.debug('dashscope connection reused');
        return socket;
      }
      this.#drop(socket);
    }
    const socket = new DashscopeSocket(this.#o, this.#log);
    this.#timers.set(socket, undefined);
    if (this.#closed) socket.close();
    return socket;
  }

  /** A task ended with `task-finished`: the connection is parked for the next answer, or closed. */
  release(socket: DashscopeSocket): void {
    socket.listen(undefined);
    socket.resume();
    if (this.#closed || this.#o.keepAliveMs === 0 || this.#idle.size >= MAX_IDLE || !socket.idle) {
      this.#drop(socket);
      return;
    }
    this.#idle.add(socket);
    const parked: SocketListener = {
      event: () => this.#drop(socket),
      audio: () => this.#drop(socket),
      lost: () => this.#drop(socket),
    };
    socket.listen(parked);
    this.#timers.set(
      socket,
      setTimeout(() => this.#drop(socket), this.#o.keepAliveMs),
    );
  }

  /**
   * A task was cancelled (its `finish-task` with the cancel directive sent): its late audio is
   * dropped, and the connection is parked once the service ends the task, or closed.
   */
  releaseAfterCancel(socket: DashscopeSocket, taskId: string): void {
    if (this.#closed || this.#o.keepAliveMs === 0) {
      this.#drop(socket);
      return;
    }
    socket.resume();
    const draining: SocketListener = {
      event: (e: DashscopeEvent) => {
        if (e.header.task_id !== undefined && e.header.task_id !== taskId) return this.#drop(socket);
        if (e.header.event === 'task-finished') {
          this.#unpark(socket);
          this.release(socket);
        } else if (e.header.event === 'task-failed') this.#drop(socket);
      },
      audio: () => undefined,
      lost: () => this.#drop(socket),
    };
    socket.listen(draining);
    this.#timers.set(
      socket,
      setTimeout(() => this.#drop(socket), CANCEL_GRACE_MS),
    );
  }

  /** Closes a connection for good (a failed task, a lost or unwanted one). */
  discard(socket: DashscopeSocket): void {
    this.#drop(socket);
  }

  /** Parked connections now (for tests and metrics). */
  get parked(): number {
    return this.#idle.size;
  }

  /** Closes every connection this pool has, parked or in use. */
  close(): void {
    this.#closed = true;
    for (const socket of [...this.#timers.keys()]) this.#drop(socket);
  }

  #unpark(socket: DashscopeSocket): void {
    this.#idle.delete(socket);
    clearTimeout(this.#timers.get(socket));
    this.#timers.set(socket, undefined);
    socket.listen(undefined);
  }

  #drop(socket: DashscopeSocket): void {
    this.#unpark(socket);
    this.#timers.delete(socket);
    socket.close();
  }
}
