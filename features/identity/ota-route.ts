/**
 * @module The OTA endpoint the firmware calls at every boot (xiaozhi-protocol §2). It hands out
 * the WebSocket URL the device can actually reach: the configured public URL, or else the address
 * the device itself used to reach us (its Host header), never a guessed LAN IP.
 */
import { truncateForLog } from '../../core/log-fields.ts';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OtaRequestSchema, parseOtaIdentity, type OtaResponse } from '../../protocol/ota.ts';
import type { AuthMode } from './device-auth.ts';
import type { BoundDevice, DeviceRegistry } from '../../store/identity-registry-types.ts';
import type { DeviceRecords } from '../../store/device-records.ts';
import { deviceToken } from './device-token.ts';
import { createOriginCheck } from './origin.ts';
import { addressKey, clientAddress } from '../../core/address-key.ts';

export const OTA_PATH = '/xiaozhi/ota/';

/** How the owner binds a code when the server runs from the sources (`server.auth.bindCommand`'s default). */
export const SOURCES_BIND_COMMAND = 'npm run devices -- bind {code}';

/** What OTA tells the MQTT side about the device asking, for its `mqtt` section. */
export interface MqttOtaRequest {
  deviceId: string;
  clientId: string;
  /** activation mode: the generation of the token handed out with this answer (bound or pending). */
  generation?: number;
  /** The host the device reached OTA by (without a port). */
  host: string;
  /**
   * `host` is one of the server's own names (`ownHosts`): only then may it be remembered for the
   * device's later sessions. A stranger may ask OTA for any device's pair with a Host of its own.
   */
  hostIsOwn: boolean;
  /** Board type from the OTA body ('' when absent). */
  board: string;
  /** The device's address as this server sees it. */
  ip: string;
}

/** The section for one OTA answer, or undefined when this device gets none (the MQTT transport provides it). */
export type MqttOtaProvider = (req: MqttOtaRequest) => Record<string, string | number> | undefined;

export interface OtaRouteOptions {
  publicWsUrl: string;
  /** The device WebSocket's path (the WebSocket transport's), for the URL built from the request when `publicWsUrl` is empty. */
  wsPath: string;
  /** open: token "" (none needed); tokens: no token key ever; activation: each pair its own (valid once bound). */
  mode: AuthMode;
  /** activation mode only. */
  devices?: DeviceRegistry;
  /** activation: how the owner binds a code where the server runs (`server.auth.bindCommand`, `{code}` replaced). */
  bindCommand?: string;
  /** Where each device that asks is recorded (board, firmware, last seen), in every mode. */
  records?: DeviceRecords;
  allowedOrigins: readonly string[];
  /** Told each device token handed out (log redaction by value). */
  onSecret?: (value: string, issued?: boolean) => void;
  protocolVersion: 1 | 2 | 3;
  /** Minutes east of UTC; null: the server's zone. */
  timezoneOffsetMinutes: number | null;
  firmware: { version: string; url: string; force: boolean };
  /** The `mqtt` section for an identified device (the MQTT transport's); absent: MQTT is off. */
  mqtt?: MqttOtaProvider;
  /**
   * Told where an identified device's OTA request reached us (`http(s)://host[:port]`, by the rules
   * of `httpOriginOf`), only when that host is one of `ownHosts` (a stranger's request naming some
   * other host for a device's pair is not passed on): the vision endpoint's URL for its MQTT sessions.
   */
  onReached?: (reached: { deviceId: string; clientId: string; origin: string }) => void;
  /** The server's own names (`server.publicHosts`, `publicWsUrl`'s host, its addresses): only such a Host is remembered for a device (`onReached`, the MQTT side's UDP address). */
  ownHosts?: { has(host: string | undefined): boolean };
}

const CORS_HEADERS = {
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers':
    'Content-Type, Device-Id, Client-Id, Authorization, Activation-Version, Accept-Language, Serial-Number, Protocol-Version',
  'access-control-max-age': '600',
};

/** The host (without a port) the client used to reach us. */
export function requestHost(request: FastifyRequest): string {
  const forwardedHost = String(request.headers['x-forwarded-host'] ?? '')
    .split(',')[0]
    ?.trim();
  const host = forwardedHost || request.headers.host || request.hostname;
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracketed) return bracketed[1] ?? host;
  const i = host.lastIndexOf(':');
  return i > 0 && host.indexOf(':') === i ? host.slice(0, i) : host;
}

/** Whether the client reached us over TLS, and the host (with its port) it used: a proxy's forwarded ones first. */
function reachedVia(request: FastifyRequest): { secure: boolean; host: string } {
  const forwardedProto = String(request.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    ?.trim();
  const secure = forwardedProto === 'https' || request.protocol === 'https';
  const forwardedHost = String(request.headers['x-forwarded-host'] ?? '')
    .split(',')[0]
    ?.trim();
  return { secure, host: forwardedHost || request.headers.host || `${request.hostname}` };
}

/** ws:// or wss:// URL built from what the client used to reach us. */
export function wsUrlFor(request: FastifyRequest, publicWsUrl: string, wsPath: string): string {
  if (publicWsUrl) return publicWsUrl;
  const { secure, host } = reachedVia(request);
  return `${secure ? 'wss' : 'ws'}://${host}${wsPath}`;
}

/** `http(s)://host[:port]` as the client reached us, by the same rules as `wsUrlFor` (the vision endpoint's URL). */
export function httpOriginOf(request: FastifyRequest): string {
  const { secure, host } = reachedVia(request);
  return `${secure ? 'https' : 'http'}://${host}`;
}

export async function otaRoutes(app: FastifyInstance, opts: OtaRouteOptions): Promise<void> {
  // Browser pages of the configured origins may call OTA with custom headers (CORS); any other
  // origin is refused before the handler runs, so it neither reads an answer nor creates a code.
  const refusedOrigin = createOriginCheck(opts.allowedOrigins, 'OTA');
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/xiaozhi/ota')) return;
    const fix = refusedOrigin(request);
    if (fix !== null) {
      // The fix is for the page (the device page shows it); a foreign page cannot read it (no CORS grant).
      await reply.code(403).send({ error: 'origin not allowed', fix });
      return reply;
    }
    const origin = request.headers.origin;
    if (origin !== undefined) {
      reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
      for (const [k, v] of Object.entries(CORS_HEADERS)) reply.header(k, v);
    }
  });

  // Lenient body parsing on these routes: an empty or broken body still gets the configuration,
  // whatever its content type says, or without one (firmware builds and `curl -d` differ); the
  // body is read as text within the server's bodyLimit and parsed by the handler. (This plugin is
  // encapsulated, so the parser swap does not affect other routes.)
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const preflight = async (_req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await reply.code(204).send();
  };
  for (const path of [OTA_PATH, '/xiaozhi/ota', `${OTA_PATH}activate`, '/xiaozhi/ota/activate/'])
    app.options(path, preflight);

  const post = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    let body: unknown = request.body;
    if (typeof body === 'string') {
      try {
        body = body.trim() ? JSON.parse(body) : {};
      } catch {
        body = {};
      }
    }
    const parsed = OtaRequestSchema.safeParse(body ?? {});
    const device = parsed.success ? parsed.data : {};
    if (!parsed.success)
      request.log.warn(
        { issue: truncateForLog(parsed.error.issues[0]?.message) },
        'OTA body not understood; answering anyway',
      );
    const identity = parseOtaIdentity(
      { deviceId: headerValue(request, 'device-id'), clientId: headerValue(request, 'client-id') },
      body,
    );
    if (!identity.ok) {
      request.log.warn(
        { field: identity.field, value: truncateForLog(identity.value), issue: identity.error },
        'OTA: identity refused',
      );
      await reply.code(400).send({ error: identity.error });
      return;
    }
    const { deviceId, clientId } = identity;
    const offset = opts.timezoneOffsetMinutes ?? -new Date().getTimezoneOffset();
    const response: OtaResponse = {
      server_time: { timestamp: Date.now(), timezone_offset: offset },
      websocket: { url: wsUrlFor(request, opts.publicWsUrl, opts.wsPath), version: opts.protocolVersion },
    };
    if (opts.mode === 'open') response.websocket.token = '';
    if (opts.records && deviceId && clientId) {
      // Queued with the store's next batch (a boot never waits for it); the record is a
      // convenience: a database that is away must not stop a device's boot.
      opts.records
        .seen({ deviceId, clientId, board: device.board?.type ?? null, firmware: device.application?.version ?? null })
        .catch((err: unknown) => {
          request.log.error({ err: (err as Error).message }, 'OTA: recording the device failed');
        });
    }
    if (opts.onReached && opts.ownHosts && deviceId && clientId) {
      const { host } = reachedVia(request);
      if (opts.ownHosts.has(host)) opts.onReached({ deviceId, clientId, origin: httpOriginOf(request) });
      else
        request.log.info(
          { host: truncateForLog(host, 100) },
          "OTA: a host that is not one of the server's names is not remembered for the vision URL",
        );
    }
    let generation: number | undefined;
    if (opts.mode === 'activation' && opts.devices) {
      let credential;
      try {
        credential = await activationAnswer(
          opts.devices,
          deviceId,
          clientId,
          addressKey(request),
          opts.bindCommand ?? SOURCES_BIND_COMMAND,
          request.log,
        );
      } catch (err) {
        request.log.error(
          { err: (err as Error).message },
          'OTA: the store could not issue a code (database unreachable?)',
        );
        await reply.code(503).header('retry-after', '30').send({ error: 'activation unavailable' });
        return;
      }
      if (!credential) {
        request.log.warn(
          { deviceId: truncateForLog(deviceId), clientId: truncateForLog(clientId) },
          'OTA: activation refused (no well-formed Device-Id and Client-Id)',
        );
        await reply.code(503).header('retry-after', '30').send({ error: 'activation unavailable' });
        return;
      }
      opts.onSecret?.(credential.token, true);
      response.websocket.token = credential.token;
      generation = credential.generation;
      if (credential.activation) response.activation = credential.activation;
      // The operator binds by this code: a new one is logged at info, so `docker logs` shows it.
      if (credential.newCode) {
        request.log.info(
          {
            deviceId: truncateForLog(deviceId),
            clientId: truncateForLog(clientId),
            board: truncateForLog(device.board?.type),
            code: credential.activation?.code,
            bind: credential.bind,
          },
          'activation code issued',
        );
      }
    }
    if (opts.mqtt && deviceId && clientId) {
      const mqtt = opts.mqtt({
        deviceId,
        clientId,
        ...(generation !== undefined ? { generation } : {}),
        host: requestHost(request),
        hostIsOwn: opts.ownHosts?.has(reachedVia(request).host) ?? false,
        board: device.board?.type ?? '',
        ip: clientAddress(request),
      });
      if (mqtt) {
        if (typeof mqtt.password === 'string') opts.onSecret?.(mqtt.password, true);
        response.mqtt = mqtt;
      }
    }
    if (opts.firmware.version) {
      response.firmware = {
        version: opts.firmware.version,
        url: opts.firmware.url,
        ...(opts.firmware.force ? { force: 1 } : {}),
      };
    }
    request.log.info(
      {
        deviceId: truncateForLog(deviceId),
        board: truncateForLog(device.board?.type),
        appVersion: truncateForLog(device.application?.version),
        wsUrl: response.websocket.url,
        ...(response.mqtt ? { mqtt: response.mqtt.endpoint } : {}),
      },
      'OTA check',
    );
    await reply.code(200).send(response);
  };

  const get = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await reply
      .type('text/plain; charset=utf-8')
      .send(
        `OTA endpoint is working. Devices POST here; the WebSocket address handed out is ${wsUrlFor(request, opts.publicWsUrl, opts.wsPath)}\n`,
      );
  };

  // The firmware polls this after speaking its code: 202 "not yet" until the owner binds it (as
  // the database says now: the CLI's bind counts at once).
  const activate = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const deviceId = headerValue(request, 'device-id');
    const clientId = headerValue(request, 'client-id');
    const bound =
      opts.mode !== 'activation' ||
      (deviceId !== undefined &&
        clientId !== undefined &&
        opts.devices !== undefined &&
        (await currentBinding(opts.devices, deviceId, clientId, request.log)) !== undefined);
    if (bound) await reply.code(200).type('text/plain').send('success');
    else await reply.code(202).type('text/plain').send('waiting for the owner to bind this device');
  };

  app.post(OTA_PATH, post);
  app.post('/xiaozhi/ota', post);
  app.get(OTA_PATH, get);
  app.get('/xiaozhi/ota', get);
  app.post(`${OTA_PATH}activate`, activate);
  app.post('/xiaozhi/ota/activate/', activate);
}

/**
 * The pair's binding as the database holds it now, so a bind or revoke the CLI (or another
 * replica) made a moment ago counts before the cache hears of it. A database that cannot answer
 * is not a reason to refuse a bound device its boot: the cache's answer then (warned).
 */
async function currentBinding(
  devices: DeviceRegistry,
  deviceId: string,
  clientId: string,
  log: FastifyBaseLogger,
): Promise<BoundDevice | undefined> {
  try {
    return await devices.storedBinding(deviceId, clientId);
  } catch (err) {
    log.warn(
      { err: (err as Error).message },
      "OTA: reading the binding failed (database unreachable?); answering from this process's copy",
    );
    return devices.binding(deviceId, clientId);
  }
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  const s = (Array.isArray(v) ? v[0] : v)?.trim();
  return s ? s.slice(0, 200).toLowerCase() : undefined;
}

/**
 * A bound pair gets its token; an unknown one a spoken code and already the token of the binding
 * that code will create. The token is the HMAC of the pair and the binding's generation, and the
 * WebSocket accepts it only for the pair's current binding, so before the owner binds the code it
 * opens nothing, after it is what OTA would hand this pair anyway, and after a revocation never
 * again. Handing it with the code lets a client that goes from the activation poll straight to
 * the WebSocket, without asking OTA again (py-xiaozhi does), connect with what it already holds.
 * `newCode`: this request created the code. Null: no code can be issued (no identity, or one
 * that is not well formed). `source`: the requester's address key.
 */
async function activationAnswer(
  devices: DeviceRegistry,
  deviceId: string | undefined,
  clientId: string | undefined,
  source: string,
  bindCommand: string,
  log: FastifyBaseLogger,
): Promise<{
  token: string;
  generation: number;
  activation?: NonNullable<OtaResponse['activation']>;
  newCode?: boolean;
  bind?: string;
} | null> {
  if (!deviceId || !clientId) return null;
  const bound = await currentBinding(devices, deviceId, clientId, log);
  if (bound)
    return { token: deviceToken(devices.secret(), deviceId, clientId, bound.generation), generation: bound.generation };
  const pending = await devices.pendingCode(deviceId, clientId, source);
  if (!pending) return null;
  const bind = bindCommand.replaceAll('{code}', pending.code);
  return {
    bind,
    // The token of the binding this code will create (its generation is reserved with the code).
    token: deviceToken(devices.secret(), deviceId, clientId, pending.generation),
    generation: pending.generation,
    newCode: pending.created,
    activation: {
      code: pending.code,
      // The firmware shows it and the page prints it: the command that works where the server runs.
      message: `Activation code ${pending.code}. On the server run: ${bind}`,
      challenge: deviceId,
    },
  };
}
