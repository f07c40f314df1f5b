/**
 * @module Devices: the list (bound, pending, seen), binding a spoken code, renaming or moving a
 * device to another agent, and revoking it (its open session is closed by the app's revoke
 * listener, on whichever replica holds it).
 */
import { AdminError, adminRoute, type AdminContext } from './route.ts';
import { BindBody, DeviceList, DeviceParams, DevicePatchBody, DeviceView, RevokeResult } from './schemas.ts';
import { boundView, deviceView, listDevices, onlineDevices } from './device-views.ts';

/** 400 naming `field` when `agent` names no agent. */
async function requireAgent(ctx: AdminContext, agent: string | null | undefined, field: string): Promise<void> {
  if (agent && !(await ctx.store.agents.get(agent)))
    throw new AdminError(400, `${field}: unknown agent "${agent}"`, field);
}

export const deviceRoutes = [
  adminRoute({
    id: 'listDevices',
    method: 'GET',
    path: '/devices',
    summary:
      'Every device: bound, pending (with the code it speaks) and seen; its agent, alias, whether it is online, last seen, board and firmware.',
    auth: true,
    params: null,
    body: null,
    status: 200,
    response: DeviceList,
    handle: async (_in, ctx) => ({ devices: await listDevices(ctx) }),
  }),
  adminRoute({
    id: 'bindDevice',
    method: 'POST',
    path: '/devices/bind',
    summary: 'Binds the device that speaks this code, optionally to an agent and with an alias.',
    auth: true,
    params: null,
    body: BindBody,
    status: 201,
    response: DeviceView,
    errors: { 404: 'no pending code like this (unknown or expired)', 409: 'the registry is full' },
    handle: async ({ body }, ctx) => {
      await requireAgent(ctx, body.agent, 'body.agent');
      const r = await ctx.store.registry.bind(body.code, {
        ...(body.agent ? { agent: body.agent } : {}),
        ...(body.alias ? { alias: body.alias } : {}),
      });
      if (!r.ok) throw new AdminError(r.reason === 'registry full' ? 409 : 404, r.reason, 'body.code');
      ctx.log.info({ deviceId: r.device.deviceId, agent: body.agent ?? null }, 'admin: device bound');
      const online = await onlineDevices(ctx);
      return boundView(r.device, await ctx.store.devices.get(r.device.deviceId), online.has(r.device.deviceId));
    },
  }),
  adminRoute({
    id: 'updateDevice',
    method: 'PATCH',
    path: '/devices/{deviceId}',
    summary:
      "Renames a device or moves it to another agent (null: the default agent); applies from the device's next turn.",
    auth: true,
    params: DeviceParams,
    body: DevicePatchBody,
    status: 200,
    response: DeviceView,
    errors: { 404: 'no such device' },
    handle: async ({ params, body }, ctx) => {
      await requireAgent(ctx, body.agent, 'body.agent');
      const patch = {
        ...(body.agent !== undefined ? { agent: body.agent } : {}),
        ...(body.alias !== undefined ? { alias: body.alias } : {}),
      };
      const updated = await ctx.store.devices.update(params.deviceId, patch);
      if (!updated) throw new AdminError(404, `no device ${params.deviceId}`, 'params.deviceId');
      ctx.log.info({ deviceId: params.deviceId, ...patch }, 'admin: device updated');
      const view = await deviceView(ctx, params.deviceId);
      if (!view) throw new AdminError(404, `no device ${params.deviceId}`, 'params.deviceId');
      return view;
    },
  }),
  adminRoute({
    id: 'revokeDevice',
    method: 'DELETE',
    path: '/devices/{deviceId}',
    summary: 'Revokes the binding of a device: its token stops working and its open session ends.',
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: RevokeResult,
    errors: { 404: 'the device is not bound' },
    handle: async ({ params }, ctx) => {
      const gone = await ctx.store.registry.revoke(params.deviceId);
      if (gone.length === 0) throw new AdminError(404, `device ${params.deviceId} is not bound`, 'params.deviceId');
      ctx.log.info({ deviceId: params.deviceId }, 'admin: device revoked');
      return { revoked: gone.map((d) => ({ bindingId: d.id, deviceId: d.deviceId, clientId: d.clientId })) };
    },
  }),
];
