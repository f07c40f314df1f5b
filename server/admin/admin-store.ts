/**
 * @module What the admin API uses of the store: bindings and pending codes, device records,
 * agents and the live sessions of every replica. The store (`store/store.ts`) satisfies it as is;
 * naming only these parts keeps the admin routes' dependency visible.
 */
import type { AgentRow, DeviceRecord } from '../../store/types.ts';
import type { BindResult, BoundDevice, PendingCode } from '../identity/device-registry.ts';

export interface AdminLiveSession {
  sessionId: string;
  deviceId: string | null;
  clientId: string | null;
  agent: string | null;
  replica: string;
  since: string;
}

export interface AdminStore {
  readonly registry: {
    bind(code: string, opts?: { agent?: string; alias?: string }): Promise<BindResult>;
    list(): Promise<{ bound: BoundDevice[]; pending: PendingCode[] }>;
    revoke(idOrDevice: string): Promise<BoundDevice[]>;
  };
  readonly devices: {
    list(): Promise<DeviceRecord[]>;
    get(deviceId: string): Promise<DeviceRecord | undefined>;
    update(deviceId: string, patch: { agent?: string | null; alias?: string | null }): Promise<DeviceRecord | undefined>;
  };
  readonly agents: {
    list(): Promise<AgentRow[]>;
    get(name: string): Promise<AgentRow | undefined>;
    create(name: string, settings: Record<string, unknown>): Promise<AgentRow | undefined>;
    update(name: string, settings: Record<string, unknown>): Promise<AgentRow | undefined>;
    delete(name: string): Promise<boolean>;
  };
  readonly sessions: { list(): Promise<AdminLiveSession[]> };
}
