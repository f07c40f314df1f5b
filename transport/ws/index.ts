/**
 * @module The device WebSocket transport as the HTTP shell registers it: the route at
 * `DEVICE_WS_PATH` (before the upgrade: draining, origin, token, per-address limits, capacity) and
 * what becomes of a client's socket errors.
 */
export { DEVICE_WS_PATH, deviceWsRoute, type WsRouteOptions } from './route.ts';
export { webSocketErrorHandler } from './socket-errors.ts';
