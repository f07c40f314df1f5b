/**
 * @module The `admin` block of the configuration. The admin room owns its settings; server/config-schema.ts
 * composes them into the configuration.
 */
import { z } from 'zod';

/** The admin API (`/api/admin/`) and the console (`/admin`). */
export const AdminSchema = z.strictObject({
  /**
   * Bearer token of the admin API and the console's sign-in. Empty: both are off (404). Compared
   * in constant time and redacted from logs by value.
   */
  token: z.union([z.literal(''), z.string().min(16, 'must be at least 16 characters')]).default(''),
});
