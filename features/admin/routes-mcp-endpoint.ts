/**
 * @module An agent's MCP endpoint: create or rotate its token (the answer carries the full URL to
 * paste into a bridge's `MCP_ENDPOINT`; the token is shown only then), see the bridges connected to
 * this process and their tools, and revoke the token (its bridges are closed).
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import { AdminError, adminRoute, type AdminContext } from './route.ts';
import { AgentParams } from './schemas.ts';
import { MCP_ENDPOINT_PATH } from '../mcp-endpoint/index.ts';

const BridgeView = z.object({
  id: z.string(),
  /** The server process (replica) it is connected to. */
  replica: z.string(),
  name: z.string(),
  server: z.object({ name: z.string(), version: z.string() }).nullable(),
  protocolVersion: z.string().nullable(),
  address: z.string(),
  connectedAt: z.string(),
  toolCount: z.number().int(),
  tools: z.array(z.string()),
});

const EndpointCreated = z.object({ url: z.string(), token: z.string(), createdAt: z.string() });
const EndpointStatus = z.object({
  agent: z.string(),
  /** Whether the agent has a token (the token itself is never shown again). */
  enabled: z.boolean(),
  tokenCreatedAt: z.string().nullable(),
  /** The URL without the token. */
  url: z.string(),
  bridges: z.array(BridgeView),
  toolCount: z.number().int(),
});

/** `ws(s)://host/mcp/` from the configured public URL or the request's own host and scheme. */
export function endpointBase(request: FastifyRequest, publicUrl: string): string {
  if (publicUrl) return publicUrl;
  const proto = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim();
  const secure = proto === 'https' || request.protocol === 'https';
  const forwardedHost = String(request.headers['x-forwarded-host'] ?? '')
    .split(',')[0]
    ?.trim();
  const host = forwardedHost || request.headers.host || request.hostname;
  return `${secure ? 'wss' : 'ws'}://${host}${MCP_ENDPOINT_PATH}`;
}

function endpointOf(ctx: AdminContext): NonNullable<AdminContext['mcpEndpoint']> {
  if (!ctx.mcpEndpoint) throw new AdminError(503, 'the MCP endpoint is not served by this process');
  return ctx.mcpEndpoint;
}

async function requireAgent(ctx: AdminContext, name: string): Promise<void> {
  if (!(await ctx.store.agents.get(name))) throw new AdminError(404, `no agent "${name}"`, 'params.name');
}

export const mcpEndpointRoutes = [
  adminRoute({
    id: 'createMcpEndpoint',
    method: 'POST',
    path: '/agents/{name}/mcp-endpoint',
    summary:
      "Creates or rotates the agent's MCP endpoint token; answers the URL a bridge dials (the token is shown only here). Bridges on the old token are closed.",
    auth: true,
    params: AgentParams,
    body: null,
    status: 201,
    response: EndpointCreated,
    errors: { 404: 'no such agent', 503: 'the MCP endpoint is not served' },
    handle: async ({ params }, ctx, { request }) => {
      const ep = endpointOf(ctx);
      await requireAgent(ctx, params.name);
      const { token, createdAt } = await ctx.store.mcpTokens.issue(params.name);
      ctx.onSecret(token);
      const closed = ep.hub.closeAgent(params.name, 'token rotated');
      ctx.log.info({ agent: params.name, closedBridges: closed }, 'admin: MCP endpoint token issued');
      return { url: `${endpointBase(request, ep.publicUrl)}?token=${token}`, token, createdAt };
    },
  }),
  adminRoute({
    id: 'getMcpEndpoint',
    method: 'GET',
    path: '/agents/{name}/mcp-endpoint',
    summary:
      "The agent's MCP endpoint: whether it has a token, and the bridges connected (to any replica) with their tools.",
    auth: true,
    params: AgentParams,
    body: null,
    status: 200,
    response: EndpointStatus,
    errors: { 404: 'no such agent', 503: 'the MCP endpoint is not served' },
    handle: async ({ params }, ctx, { request }) => {
      const ep = endpointOf(ctx);
      await requireAgent(ctx, params.name);
      const info = await ctx.store.mcpTokens.info(params.name);
      const bridges = (await ep.hub.statusEverywhere(params.name)).map((b) => ({ ...b, toolCount: b.tools.length }));
      return {
        agent: params.name,
        enabled: info !== undefined,
        tokenCreatedAt: info?.createdAt ?? null,
        url: endpointBase(request, ep.publicUrl),
        bridges,
        toolCount: bridges.reduce((n, b) => n + b.toolCount, 0),
      };
    },
  }),
  adminRoute({
    id: 'deleteMcpEndpoint',
    method: 'DELETE',
    path: '/agents/{name}/mcp-endpoint',
    summary: "Revokes the agent's MCP endpoint token and closes its bridges.",
    auth: true,
    params: AgentParams,
    body: null,
    status: 204,
    response: null,
    errors: { 404: 'no such agent or no token', 503: 'the MCP endpoint is not served' },
    handle: async ({ params }, ctx) => {
      const ep = endpointOf(ctx);
      await requireAgent(ctx, params.name);
      const had = await ctx.store.mcpTokens.revoke(params.name);
      const closed = ep.hub.closeAgent(params.name, 'token revoked');
      if (!had) throw new AdminError(404, `agent "${params.name}" has no MCP endpoint token`, 'params.name');
      ctx.log.info({ agent: params.name, closedBridges: closed }, 'admin: MCP endpoint token revoked');
      return undefined;
    },
  }),
];
