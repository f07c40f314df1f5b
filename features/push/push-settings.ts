/**
 * @module The `push` block of the configuration: the bounds and addresses of server-initiated
 * speech. Push owns its settings; server/config-schema.ts composes them into the configuration.
 */
import { z } from 'zod';

/** Speech the server starts: the admin API's `say` and reminders. */
export const PushSchema = z.strictObject({
  /** How long a message for an offline device waits for it in the database, ms; 0: not queued (refused). */
  queueTtlMs: z
    .number()
    .int()
    .min(0)
    .max(30 * 24 * 3600_000)
    .default(24 * 3600_000),
  /** Messages waiting per device at most (the oldest is dropped). */
  maxQueuedPerDevice: z.number().int().min(1).max(1000).default(20),
  /** `say` requests per device. */
  rate: z
    .strictObject({ perSecond: z.number().positive().default(0.2), burst: z.number().int().min(1).default(3) })
    .prefault({}),
  /** Characters of one message at most. */
  maxChars: z.number().int().min(1).max(2000).default(500),
  /** Firmware from this version on gets `notify` (audio by URL) while idle on MQTT; older gets `alert` (text on screen). */
  notifyMinVersion: z
    .string()
    .regex(/^\d+(\.\d+)*$/, 'must be a numeric dotted version like 2.5.0')
    .default('2.5.0'),
  /**
   * After an MQTT device connects, how long its queued messages wait for its hello, ms: a device
   * that opens an audio channel hears them spoken in that session (an `alert` sent before its
   * hello is lost); one that sends no hello by then gets notify/alert. 0: notify/alert at once.
   */
  helloGraceMs: z.number().int().min(0).max(60_000).default(3000),
  /** How long a `notify` audio URL stays valid, ms (single use). */
  audioUrlTtlMs: z.number().int().min(1000).max(3600_000).default(60_000),
  /**
   * Base URL devices fetch `notify` audio from (`http://host:port`); empty: the origin of
   * `server.publicWsUrl`; with neither, idle devices get `alert` (the text) instead.
   */
  publicHttpUrl: z.string().default(''),
});
