/**
 * @module Where each device last reached the server's OTA endpoint (`http(s)://host[:port]`), by
 * its Device-Id + Client-Id pair: the firmware asks OTA over HTTP at every boot, before it connects
 * over MQTT, so for an MQTT session (which has no HTTP request of its own) this is the address the
 * device can reach the vision endpoint at. Bounded: the least recently seen pair is forgotten first.
 */
import { makeRoom } from '../../core/bounded-map.ts';

/** Pairs remembered at most. */
export const MAX_OTA_ORIGINS = 10_000;

const keyOf = (deviceId: string, clientId: string): string => `${deviceId.toLowerCase()}\n${clientId.toLowerCase()}`;

export class OtaOrigins {
  readonly #byPair = new Map<string, string>();
  readonly #max: number;

  constructor(max = MAX_OTA_ORIGINS) {
    this.#max = max;
  }

  get size(): number {
    return this.#byPair.size;
  }

  /** The pair's latest OTA request came by `origin`; it becomes the most recently seen. */
  remember(deviceId: string, clientId: string, origin: string): void {
    const key = keyOf(deviceId, clientId);
    this.#byPair.delete(key);
    makeRoom(this.#byPair, this.#max);
    this.#byPair.set(key, origin);
  }

  get(deviceId: string, clientId: string): string | undefined {
    return this.#byPair.get(keyOf(deviceId, clientId));
  }
}
