/**
 * @module A device's memory for operators: its stored conversation turns (every agent), what it
 * remembers (facts and summaries per agent), and deleting all of it. Texts are returned as stored
 * (the user's words); the console shows them as text, never as markup.
 */
import { z } from 'zod';
import { adminRoute } from './route.ts';
import { DeviceParams } from './schemas.ts';

/** Stored turn messages returned at most (the newest). */
const HISTORY_LIMIT = 200;

const HistoryView = z.object({
  deviceId: z.string(),
  turns: z.array(z.object({ id: z.number(), agent: z.string(), role: z.enum(['user', 'assistant', 'tool']), text: z.string(), createdAt: z.string() })),
});

const MemoryView = z.object({
  deviceId: z.string(),
  facts: z.array(z.object({ id: z.number(), agent: z.string(), text: z.string(), createdAt: z.string() })),
  summaries: z.array(z.object({ agent: z.string(), text: z.string(), updatedAt: z.string() })),
});

const MemoryDeleted = z.object({ deviceId: z.string(), deleted: z.literal(true) });

export const memoryRoutes = [
  adminRoute({
    id: 'deviceHistory',
    method: 'GET',
    path: '/devices/{deviceId}/history',
    summary: `A device's stored conversation turns with every agent, oldest first (the newest ${HISTORY_LIMIT}).`,
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: HistoryView,
    handle: async ({ params }, ctx) => ({ deviceId: params.deviceId, turns: await ctx.store.memory.history(params.deviceId, HISTORY_LIMIT) }),
  }),
  adminRoute({
    id: 'deviceMemory',
    method: 'GET',
    path: '/devices/{deviceId}/memory',
    summary: 'What a device remembers: the facts its user asked it to remember and the running summary, per agent.',
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: MemoryView,
    handle: async ({ params }, ctx) => {
      const [facts, summaries] = await Promise.all([ctx.store.memory.allFacts(params.deviceId), ctx.store.memory.summaries(params.deviceId)]);
      return { deviceId: params.deviceId, facts, summaries: summaries.map((s) => ({ agent: s.agent, text: s.text, updatedAt: s.updatedAt })) };
    },
  }),
  adminRoute({
    id: 'deleteDeviceMemory',
    method: 'DELETE',
    path: '/devices/{deviceId}/memory',
    summary: "Deletes a device's stored turns, facts and summaries with every agent; its next session starts with nothing.",
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: MemoryDeleted,
    handle: async ({ params }, ctx) => {
      await ctx.store.memory.deleteDevice(params.deviceId);
      ctx.log.info({ deviceId: params.deviceId }, 'admin: device memory deleted');
      return { deviceId: params.deviceId, deleted: true as const };
    },
  }),
];
