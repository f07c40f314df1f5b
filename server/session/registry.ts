/**
 * @module All live sessions. One session per connection; a new connection from the same Device-Id
 * replaces the older one (a device that rebooted or lost Wi-Fi reconnects before the server has
 * noticed the old TCP connection is dead).
 */
import { CloseCode } from '../../protocol/close-codes.ts';
import type { DeviceSession } from './session.ts';

export class SessionRegistry {
  #all = new Set<DeviceSession>();
  #byDevice = new Map<string, DeviceSession>();

  get size(): number {
    return this.#all.size;
  }

  /** Adds a session; an older session of the same device is closed with `Replaced`. */
  add(session: DeviceSession): void {
    this.#all.add(session);
    if (session.deviceId) {
      const old = this.#byDevice.get(session.deviceId);
      this.#byDevice.set(session.deviceId, session);
      if (old && old !== session) {
        old.log.info({ newSession: session.id }, 'replaced by a newer connection');
        old.close(CloseCode.Replaced);
      }
    }
  }

  remove(session: DeviceSession): void {
    this.#all.delete(session);
    if (session.deviceId && this.#byDevice.get(session.deviceId) === session) this.#byDevice.delete(session.deviceId);
  }

  byDevice(deviceId: string): DeviceSession | undefined {
    return this.#byDevice.get(deviceId);
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
