/** @module The admin API's route table: what plugin.ts registers and openapi.ts describes. */
import { z } from 'zod';
import { adminRoute, type AdminRoute } from './route.ts';
import { deviceRoutes } from './routes-devices.ts';
import { memoryRoutes } from './routes-memory.ts';
import { reminderRoutes } from './routes-reminders.ts';
import { agentRoutes } from './routes-agents.ts';
import { sessionRoutes } from './routes-session.ts';
import { mcpEndpointRoutes } from './routes-mcp-endpoint.ts';
import { pushRoutes } from './routes-push.ts';
import { visionRoutes } from './routes-vision.ts';
import { SessionList } from './schemas.ts';
import { openApiDocument } from './openapi.ts';

const liveSessionRoutes = [
  adminRoute({
    id: 'listSessions',
    method: 'GET',
    path: '/sessions',
    summary: 'Who is connected now: device, agent, replica and since when (every replica).',
    auth: true,
    params: null,
    body: null,
    status: 200,
    response: SessionList,
    handle: async (_in, ctx) => ({ sessions: await ctx.store.sessions.list() }),
  }),
];

const openApiRoute = adminRoute({
  id: 'openApi',
  method: 'GET',
  path: '/openapi.json',
  summary: 'This document.',
  auth: true,
  params: null,
  body: null,
  status: 200,
  response: z.looseObject({ openapi: z.literal('3.1.0') }),
  handle: async () => openApiDocument(ADMIN_ROUTES),
});

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  ...sessionRoutes,
  ...deviceRoutes,
  ...pushRoutes,
  ...memoryRoutes,
  ...reminderRoutes,
  ...agentRoutes,
  ...mcpEndpointRoutes,
  ...visionRoutes,
  ...liveSessionRoutes,
  openApiRoute,
];
