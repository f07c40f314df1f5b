/**
 * @module The `memory` block of the configuration: how much of a device's memory is given back, kept
 * and retried. Memory owns its settings; server/config-schema.ts composes them into the configuration.
 */
import { z } from 'zod';

/**
 * Each device's memory (per device and agent, in the store): its recent turns given back to its
 * next session, a running summary written after a session ends, and the facts its user asked it to
 * remember. Which of these an agent keeps is its `memory` mode (`none`, `history`, `summary`).
 */
export const MemorySchema = z.strictObject({
  /** Stored turns (a user message and its answer) given back to a new session. */
  historyTurns: z.number().int().min(0).max(100).default(6),
  /** Characters of those turns at most (the oldest go first). */
  historyChars: z.number().int().min(0).max(40_000).default(4000),
  /** Days a stored turn is kept; older ones are removed by the server. */
  retentionDays: z.number().int().min(1).max(3650).default(90),
  /** Stored turn messages kept per device (the oldest removed first). */
  maxTurnsPerDevice: z.number().int().min(10).max(100_000).default(2000),
  /** Wait before a summary the model could not write is tried again, in ms. */
  summaryRetryMs: z.number().int().min(1000).default(300_000),
});
