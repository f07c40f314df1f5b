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

export interface OtaResponse {
  server_time: { timestamp: number; timezone_offset: number };
  /** `token` absent: the device keeps what it stored (tokens mode never hands one out). */
  websocket: { url: string; token?: string; version: number };
  firmware?: { version: string; url: string; force?: number };
  activation?: { code: string; message: string; challenge: string };
}
