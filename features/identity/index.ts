/**
 * @module The identity room's public surface: who a device is and whether it may connect (its
 * identity from headers, the auth modes, device tokens), activation and the OTA endpoint, which
 * browser origins and host names are ours, and the operator's start-up line about device auth.
 * Its rows: store/identity-*.ts.
 */
export {
  authorize,
  readIdentity,
  resolveAuthMode,
  type AuthDecision,
  type AuthMode,
  type AuthPolicy,
  type DeviceIdentity,
} from './device-auth.ts';
export { verifyBinding, verifyStoredBinding } from './device-token.ts';
export {
  SOURCES_BIND_COMMAND,
  httpOriginOf,
  otaRoutes,
  type MqttOtaProvider,
  type MqttOtaRequest,
  type OtaRouteOptions,
} from './ota-route.ts';
export {
  createOriginCheck,
  guardBrowserHosts,
  OwnHosts,
  type HostSettings,
  type OriginCheckedAt,
} from './origin.ts';
export { logDeviceAuth, type AuthSettings } from './operator-log.ts';
