/**
 * @module What the operator reads about device identity in the server's log (`docker logs`): the
 * auth mode and where its state is kept, at start; and each pair bound or revoked, as the server
 * sees it (also when the `devices` CLI or another replica made the change).
 * Each new activation code is logged where it is issued (the OTA route), with the asking device.
 */
import type { Logger } from '../../core/logger.ts';
import { resolveAuthMode, type AuthMode } from './device-auth.ts';
import type { DeviceRegistry } from '../../store/identity-registry-types.ts';

export interface AuthSettings {
  mode?: AuthMode | undefined;
  tokens: readonly string[];
}

/** `database`: where bindings and codes are kept (store.url, password hidden). */
export function logDeviceAuth(
  auth: AuthSettings,
  database: string,
  devices: DeviceRegistry | undefined,
  log: Logger,
): void {
  const mode = resolveAuthMode(auth);
  if (mode === 'activation') log.info({ mode, database }, 'device authentication');
  else if (mode === 'tokens') log.info({ mode, tokens: auth.tokens.length }, 'device authentication');
  else log.info({ mode, note: 'any client that reaches the port may connect' }, 'device authentication');
  devices?.onBound((added) => {
    for (const d of added) log.info({ id: d.id, deviceId: d.deviceId, clientId: d.clientId }, 'device bound');
  });
  devices?.onRevoked((gone) => {
    for (const d of gone) log.info({ id: d.id, deviceId: d.deviceId, clientId: d.clientId }, 'device revoked');
  });
}
