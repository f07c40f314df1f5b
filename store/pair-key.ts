/**
 * @module The canonical form of a device's identity pair (Device-Id + Client-Id): the firmware
 * sends a lowercase MAC and a UUID; case never matters. Cache keys, token input, session identity
 * and the rows each pair owns (memory, reminders, waiting messages) all use this one form.
 */
export function pairKey(deviceId: string, clientId: string): string {
  return `${deviceId.toLowerCase()}\n${clientId.toLowerCase()}`;
}

/** One identity pair: what a device's memory, reminders and waiting messages belong to. */
export interface DevicePair {
  deviceId: string;
  clientId: string;
}

/** The pair as the store keeps it in its rows (both lower case). */
export function storedPair(p: DevicePair): DevicePair {
  return { deviceId: p.deviceId.toLowerCase(), clientId: p.clientId.toLowerCase() };
}
