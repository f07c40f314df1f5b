/**
 * @module The OTA endpoint the firmware calls at every boot (xiaozhi-protocol §2). It hands out
 * the WebSocket URL the device can actually reach: the configured public URL, or else the address
 * the device itself used to reach us (its Host header), never a guessed LAN IP.
 */
import { truncateForLog } from '../../core/log-fields.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OtaRequestSchema, type OtaResponse } from '../../protocol/ota.ts';
import { DEVICE_WS_PATH } from './ws-route.ts';

export const OTA_PATH = '/xiaozhi/ota/';

export interface OtaRouteOptions {
  publicWsUrl: string;
  /** Handed to the device as `websocket.token`: the first configured token, or empty. */
  token: string;
  protocolVersion: 1 | 2 | 3;
  /** Minutes east of UTC; null: the server's zone. */
  timezoneOffsetMinutes: number | null;
  firmware: { version: string; url: string; force: boolean };
}

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Device-Id, Client-Id, Authorization, Activation-Version, Accept-Language, Serial-Number, Protocol-Version',
  'access-control-max-age': '600',
};

/** ws:// or wss:// URL built from what the client used to reach us. */
export function wsUrlFor(request: FastifyRequest, publicWsUrl: string): string {
  if (publicWsUrl) return publicWsUrl;
  const forwardedProto = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim();
  const secure = forwardedProto === 'https' || request.protocol === 'https';
  const forwardedHost = String(request.headers['x-forwarded-host'] ?? '').split(',')[0]?.trim();
  const host = forwardedHost || request.headers.host || `${request.hostname}`;
  return `${secure ? 'wss' : 'ws'}://${host}${DEVICE_WS_PATH}`;
}

export async function otaRoutes(app: FastifyInstance, opts: OtaRouteOptions): Promise<void> {
  // Third-party web test pages call OTA from another origin with custom headers: answer CORS.
  app.addHook('onSend', async (request, reply) => {
    if (request.url.startsWith('/xiaozhi/ota')) {
      for (const [k, v] of Object.entries(CORS_HEADERS)) reply.header(k, v);
    }
  });

  // Lenient body parsing on these routes: an empty or broken body still gets the configuration.
  // (This plugin is encapsulated, so the JSON parser swap does not affect other routes.)
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(['application/json', 'text/plain', 'application/octet-stream'], { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const preflight = async (_req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await reply.code(204).send();
  };
  for (const path of [OTA_PATH, '/xiaozhi/ota', `${OTA_PATH}activate`, '/xiaozhi/ota/activate/']) app.options(path, preflight);

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
    if (!parsed.success) request.log.warn({ issue: parsed.error.issues[0]?.message }, 'OTA body not understood; answering anyway');
    const deviceId = (request.headers['device-id'] as string | undefined) ?? device.mac_address;
    const offset = opts.timezoneOffsetMinutes ?? -new Date().getTimezoneOffset();
    const response: OtaResponse = {
      server_time: { timestamp: Date.now(), timezone_offset: offset },
      websocket: { url: wsUrlFor(request, opts.publicWsUrl), token: opts.token, version: opts.protocolVersion },
    };
    if (opts.firmware.version) {
      response.firmware = { version: opts.firmware.version, url: opts.firmware.url, ...(opts.firmware.force ? { force: 1 } : {}) };
    }
    request.log.info(
      { deviceId: truncateForLog(deviceId), board: truncateForLog(device.board?.type), appVersion: truncateForLog(device.application?.version), wsUrl: response.websocket.url },
      'OTA check',
    );
    await reply.code(200).send(response);
  };

  const get = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await reply
      .type('text/plain; charset=utf-8')
      .send(`OTA endpoint is working. Devices POST here; the WebSocket address handed out is ${wsUrlFor(request, opts.publicWsUrl)}\n`);
  };

  const activate = async (_req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    // No activation flow: every device is considered bound.
    await reply.code(200).type('text/plain').send('success');
  };

  app.post(OTA_PATH, post);
  app.post('/xiaozhi/ota', post);
  app.get(OTA_PATH, get);
  app.get('/xiaozhi/ota', get);
  app.post(`${OTA_PATH}activate`, activate);
  app.post('/xiaozhi/ota/activate/', activate);
}
