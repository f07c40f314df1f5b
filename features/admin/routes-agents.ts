/**
 * @module Agents: list, create, read, patch (a merge: see agent-views.ts) and delete. Settings are
 * validated with the agent settings schema on the way in; the API key is write-only.
 */
import { AgentSettingsSchema, realtimeBlockMissing, type AgentSettings } from '../agents/index.ts';
import { AdminError, adminRoute, type AdminContext } from './route.ts';
import { AgentCreateBody, AgentList, AgentParams, AgentPatchBody, AgentView } from './schemas.ts';
import { agentView, apiKeysOf, mergeSettings } from './agent-views.ts';

function rememberKeys(ctx: AdminContext, settings: Record<string, unknown>): void {
  for (const key of apiKeysOf(settings)) ctx.onSecret(key);
}

/** A realtime pipeline needs a model to talk through: the agent's block or the configuration's. */
function checkPipeline(ctx: AdminContext, settings: AgentSettings): void {
  const missing = realtimeBlockMissing(settings, ctx.defaultRealtime);
  if (missing !== null) throw new AdminError(400, `body.settings.realtime: ${missing}`, 'body.settings.realtime');
}

export const agentRoutes = [
  adminRoute({
    id: 'listAgents',
    method: 'GET',
    path: '/agents',
    summary: 'Every agent, without API keys.',
    auth: true,
    params: null,
    body: null,
    status: 200,
    response: AgentList,
    handle: async (_in, ctx) => ({ agents: (await ctx.store.agents.list()).map(agentView) }),
  }),
  adminRoute({
    id: 'createAgent',
    method: 'POST',
    path: '/agents',
    summary: "Creates an agent; settings left unset fall back to the server's configuration.",
    auth: true,
    params: null,
    body: AgentCreateBody,
    status: 201,
    response: AgentView,
    errors: { 409: 'an agent of that name exists' },
    handle: async ({ body }, ctx) => {
      checkPipeline(ctx, body.settings);
      rememberKeys(ctx, body.settings);
      const row = await ctx.store.agents.create(body.name, body.settings);
      if (!row) throw new AdminError(409, `agent "${body.name}" exists already`, 'body.name');
      ctx.log.info({ agent: body.name }, 'admin: agent created');
      return agentView(row);
    },
  }),
  adminRoute({
    id: 'getAgent',
    method: 'GET',
    path: '/agents/{name}',
    summary: 'One agent, without its API key.',
    auth: true,
    params: AgentParams,
    body: null,
    status: 200,
    response: AgentView,
    errors: { 404: 'no such agent' },
    handle: async ({ params }, ctx) => {
      const row = await ctx.store.agents.get(params.name);
      if (!row) throw new AdminError(404, `no agent "${params.name}"`, 'params.name');
      return agentView(row);
    },
  }),
  adminRoute({
    id: 'updateAgent',
    method: 'PATCH',
    path: '/agents/{name}',
    summary:
      "Changes an agent's settings: a key given replaces, null removes, absent keeps (llm merged key by key; a tts, asr or realtime block given without its key keeps the stored one). Applies from each device's next turn.",
    auth: true,
    params: AgentParams,
    body: AgentPatchBody,
    status: 200,
    response: AgentView,
    errors: { 404: 'no such agent' },
    handle: async ({ params, body }, ctx) => {
      const row = await ctx.store.agents.get(params.name);
      if (!row) throw new AdminError(404, `no agent "${params.name}"`, 'params.name');
      const merged = AgentSettingsSchema.safeParse(mergeSettings(row.settings, body.settings));
      if (!merged.success) {
        const issue = merged.error.issues[0];
        const field = ['body', 'settings', ...(issue?.path ?? [])].join('.');
        throw new AdminError(400, `${field}: ${issue?.message ?? 'invalid'}`, field);
      }
      checkPipeline(ctx, merged.data);
      rememberKeys(ctx, merged.data);
      const updated = await ctx.store.agents.update(params.name, merged.data);
      if (!updated) throw new AdminError(404, `no agent "${params.name}"`, 'params.name');
      ctx.log.info({ agent: params.name, changed: Object.keys(body.settings) }, 'admin: agent updated');
      return agentView(updated);
    },
  }),
  adminRoute({
    id: 'deleteAgent',
    method: 'DELETE',
    path: '/agents/{name}',
    summary: 'Deletes an agent; its devices fall back to the default agent.',
    auth: true,
    params: AgentParams,
    body: null,
    status: 204,
    response: null,
    errors: { 404: 'no such agent' },
    handle: async ({ params }, ctx) => {
      if (!(await ctx.store.agents.delete(params.name)))
        throw new AdminError(404, `no agent "${params.name}"`, 'params.name');
      ctx.log.info({ agent: params.name }, 'admin: agent deleted');
      return undefined;
    },
  }),
];
