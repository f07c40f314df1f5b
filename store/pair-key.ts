/**
 * @module The canonical form of a device's identity pair (Device-Id + Client-Id): the firmware
 * sends a lowercase MAC and a UUID; case never matters. Cache keys, token input and session
 * identity all use this one form.
 */
export function pairKey(deviceId: string, clientId: string): string {
  return `${deviceId.toLowerCase()}\n${clientId.toLowerCase()}`;
}
