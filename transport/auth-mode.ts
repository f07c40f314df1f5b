/**
 * @module Who may open a device connection, as `server.auth.mode` says: anyone (`open`), a holder
 * of a configured token (`tokens`), or a bound pair with its own token (`activation`). Every
 * transport enforces it with credentials of its own (ws/device-auth.ts, mqtt/credentials.ts).
 */

export type AuthMode = 'open' | 'tokens' | 'activation';

/** The mode in force: the configured one, else tokens when tokens are listed, else open. */
export function resolveAuthMode(auth: { mode?: AuthMode | undefined; tokens: readonly string[] }): AuthMode {
  return auth.mode ?? (auth.tokens.length > 0 ? 'tokens' : 'open');
}
