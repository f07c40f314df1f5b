/**
 * @module The camera endpoint for operators (features/vision/): which model each agent's photos go
 * to (never its key), and a device's last photo when `vision.keepLast` keeps one, to look at and
 * delete. A photo is returned as base64 in JSON, shown by the console as a `data:` image.
 */
import { z } from 'zod';
import type { Vision, VisionChoice } from '../vision/index.ts';
import { AdminError, adminRoute, type AdminContext } from './route.ts';
import { DeviceParams } from './schemas.ts';

const ModelView = z.object({
  model: z.string(),
  baseURL: z.string(),
  /** chat: the agent's chat model (`llm.images`); agent: its `vision` block; config: the configuration's `vision`. */
  source: z.enum(['chat', 'agent', 'config']),
});

export const VisionOverview = z.object({
  /** `vision.enabled`: the endpoint is served and advertised. */
  enabled: z.boolean(),
  /** `vision.keepLast`: each device's last photo is kept for this view. */
  keepLast: z.boolean(),
  /** The configuration's own (a device without an agent); null: no model set. */
  default: ModelView.nullable(),
  /** Per agent; null: no model set for it. */
  agents: z.record(z.string(), ModelView.nullable()),
});

export const LastPhotoView = z.object({
  deviceId: z.string(),
  mime: z.enum(['image/jpeg', 'image/png']),
  width: z.number(),
  height: z.number(),
  bytes: z.number(),
  question: z.string(),
  answer: z.string().nullable(),
  at: z.string(),
  base64: z.string(),
});

function visionOf(ctx: AdminContext): Vision {
  if (!ctx.vision) throw new AdminError(503, 'the vision endpoint is not part of this server');
  return ctx.vision;
}

const view = (c: VisionChoice | null): z.infer<typeof ModelView> | null =>
  c ? { model: c.model.model, baseURL: c.model.baseURL, source: c.source } : null;

export const visionRoutes = [
  adminRoute({
    id: 'visionOverview',
    method: 'GET',
    path: '/vision',
    summary: "Whether the camera endpoint is on, and the model each agent's photos go to.",
    auth: true,
    params: null,
    body: null,
    status: 200,
    response: VisionOverview,
    handle: async (_in, ctx) => {
      // A server built without the camera endpoint answers "off": the console asks on every
      // agents view, and "not served" is an answer to that question, not an error.
      if (!ctx.vision) return { enabled: false, keepLast: false, default: null, agents: {} };
      const vision = ctx.vision;
      const agents: Record<string, z.infer<typeof ModelView> | null> = {};
      for (const a of await ctx.store.agents.list()) agents[a.name] = view(vision.modelOfAgent(a.settings));
      return {
        enabled: vision.enabled,
        keepLast: vision.lastImages !== undefined,
        default: view(vision.modelOfAgent(undefined)),
        agents,
      };
    },
  }),
  adminRoute({
    id: 'getLastPhoto',
    method: 'GET',
    path: '/devices/{deviceId}/vision/last',
    summary: "The device's last camera photo (only with vision.keepLast), with its question and answer.",
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: LastPhotoView,
    errors: { 404: 'no photo kept for this device', 503: 'not served' },
    handle: async ({ params }, ctx) => {
      const last = visionOf(ctx).lastImages?.get(params.deviceId);
      if (!last) throw new AdminError(404, 'no photo kept for this device', 'params.deviceId');
      return {
        deviceId: last.deviceId,
        mime: last.mime,
        width: last.width,
        height: last.height,
        bytes: last.data.length,
        question: last.question,
        answer: last.answer ?? null,
        at: last.at,
        base64: last.data.toString('base64'),
      };
    },
  }),
  adminRoute({
    id: 'deleteLastPhoto',
    method: 'DELETE',
    path: '/devices/{deviceId}/vision/last',
    summary: "Deletes the device's kept camera photo.",
    auth: true,
    params: DeviceParams,
    body: null,
    status: 204,
    response: null,
    errors: { 404: 'no photo kept for this device', 503: 'not served' },
    handle: async ({ params }, ctx) => {
      if (!visionOf(ctx).lastImages?.delete(params.deviceId))
        throw new AdminError(404, 'no photo kept for this device', 'params.deviceId');
      ctx.log.info({ deviceId: params.deviceId }, 'admin: kept camera photo deleted');
      return undefined;
    },
  }),
];
