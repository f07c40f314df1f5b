/**
 * @module What the admin API uses of the store: bindings and pending codes, device records,
 * agents, the live sessions of every replica, devices' memory and reminders. Naming only these parts keeps the admin routes'
 * dependency visible.
 */
import type { Store } from '../../store/store.ts';

export type AdminStore = Pick<
  Store,
  'registry' | 'devices' | 'agents' | 'sessions' | 'mcpTokens' | 'memory' | 'reminders'
>;
