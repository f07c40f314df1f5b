/**
 * @module The MCP endpoint's WebSocket route (`/mcp/`): a user's own bridge (mcp_pipe.py,
 * xiaozhi-client, any MCP SDK program) dials in with `?token=T` or `Authorization: Bearer T` and
 * serves MCP over the socket; the server is the client. The token is checked before the upgrade
 * (401 otherwise, with failed attempts spending a per-address budget); connections per address are
 * bounded (429). An accepted bridge is initialized and listed, then joins its agent's tools.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { RateLimit } from '../../core/token-bucket.ts';
import type { McpTokens } from '../../store/mcp-endpoint-tokens.ts';
import { addressKey, clientAddress } from '../../core/address-key.ts';
import { PerIpLimits } from '../../core/per-ip-limits.ts';
import { Bridge } from './bridge.ts';
import type { BridgeHub } from './hub.ts';

export const MCP_ENDPOINT_PATH = '/mcp/';

export interface McpEndpointRouteOptions {
  hub: BridgeHub;
  tokens: McpTokens;
  /** Upgrade attempts per address (failed ones) and per address and agent (valid ones). */
  upgradeRate: RateLimit;
  retryAfterS: number;
  /** How often connected bridges' tokens are checked again (revoked through another replica), ms. */
  recheckMs?: number;
  /** Told each token a bridge presents that is valid, for log redaction by value. */
  onSecret?: (value: string) => void;
}

/** The token from `?token=` or `Authorization: Bearer`; '' when there is none. */
export function presentedToken(request: FastifyRequest): string {
  const q = request.query as Record<string, unknown> | undefined;
  if (typeof q?.token === 'string' && q.token !== '') return q.token;
  const auth = request.headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return m?.[1] ?? '';
}

/** `?bridge=NAME`: what a bridge asks to be called (and told apart from others by). */
function requestedName(request: FastifyRequest): string | undefined {
  const q = request.query as Record<string, unknown> | undefined;
  const v = q?.bridge;
  return typeof v === 'string' && /^[\w .:-]{1,64}$/.test(v) ? v : undefined;
}

export async function mcpEndpointRoute(app: FastifyInstance, opts: McpEndpointRouteOptions): Promise<void> {
  const { hub } = opts;
  const perIp = new PerIpLimits(opts.upgradeRate);
  const agentOf = new WeakMap<FastifyRequest, string>();
  const tokenOf = new WeakMap<FastifyRequest, string>();
  // A token revoked or rotated through another replica's admin API: its bridges here are closed
  // at the next check (this replica's own admin API closes them at once).
  const live = new Map<Bridge, string>();
  const recheck = setInterval(() => {
    // One look-up per token, however many of its agent's bridges are connected.
    const byToken = new Map<string, Bridge[]>();
    for (const [bridge, token] of live) byToken.set(token, [...(byToken.get(token) ?? []), bridge]);
    for (const [token, bridges] of byToken) {
      opts.tokens
        .verify(token)
        .then((agent) => {
          for (const bridge of bridges) if (agent !== bridge.agent) bridge.close(1008, 'token revoked');
        })
        .catch(() => undefined);
    }
  }, opts.recheckMs ?? 10_000);
  recheck.unref();

  const preValidation = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const address = addressKey(request);
    const token = presentedToken(request);
    const agent = token === '' ? undefined : await opts.tokens.verify(token);
    const budget = agent === undefined ? perIp.takeUpgrade(address) : perIp.takeAuthenticatedUpgrade(address, agent);
    if (!budget) {
      await reply
        .code(429)
        .header('retry-after', String(opts.retryAfterS))
        .send({ error: 'too many connection attempts' });
      return;
    }
    if (agent === undefined) {
      request.log.warn(
        { remote: clientAddress(request), token: token === '' ? 'none' : 'unknown' },
        'mcp endpoint: bridge refused (no valid token)',
      );
      await reply.code(401).send({ error: 'unauthorized: unknown or revoked MCP endpoint token' });
      return;
    }
    if (hub.connections(address) >= hub.limits.maxConnectionsPerAddress) {
      await reply.code(429).send({ error: 'too many MCP endpoint connections from this address' });
      return;
    }
    opts.onSecret?.(token);
    agentOf.set(request, agent);
    tokenOf.set(request, token);
  };

  const handler = (socket: WebSocket, request: FastifyRequest): void => {
    const agent = agentOf.get(request);
    const address = addressKey(request);
    if (agent === undefined) {
      socket.close(1008, 'unauthorized');
      return;
    }
    // Counted once connected (an upgrade that never completes holds nothing); two upgrades racing
    // past the check above are caught here.
    if (!hub.admit(address)) {
      socket.close(1008, 'too many MCP endpoint connections from this address');
      return;
    }
    const id = randomUUID();
    const log = request.log.child({ part: 'mcp-endpoint', agent, bridgeId: id });
    const name = requestedName(request);
    const bridge = new Bridge({
      ws: socket,
      agent,
      id,
      ...(name !== undefined ? { requestedName: name } : {}),
      address,
      limits: hub.limits,
      log,
      onToolsChanged: () => hub.toolsChanged(agent),
    });
    hub.opened(bridge);
    live.set(bridge, tokenOf.get(request) ?? '');
    bridge.onClosed((reason) => {
      live.delete(bridge);
      hub.released(address);
      log.info({ bridge: bridge.name, reason }, 'mcp endpoint: bridge disconnected');
    });
    bridge
      .start()
      .then(async () => {
        if (bridge.closed || !(await hub.join(bridge))) return;
        log.info(
          {
            bridge: bridge.name,
            server: bridge.serverInfo,
            protocolVersion: bridge.protocolVersion,
            tools: bridge.tools.length,
            remote: clientAddress(request),
          },
          'mcp endpoint: bridge connected',
        );
      })
      .catch((err: unknown) =>
        log.warn(
          { remote: clientAddress(request), err: (err as Error).message },
          'mcp endpoint: bridge refused during set-up',
        ),
      );
  };

  app.get(MCP_ENDPOINT_PATH, { websocket: true, preValidation }, handler);
  app.get(MCP_ENDPOINT_PATH.slice(0, -1), { websocket: true, preValidation }, handler);
  // The bridges themselves are closed (1001) by the app's first preClose hook, before the
  // WebSocket plugin closes every socket without a code.
  app.addHook('preClose', async () => {
    clearInterval(recheck);
    await hub.stop();
  });
}
