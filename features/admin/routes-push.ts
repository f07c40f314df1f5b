/**
 * @module Speech the operator starts: `POST /devices/{deviceId}/say` speaks a text on the device in
 * its agent's voice wherever it is (features/push/), and answers how it was delivered. The status
 * follows the outcome: 200 delivered (spoken now or after the running turn, or sent to an idle
 * device), 202 queued until the device connects, 404 unknown device, 409 offline with the queue
 * off, 429 over the device's `push.rate`.
 */
import { z } from 'zod';
import { ClientIdSchema } from '../../protocol/ota.ts';
import { AdminError, adminRoute } from './route.ts';
import { DeviceParams } from './schemas.ts';
import type { SayOutcome } from '../push/index.ts';

export const SayBody = z.strictObject({
  /** Cut to `push.maxChars`. */
  text: z.string().trim().min(1, 'must not be empty').max(2000, 'at most 2000 characters'),
  /** Abort a turn in progress instead of waiting for it. */
  interrupt: z.boolean().optional(),
  /**
   * The device's Client-Id: only this pair hears it. Absent: the most recently connected pair of the
   * MAC (in open mode anyone who asks OTA with the MAC can be that pair: name it to be sure).
   */
  clientId: ClientIdSchema.optional(),
});

export const SayOutcomeView = z.object({
  status: z.enum(['spoken', 'after_turn', 'notified', 'alerted', 'queued', 'refused']),
  reason: z.enum(['offline', 'rate_limited', 'unknown_device', 'empty']).optional(),
  /** The replica that delivered it. */
  replica: z.string().optional(),
  /** The queued message's id. */
  id: z.string().optional(),
});

/** The HTTP status of an outcome. */
export function sayStatus(o: SayOutcome): number {
  if (o.status === 'queued') return 202;
  if (o.status !== 'refused') return 200;
  if (o.reason === 'unknown_device') return 404;
  if (o.reason === 'offline') return 409;
  if (o.reason === 'rate_limited') return 429;
  return 400;
}

export const pushRoutes = [
  adminRoute({
    id: 'sayOnDevice',
    method: 'POST',
    path: '/devices/{deviceId}/say',
    summary:
      "Speaks a text on the device (one Device-Id + Client-Id pair: `clientId`, else the MAC's most recently connected pair) in its agent's voice: now when idle, after the running turn (or at once with interrupt), as a notify/alert to an idle MQTT device, or queued until that pair connects.",
    auth: true,
    params: DeviceParams,
    body: SayBody,
    status: 200,
    response: SayOutcomeView,
    statusOf: (result) => sayStatus(result as SayOutcome),
    answers: {
      202: 'queued: the device is offline; delivered when it next connects (push.queueTtlMs)',
      404: 'refused: unknown device',
      409: 'refused: the device is offline and the queue is off',
      429: "refused: over the device's push.rate",
    },
    errors: { 503: 'server-initiated speech is not served by this server' },
    handle: async ({ params, body }, ctx) => {
      if (!ctx.push) throw new AdminError(503, 'server-initiated speech is not served here');
      return ctx.push.say({
        deviceId: params.deviceId,
        text: body.text,
        source: 'admin',
        ...(body.interrupt !== undefined ? { interrupt: body.interrupt } : {}),
        ...(body.clientId ? { clientId: body.clientId } : {}),
      });
    },
  }),
];
