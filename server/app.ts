/**
 * @module buildApp(deps): the Fastify application without listening, so tests and main.ts wire it
 * the same way. Routes: OTA, the device WebSocket, health, plus the plugins given. It opens the
 * store (`store.url`) first, in every auth mode, unless one is given, and closes what it opened.
 */
import { createServer } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import type { Logger as PinoLogger } from 'pino';
import type { Config } from './config.ts';
import {
  otaRoutes,
  resolveAuthMode,
  verifyBinding,
  verifyStoredBinding,
  guardBrowserHosts,
  OwnHosts,
  createOriginCheck,
} from '../features/identity/index.ts';
import { DEVICE_WS_PATH, deviceWsRoute, webSocketErrorHandler } from '../transport/ws/index.ts';
import {
  DeviceSessions,
  type AdmissionGate,
  type DeviceTransport,
  type RefusalReason,
  type SessionOpenedHook,
} from '../transport/session-door/index.ts';
import { adminConsoleRoutes, webRoutes } from './web-route.ts';
import { adminPlugin } from '../features/admin/index.ts';
import { RequestLogController } from './request-log.ts';
import type { ConversationFactory } from '../voice/session/conversation.ts';
import { SessionRegistry } from '../voice/session/registry.ts';
import { CloseCode } from '../protocol/close-codes.ts';
import type { DeviceRegistry } from '../store/identity-registry-types.ts';
import type { Store } from '../store/store.ts';
import { pairKey } from '../store/pair-key.ts';
import { openConfiguredStore } from './open-store.ts';
import { useAddressSettings } from '../core/address-key.ts';
import { mcpEndpointRoute, bridgeHubFor, type BridgeHub } from '../features/mcp-endpoint/index.ts';
import { ClientIdSchema, DeviceIdSchema } from '../protocol/ota.ts';
import type { Logger } from '../core/logger.ts';
import type { Push } from '../features/push/index.ts';
import { mqttOtaProvider, type MqttTransport } from '../transport/mqtt/index.ts';
import type { Vision } from '../features/vision/index.ts';

interface AppParts {
  config: Config;
  log: PinoLogger;
  /** The store (bindings, device records, agents); absent: opened from `store.url` and closed with the app. */
  store?: Store;
  /**
   * Told every secret value this app creates or hands out (the device-token secret at start, each
   * token OTA issues), so the log redaction can register it by value.
   */
  onSecret?: (value: string, issued?: boolean) => void;
  /** The MCP endpoint's bridges (shared with the sessions' tools); absent: one of the app's own. */
  bridges?: BridgeHub;
  /** Server-initiated speech (the admin API's `say`); absent: that route answers 503. */
  push?: Push;
  /** The camera endpoint (`POST /mcp/vision/explain`), served when `vision.enabled`; the console shows its kept photos. */
  vision?: Vision;
  /** The MQTT+UDP transport (transport/mqtt/), started before the app: OTA hands out its endpoint. */
  mqtt?: MqttTransport;
  /**
   * Transports listening on ports of their own (transport/session-door/contract.ts), started before the app:
   * closed with the device sessions, after them.
   */
  transports?: readonly DeviceTransport[];
  /** Extra route plugins (health, metrics, web client) registered after the core routes. */
  plugins?: Array<(app: FastifyInstance) => Promise<void>>;
}

/**
 * Where device sessions open: the door every transport shares (`deviceSessionsFor`, closed with the
 * app), or, for an app on its own, a conversation factory the app builds its door around (the
 * store's records of each session as its hook).
 */
export type AppDeps = AppParts &
  (
    | { sessions: DeviceSessions; createConversation?: undefined }
    | { createConversation: ConversationFactory; sessions?: undefined }
  );

export interface App {
  fastify: FastifyInstance;
  registry: SessionRegistry;
  /** The store, in every auth mode (device records, agents). */
  store: Store;
  /** The bridges connected to the MCP endpoint. */
  bridges: BridgeHub;
  /** The door every transport opens sessions through (its `registry` is the one above). */
  sessions: DeviceSessions;
  /** activation mode only: the store's registry. Its secret() and every issued token must be redacted from logs by value. */
  devices?: DeviceRegistry;
  /** Stops accepting devices, lets turns finish until `deadline`, closes sessions and the server. */
  shutdown(drainMs: number): Promise<void>;
}

export async function buildApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  // Opened first: an unreachable database stops the start with a message naming store.url.
  const store = deps.store ?? (await openConfiguredStore(config, deps.log));
  try {
    return await buildWithStore(deps, store);
  } catch (err) {
    if (!deps.store) await store.close();
    throw err;
  }
}

async function buildWithStore(deps: AppDeps, store: Store): Promise<App> {
  const { config } = deps;
  const sessions =
    deps.sessions !== undefined
      ? deps.sessions
      : deviceSessionsFor(config, {
          createConversation: deps.createConversation,
          onOpened: [recordSessions(store, config, deps.log)],
        });
  const registry = sessions.registry;
  const fastify = Fastify({
    loggerInstance: deps.log,
    // The firmware's OTA body is a few KB; leave headroom but refuse floods.
    bodyLimit: 256 * 1024,
    forceCloseConnections: true,
    // Per-request lines: info, except the page's static files (debug).
    logController: new RequestLogController(),
    // A stranger trickling a body or headers must not hold a socket for minutes. The
    // checking interval is how often Node enforces these; its default (30 s) would triple them.
    serverFactory: (handler) =>
      createServer(
        {
          requestTimeout: config.server.httpRequestTimeoutMs,
          headersTimeout: Math.min(config.server.httpHeadersTimeoutMs, config.server.httpRequestTimeoutMs),
          connectionsCheckingInterval: Math.min(1000, config.server.httpHeadersTimeoutMs),
        },
        handler,
      ),
    // The pino instance is typed with its own Logger; Fastify's default generic is the base
    // logger interface it implements, which is what every route plugin expects.
  }) as unknown as FastifyInstance;
  // Users' own MCP bridges dial in at /mcp/ with an agent's token. At shutdown they hear 1001:
  // this hook runs before the WebSocket plugin's own, which closes every socket without a code.
  const bridges = deps.bridges ?? bridgeHubFor(config, deps.log, store.mcpRelay);
  fastify.addHook('preClose', (done) => {
    bridges.closeAll();
    done();
  });
  await fastify.register(websocket, {
    options: {
      maxPayload: config.server.maxMessageBytes,
      // The firmware offers no extensions; compression would only cost CPU.
      perMessageDeflate: false,
    },
    errorHandler: (err, socket, request) => webSocketErrorHandler(err, socket, request),
  });
  // Before any route: every per-address limit counts by one key, and browsers only by our names.
  useAddressSettings(fastify, config.server);
  const ownHosts = new OwnHosts(config.server);
  guardBrowserHosts(fastify, config.server, ownHosts);
  const mode = resolveAuthMode(config.server.auth);
  const devices = mode === 'activation' ? store.registry : undefined;
  if (devices) deps.onSecret?.(devices.secret());
  devices?.onRevoked((gone) => {
    for (const d of gone) registry.closeIdentity(pairKey(d.deviceId, d.clientId), CloseCode.Unauthorized);
  });
  await fastify.register(otaRoutes, {
    publicWsUrl: config.server.publicWsUrl,
    wsPath: DEVICE_WS_PATH,
    mode,
    ...(devices ? { devices, bindCommand: config.server.auth.bindCommand } : {}),
    records: store.devices,
    ...(deps.onSecret ? { onSecret: deps.onSecret } : {}),
    allowedOrigins: config.server.allowedOrigins,
    protocolVersion: config.server.protocolVersion,
    timezoneOffsetMinutes: config.server.timezoneOffsetMinutes,
    firmware: config.server.firmware,
    ...mqttOta(deps, store, mode),
    // Where each device asked OTA: the vision URL of its MQTT sessions without publicWsUrl.
    ownHosts,
    ...(deps.vision?.enabled ? { onReached: deps.vision.reachedByOta.bind(deps.vision) } : {}),
  });
  await fastify.register(deviceWsRoute, {
    auth: {
      mode,
      tokens: config.server.auth.tokens,
      allowedDevices: config.server.auth.allowedDevices,
      ...(devices
        ? {
            verifyDevice: (d: string, c: string, token: string) => verifyBinding(devices, d, c, token),
            verifyStoredDevice: (d: string, c: string, token: string) => verifyStoredBinding(devices, d, c, token),
          }
        : {}),
    },
    refusedOrigin: createOriginCheck(config.server.allowedOrigins, 'WebSocket'),
    sessions,
    pingIntervalMs: config.server.pingIntervalMs,
    maxOutputBufferBytes: config.server.maxOutputBufferBytes,
    maxSessionsPerIp: config.server.maxSessionsPerIp,
    upgradeRate: config.server.upgradeRate,
    controlRate: config.server.controlMessages,
    retryAfterS: config.server.admission.retryAfterS,
  });
  await fastify.register(webRoutes);
  if (deps.vision?.enabled) await fastify.register(deps.vision.route());
  await fastify.register(mcpEndpointRoute, {
    hub: bridges,
    tokens: store.mcpTokens,
    upgradeRate: config.server.upgradeRate,
    retryAfterS: config.server.admission.retryAfterS,
    ...(deps.onSecret ? { onSecret: deps.onSecret } : {}),
  });
  // The admin API and console: off (and the log says how to turn them on) without admin.token.
  await fastify.register(
    adminPlugin({
      token: config.admin.token,
      consoleRoutes: adminConsoleRoutes,
      store,
      liveSessions: registry,
      mcpEndpoint: { hub: bridges, publicUrl: config.mcpEndpoint.publicUrl },
      defaultRealtime: config.realtime !== undefined,
      ...(deps.push ? { push: deps.push } : {}),
      ...(deps.vision ? { vision: deps.vision } : {}),
      ...(deps.onSecret ? { onSecret: deps.onSecret } : {}),
    }),
  );
  for (const plugin of deps.plugins ?? []) await fastify.register(plugin);

  // Sessions end before the HTTP server closes, so each one releases its turn and processes.
  fastify.addHook('preClose', async () => {
    sessions.stopAccepting();
    await registry.closeAll(CloseCode.GoingAway);
    for (const transport of deps.transports ?? []) await transport.close();
  });
  fastify.addHook('onClose', async () => {
    sessions.close();
    if (!deps.store) await store.close();
  });

  let shuttingDown: Promise<void> | undefined;
  const shutdown = (drainMs: number): Promise<void> => {
    shuttingDown ??= (async () => {
      sessions.stopAccepting();
      await registry.drainAll(Date.now() + drainMs);
      await fastify.close();
    })();
    return shuttingDown;
  };
  return { fastify, registry, store, bridges, sessions, ...(devices ? { devices } : {}), shutdown };
}

export interface SessionParts {
  createConversation: ConversationFactory;
  /** In this order for each session opened: the store's records (`recordSessions`) first. */
  onOpened: readonly SessionOpenedHook[];
  /** Load-based admission of new devices (transport/session-door/admission.ts); closed with the door. */
  admission?: AdmissionGate;
  /** Told about every refused device, on any transport (metrics). */
  onRefused?: (reason: RefusalReason) => void;
}

/** The door every transport opens sessions through, with the configuration's session settings and budget. */
export function deviceSessionsFor(config: Config, parts: SessionParts): DeviceSessions {
  return new DeviceSessions({
    registry: new SessionRegistry(),
    createConversation: parts.createConversation,
    session: {
      helloTimeoutMs: config.server.helloTimeoutMs,
      idleTimeoutMs: config.server.idleTimeoutMs,
      outputSampleRate: config.audio.outputSampleRate,
      frameDurationMs: config.audio.frameDurationMs,
    },
    maxSessions: config.server.maxSessions,
    onOpened: parts.onOpened,
    ...(parts.admission ? { admission: parts.admission } : {}),
    ...(parts.onRefused ? { onRefused: parts.onRefused } : {}),
  });
}

/** The OTA route's `mqtt` option: the gateway's section (whenever it is configured) or the embedded broker's (when it runs). */
function mqttOta(
  deps: AppDeps,
  store: Store,
  mode: ReturnType<typeof resolveAuthMode>,
): { mqtt?: NonNullable<ReturnType<typeof mqttOtaProvider>> } {
  const { mqtt } = deps.config;
  const provider = mqttOtaProvider({
    mode,
    gateway: mqtt.gateway,
    keepaliveS: mqtt.keepaliveS,
    ...(deps.mqtt ? { transport: deps.mqtt } : {}),
    binding: (d, c) => store.registry.binding(d, c),
  });
  return provider ? { mqtt: provider } : {};
}

/**
 * Each session in the store: the device's record (first and last seen, also for a device that
 * never asked OTA) and a live-session row (the admin API's "who is online", across replicas).
 * Off the session's path: both are queued and stored with the store's next batch
 * (store/deferred-writes.ts), so nothing here runs a statement; a database that is down costs an
 * error line per batch, never the session.
 */
export function recordSessions(store: Store, config: Config, log: Logger): SessionOpenedHook {
  const defaultAgent = config.defaultAgent ?? config.agents[0]?.name ?? null;
  const failed = (what: string) => (err: unknown) =>
    log.warn({ err: err instanceof Error ? err.message : String(err) }, `store: could not ${what}`);
  return ({ sessionId, deviceId, clientId }, ended) => {
    const device = DeviceIdSchema.safeParse(deviceId);
    const client = ClientIdSchema.safeParse(clientId);
    const mac = device.success ? device.data : null;
    if (mac && client.success)
      store.devices.seen({ deviceId: mac, clientId: client.data }).catch(failed('record the device'));
    const row = {
      sessionId,
      deviceId: mac,
      clientId: client.success ? client.data : null,
      agent: (mac ? store.cache.agentNameOf(mac) : null) ?? defaultAgent,
      replica: store.replica,
      since: new Date().toISOString(),
    };
    // Both are queued (one store write per tick for every session); the removal replaces an add still queued.
    store.sessions.add(row).catch(failed('record the live session'));
    ended.addEventListener(
      'abort',
      () => void store.sessions.remove(sessionId).catch(failed('remove the live session')),
      { once: true },
    );
  };
}
