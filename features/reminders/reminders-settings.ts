/**
 * @module The `reminders` block of the configuration. Reminders own their settings; server/config-schema.ts
 * composes them into the configuration.
 */
import { z } from 'zod';

/** Reminders and timers the model sets (`set_reminder`). */
export const RemindersSchema = z.strictObject({
  enabled: z.boolean().default(true),
  maxPerDevice: z.number().int().min(1).max(1000).default(50),
  /** How far ahead a reminder may be set, days. */
  maxDaysAhead: z.number().int().min(1).max(3650).default(366),
  /** A reminder that could not be delivered for this long (device offline) is dropped, ms. */
  staleAfterMs: z
    .number()
    .int()
    .min(60_000)
    .default(24 * 3600_000),
});
