/**
 * @module The OTA / activation HTTP exchange the firmware performs at every boot
 * (xiaozhi-protocol §2). The request body is validated leniently: the device's quirks (a string
 * `minimum_free_heap_size`, a non-ISO `compile_time`, board-specific fields) must never fail it.
 */
import { z } from 'zod';

export const OtaRequestSchema = z.looseObject({
  version: z.union([z.number(), z.string()]).optional(),
  language: z.string().optional(),
  mac_address: z.string().optional(),
  uuid: z.string().optional(),
  chip_model_name: z.string().optional(),
  application: z
    .looseObject({
      name: z.string().optional(),
      version: z.string().optional(),
    })
    .optional(),
  board: z.looseObject({ type: z.string().optional(), name: z.string().optional() }).optional(),
});
export type OtaRequest = z.infer<typeof OtaRequestSchema>;

/** Longest Client-Id accepted: a UUID's worth of characters (`8-4-4-4-12`). */
export const MAX_CLIENT_ID_CHARS = 36;

/**
 * A Device-Id is the device's MAC: six hex pairs joined by `:` or `-` (one separator throughout),
 * normalised to lower case with `:`, the form the firmware sends and the registry stores.
 */
export const DeviceIdSchema = z
  .string()
  .trim()
  .regex(
    /^[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$/i,
    'Device-Id must be a MAC address (six hex pairs joined by ":" or "-")',
  )
  .transform((mac) => mac.toLowerCase().replaceAll('-', ':'));

/**
 * A Client-Id is the UUID the firmware keeps; third-party clients send other ids, so any printable
 * ASCII is accepted, up to a UUID's length. Lower-cased: case never distinguishes two clients.
 */
export const ClientIdSchema = z
  .string()
  .trim()
  .min(1, 'Client-Id is empty')
  .max(MAX_CLIENT_ID_CHARS, `Client-Id must be at most ${MAX_CLIENT_ID_CHARS} characters`)
  .regex(/^[\x20-\x7e]+$/, 'Client-Id must be printable ASCII')
  .transform((id) => id.toLowerCase());

export type OtaIdentity =
  | { ok: true; deviceId?: string; clientId?: string }
  | { ok: false; error: string; field: 'Device-Id' | 'Client-Id'; value: string };

/**
 * The identity an OTA request claims: the Device-Id / Client-Id headers, else the body's
 * `mac_address` / `uuid`. Absent fields stay absent; a present one that is not well formed makes
 * the whole request refused, so nothing unbounded reaches the registry or the log.
 */
export function parseOtaIdentity(
  headers: { deviceId?: string | undefined; clientId?: string | undefined },
  body: unknown,
): OtaIdentity {
  // A body field that is not a string is a broken body, which OTA answers anyway (without an identity).
  const fromBody = (key: string): string | undefined => {
    const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
    return typeof v === 'string' ? v : undefined;
  };
  const fields = [
    ['Device-Id', headers.deviceId ?? fromBody('mac_address'), DeviceIdSchema],
    ['Client-Id', headers.clientId ?? fromBody('uuid'), ClientIdSchema],
  ] as const;
  const out: { deviceId?: string; clientId?: string } = {};
  for (const [field, raw, schema] of fields) {
    if (raw === undefined || raw === '') continue;
    const parsed = schema.safeParse(raw);
    if (!parsed.success)
      return { ok: false, field, value: raw, error: parsed.error.issues[0]?.message ?? `${field} is not valid` };
    if (field === 'Device-Id') out.deviceId = parsed.data;
    else out.clientId = parsed.data;
  }
  return { ok: true, ...out };
}

export interface OtaResponse {
  server_time: { timestamp: number; timezone_offset: number };
  /** `token` absent: the device keeps what it stored (tokens mode never hands one out). */
  websocket: { url: string; token?: string; version: number };
  firmware?: { version: string; url: string; force?: number };
  activation?: { code: string; message: string; challenge: string };
  /** The MQTT+UDP transport: endpoint `host:port`, client_id, username, password, keepalive, publish_topic. */
  mqtt?: Record<string, string | number>;
}
