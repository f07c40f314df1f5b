/**
 * @module Speech the server starts (the admin API's `say`, reminders): the contract every sender
 * uses. One `Push` per process delivers to a device wherever it is: an open session here, an idle
 * MQTT link here, another replica (through the store), or the offline queue.
 */

/** Who asked: logged in the audit line, and a reminder is never refused by the per-device rate. */
export type PushSource = 'admin' | 'reminder';

export interface SayRequest {
  /** The device's MAC (lower case, `:`). */
  deviceId: string;
  /**
   * The pair (Device-Id + Client-Id) it is for. Absent: the most recently connected pair of the MAC
   * (its newest session or broker connection here, else the pair its device record names). Never
   * any other pair: another Client-Id of the MAC is another device (in open mode, maybe a stranger).
   */
  clientId?: string;
  text: string;
  /** A turn in progress is aborted instead of waited for. */
  interrupt?: boolean;
  source: PushSource;
}

/**
 * How a message was (or will be) delivered:
 * - `spoken`: an open, idle session is speaking it now;
 * - `after_turn`: an open session is in a turn; it is spoken when that answer ends;
 * - `notified`: an idle MQTT device was sent `notify` (it fetches the audio by URL);
 * - `alerted`: an idle MQTT device on older firmware was sent `alert` (text on its screen);
 * - `queued`: nobody holds the device now; kept until it connects (`push.queueTtlMs`);
 * - `refused`: not delivered; `reason` says why (`offline` with the queue off, `rate_limited`,
 *   `unknown_device`, `empty`).
 */
export type SayStatus = 'spoken' | 'after_turn' | 'notified' | 'alerted' | 'queued' | 'refused';

export interface SayOutcome {
  status: SayStatus;
  reason?: 'offline' | 'rate_limited' | 'unknown_device' | 'empty';
  /** The replica that delivered it (with replicas). */
  replica?: string;
  /** Id of the queued message (status `queued`). */
  id?: string;
}

export interface Push {
  say(req: SayRequest): Promise<SayOutcome>;
  close(): Promise<void>;
}
