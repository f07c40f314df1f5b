/**
 * @module The devices list as the console shows it: every bound pair, every pending code and every
 * device record, merged by Device-Id, with whether a session of it is open on any replica.
 */
import type { DeviceRecord } from '../../store/types.ts';
import type { BoundDevice } from '../../store/identity-registry-types.ts';
import type { AdminContext } from './route.ts';
import type { DeviceView } from './schemas.ts';

/** Device-Ids with an open session: this process's sessions and every replica's rows in the store. */
export async function onlineDevices(ctx: AdminContext): Promise<Set<string>> {
  const online = new Set<string>();
  for (const id of ctx.localOnline()) online.add(id.toLowerCase());
  try {
    for (const s of await ctx.store.sessions.list()) if (s.deviceId) online.add(s.deviceId.toLowerCase());
  } catch (err) {
    // The database is away: this replica's own sessions are still known.
    ctx.log.warn({ err }, 'admin: live sessions of other replicas unavailable');
  }
  return online;
}

function fromRecord(
  r: DeviceRecord | undefined,
): Pick<DeviceView, 'alias' | 'agent' | 'board' | 'firmware' | 'firstSeen' | 'lastSeen'> {
  return {
    alias: r?.alias ?? null,
    agent: r?.agent ?? null,
    board: r?.board ?? null,
    firmware: r?.firmware ?? null,
    firstSeen: r?.firstSeen ?? null,
    lastSeen: r?.lastSeen ?? null,
  };
}

export function boundView(b: BoundDevice, record: DeviceRecord | undefined, online: boolean): DeviceView {
  return {
    deviceId: b.deviceId,
    clientId: b.clientId,
    state: 'bound',
    code: null,
    codeExpiresAt: null,
    bindingId: b.id,
    boundAt: b.boundAt,
    online,
    ...fromRecord(record),
  };
}

export async function listDevices(ctx: AdminContext): Promise<DeviceView[]> {
  const [{ bound, pending }, records, online] = await Promise.all([
    ctx.store.registry.list(),
    ctx.store.devices.list(),
    onlineDevices(ctx),
  ]);
  const byId = new Map(records.map((r) => [r.deviceId, r]));
  const shown = new Set<string>();
  const out: DeviceView[] = [];
  const now = Date.now();
  for (const p of pending) {
    if (p.expiresAt <= now) continue;
    shown.add(p.deviceId);
    out.push({
      deviceId: p.deviceId,
      clientId: p.clientId,
      state: 'pending',
      code: p.code,
      codeExpiresAt: new Date(p.expiresAt).toISOString(),
      bindingId: null,
      boundAt: null,
      online: online.has(p.deviceId),
      ...fromRecord(byId.get(p.deviceId)),
    });
  }
  for (const b of bound) {
    shown.add(b.deviceId);
    out.push(boundView(b, byId.get(b.deviceId), online.has(b.deviceId)));
  }
  for (const r of records) {
    if (shown.has(r.deviceId)) continue;
    out.push({
      deviceId: r.deviceId,
      clientId: r.clientId,
      state: 'seen',
      code: null,
      codeExpiresAt: null,
      bindingId: null,
      boundAt: null,
      online: online.has(r.deviceId),
      ...fromRecord(r),
    });
  }
  return out;
}

/** One device's view, or undefined when the server knows nothing of it. */
export async function deviceView(ctx: AdminContext, deviceId: string): Promise<DeviceView | undefined> {
  return (await listDevices(ctx)).find((d) => d.deviceId === deviceId);
}
