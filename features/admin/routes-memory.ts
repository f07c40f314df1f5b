/**
 * @module A device's memory for operators: its stored conversation turns (every agent), what it
 * remembers (facts and summaries per agent), which identity pairs (Client-Ids of the MAC) hold
 * memory, deleting it (all, or one pair's), and moving one pair's memory to another. Memory
 * belongs to the pair: a new Client-Id for a known MAC (a re-flashed device, or in open mode anyone
 * who knows the MAC) starts empty until the operator moves the memory over. Texts are returned as
 * stored (the user's words); the console shows them as text, never as markup.
 */
import { z } from 'zod';
import { ClientIdSchema } from '../../protocol/ota.ts';
import { AdminError, adminRoute } from './route.ts';
import { DeviceParams } from './schemas.ts';

/** Stored turn messages returned at most (the newest). */
const HISTORY_LIMIT = 200;
/**
 * Pairs, facts and summaries returned at most: in open mode anyone may invent Client-Ids for a
 * known MAC, each holding memory of its own.
 */
const PAIRS_LIMIT = 100;
const FACTS_LIMIT = 500;
const SUMMARIES_LIMIT = 100;

/** A pair's Client-Id; null: rows kept from before memory was per pair, of a device without a record (no session reads them until moved). */
const HolderClientId = z.string().nullable();

const HistoryView = z.object({
  deviceId: z.string(),
  turns: z.array(
    z.object({
      id: z.number(),
      clientId: HolderClientId,
      agent: z.string(),
      role: z.enum(['user', 'assistant', 'tool']),
      text: z.string(),
      createdAt: z.string(),
    }),
  ),
});

const MemoryView = z.object({
  deviceId: z.string(),
  /** The pair the device's record names (the last seen at OTA or a session start): where a move usually goes. */
  currentClientId: z.string().nullable(),
  /** The pairs that hold memory, the most recently talking first. */
  clients: z.array(
    z.object({
      clientId: HolderClientId,
      turns: z.number(),
      facts: z.number(),
      summaries: z.number(),
      lastAt: z.string().nullable(),
    }),
  ),
  facts: z.array(
    z.object({ id: z.number(), clientId: HolderClientId, agent: z.string(), text: z.string(), createdAt: z.string() }),
  ),
  summaries: z.array(
    z.object({ clientId: HolderClientId, agent: z.string(), text: z.string(), updatedAt: z.string() }),
  ),
});

const MemoryDeleted = z.object({ deviceId: z.string(), clientId: z.string().optional(), deleted: z.literal(true) });

const PairParams = DeviceParams.extend({ clientId: ClientIdSchema });

export const MoveMemoryBody = z.strictObject({
  /** The pair whose memory moves; null: the unassigned rows. */
  from: ClientIdSchema.nullable(),
  /** The pair that gets it. */
  to: ClientIdSchema,
});

const MemoryMoved = z.object({
  deviceId: z.string(),
  from: z.string().nullable(),
  to: z.string(),
  moved: z.object({
    turns: z.number(),
    facts: z.number(),
    summaries: z.number(),
    reminders: z.number(),
    messages: z.number(),
  }),
});

export const memoryRoutes = [
  adminRoute({
    id: 'deviceHistory',
    method: 'GET',
    path: '/devices/{deviceId}/history',
    summary: `A device's stored conversation turns with every agent and of every pair (Client-Id), oldest first (the newest ${HISTORY_LIMIT}).`,
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: HistoryView,
    handle: async ({ params }, ctx) => ({
      deviceId: params.deviceId,
      turns: await ctx.store.memory.history(params.deviceId, HISTORY_LIMIT),
    }),
  }),
  adminRoute({
    id: 'deviceMemory',
    method: 'GET',
    path: '/devices/{deviceId}/memory',
    summary: `What a device remembers, per pair (Client-Id) and agent: the facts its user asked it to remember (the newest ${FACTS_LIMIT}) and the running summaries (the newest ${SUMMARIES_LIMIT}), and which pairs hold memory (the ${PAIRS_LIMIT} most recently talking).`,
    auth: true,
    params: DeviceParams,
    body: null,
    status: 200,
    response: MemoryView,
    handle: async ({ params }, ctx) => {
      const [record, clients, facts, summaries] = await Promise.all([
        ctx.store.devices.get(params.deviceId),
        ctx.store.memory.holders(params.deviceId, PAIRS_LIMIT),
        ctx.store.memory.allFacts(params.deviceId, FACTS_LIMIT),
        ctx.store.memory.summaries(params.deviceId, SUMMARIES_LIMIT),
      ]);
      return {
        deviceId: params.deviceId,
        currentClientId: record?.clientId ?? null,
        clients,
        facts,
        summaries: summaries.map((s) => ({
          clientId: s.clientId,
          agent: s.agent,
          text: s.text,
          updatedAt: s.updatedAt,
        })),
      };
    },
  }),
  adminRoute({
    id: 'deleteDeviceMemory',
    method: 'DELETE',
    path: '/devices/{deviceId}/memory',
    summary:
      "Deletes a device's stored turns, facts and summaries of every pair with every agent; its next session starts with nothing.",
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
  adminRoute({
    id: 'deletePairMemory',
    method: 'DELETE',
    path: '/devices/{deviceId}/memory/{clientId}',
    summary:
      "Deletes one pair's (Client-Id's) stored turns, facts and summaries; the device's other pairs keep theirs.",
    auth: true,
    params: PairParams,
    body: null,
    status: 200,
    response: MemoryDeleted,
    handle: async ({ params }, ctx) => {
      await ctx.store.memory.deleteDevice(params.deviceId, params.clientId);
      ctx.log.info({ deviceId: params.deviceId, clientId: params.clientId }, 'admin: memory of one pair deleted');
      return { deviceId: params.deviceId, clientId: params.clientId, deleted: true as const };
    },
  }),
  adminRoute({
    id: 'moveDeviceMemory',
    method: 'POST',
    path: '/devices/{deviceId}/memory/move',
    summary:
      'Gives everything one pair (Client-Id) of the device holds to another pair of it: turns, facts (past 50 per agent the oldest go), summaries (where both hold one for an agent, the one covering newer turns stays), reminders and waiting messages. For a device whose Client-Id changed (a re-flash): a new Client-Id for a known MAC starts empty until then. `from` null moves the rows kept from before memory was per pair.',
    auth: true,
    params: DeviceParams,
    body: MoveMemoryBody,
    status: 200,
    response: MemoryMoved,
    errors: { 404: 'the pair `from` holds nothing to move' },
    handle: async ({ params, body }, ctx) => {
      if (body.from === body.to) throw new AdminError(400, 'body.to: the same pair as body.from', 'body.to');
      const moved = await ctx.store.memory.move(params.deviceId, body.from, body.to);
      if (Object.values(moved).every((n) => n === 0))
        throw new AdminError(
          404,
          `device ${params.deviceId}: ${body.from === null ? 'no unassigned memory' : `pair ${body.from} holds nothing`} to move`,
          'body.from',
        );
      ctx.log.info(
        { deviceId: params.deviceId, from: body.from, to: body.to, ...moved },
        'admin: device memory moved to another pair',
      );
      return { deviceId: params.deviceId, from: body.from, to: body.to, moved };
    },
  }),
];
