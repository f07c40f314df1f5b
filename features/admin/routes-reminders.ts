/**
 * @module A device's reminders for operators: the ones waiting to ring (soonest first) and
 * cancelling one. Texts are returned as stored (the user's words); the console shows them as text.
 */
import { z } from 'zod';
import { AdminError, adminRoute } from './route.ts';
import { DeviceParams } from './schemas.ts';

const ReminderParams = DeviceParams.extend({ id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });

const ReminderView = z.object({
  id: z.number(),
  /** The pair it was set from, and is spoken on. */
  clientId: z.string(),
  /** The device's agent when it was set. */
  agent: z.string().nullable(),
  text: z.string(),
  /** When it rings (UTC). */
  dueAt: z.string(),
  /** `firing`: a replica is delivering it now. */
  state: z.enum(['pending', 'firing']),
  createdAt: z.string(),
});

const RemindersView = z.object({ deviceId: z.string(), reminders: z.array(ReminderView) });
const ReminderDeleted = z.object({ deviceId: z.string(), id: z.number(), deleted: z.literal(true) });

export const reminderRoutes = [
  adminRoute({
    id: 'deviceReminders',
    method: 'GET',
    path: '/devices/{deviceId}/reminders',
    summary: "A device's reminders waiting to ring, soonest first.",
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: RemindersView,
    handle: async ({ params }, ctx) => ({
      deviceId: params.deviceId,
      reminders: (await ctx.store.reminders.list(params.deviceId)).map((r) => ({
        id: r.id,
        clientId: r.clientId,
        agent: r.agent,
        text: r.text,
        dueAt: new Date(r.dueMs).toISOString(),
        state: r.state,
        createdAt: r.createdAt,
      })),
    }),
  }),
  adminRoute({
    id: 'deleteDeviceReminder',
    method: 'DELETE',
    path: '/devices/{deviceId}/reminders/{id}',
    summary: "Cancels one of a device's reminders.",
    auth: true,
    params: ReminderParams,
    body: null,
    status: 200,
    response: ReminderDeleted,
    errors: { 404: 'the device has no reminder with this id' },
    handle: async ({ params }, ctx) => {
      if (!(await ctx.store.reminders.cancel(params.deviceId, params.id)))
        throw new AdminError(404, `device ${params.deviceId} has no reminder ${params.id}`, 'params.id');
      ctx.log.info({ deviceId: params.deviceId, id: params.id }, 'admin: reminder cancelled');
      return { deviceId: params.deviceId, id: params.id, deleted: true as const };
    },
  }),
];
