/**
 * @module What every transport shares, and the server wires: the device-transport contract
 * (`SessionDoor`, `DeviceTransport`, refusal reasons, the session-opened hook), the one door
 * sessions open through (`DeviceSessions`) and load admission (`AdmissionControl`).
 */
export type {
  DevicePair,
  DeviceTransport,
  OpenedSession,
  RefusalReason,
  SessionDoor,
  SessionOpenedHook,
  SessionRefusal,
  SessionRequest,
} from './contract.ts';
export { DeviceSessions, identityKey, type DeviceSessionsOptions, type SessionSettings } from './device-sessions.ts';
export { AdmissionControl, type AdmissionGate, type MediaLoad } from './admission.ts';
