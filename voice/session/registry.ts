/**
 * @module All live sessions. One session per connection; a new connection from the same identity
 * (Device-Id + Client-Id, features/identity/device-token.ts pairKey) replaces the older one (a device
 * that rebooted or lost Wi-Fi reconnects before the server has noticed the old TCP connection is
 * dead). Knowing a MAC alone is not enough to replace anyone.
 */
import { CloseCode } from '../../protocol/close-codes.ts';
import type { DeviceSession } from './session.ts';

export class SessionRegistry {
  #all = new Set<DeviceSession>();
  #byIdentity = new Map<string, DeviceSession>();
  #identityOf = new Map<DeviceSession, string>();

  get size(): number {
    return this.#all.size;
  }

  /** Adds a session; an older session of the same identity is closed with `Replaced`. */
  add(session: DeviceSession, identity: string | null): void {
    this.#all.add(session);
    if (identity !== null) {
      this.#identityOf.set(session, identity);
      const old = this.#byIdentity.get(identity);
      this.#byIdentity.set(identity, session);
      if (old && old !== session) {
        old.log.info({ newSession: session.id }, 'replaced by a newer connection');
        old.close(CloseCode.Replaced);
      }
    }
  }

  remove(session: DeviceSession): void {
    this.#all.delete(session);
    const identity = this.#identityOf.get(session);
    this.#identityOf.delete(session);
    if (identity !== undefined && this.#byIdentity.get(identity) === session) this.#byIdentity.delete(identity);
  }

  byIdentity(identity: string): DeviceSession | undefined {
    return this.#byIdentity.get(identity);
  }

  /** Ends the session of an identity that lost its right to connect (a revoked device). */
  closeIdentity(identity: string, code: CloseCode): void {
    const s = this.#byIdentity.get(identity);
    if (s) {
      s.log.info('device revoked: session closed');
      s.close(code);
    }
  }

  list(): DeviceSession[] {
    return [...this.#all];
  }

  /** Closes every session and waits until each has released its resources. */
  async closeAll(code: CloseCode): Promise<void> {
    const sessions = this.list();
    for (const s of sessions) s.close(code);
    await Promise.all(sessions.map((s) => s.closed));
  }

  /** Lets running turns finish until the deadline, then closes every session. */
  async drainAll(deadline: number): Promise<void> {
    await Promise.all(this.list().map((s) => s.drain(deadline)));
  }
}
