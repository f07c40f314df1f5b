/**
 * @module The size budget of a set of tools offered to the model: one device's
 * (`deviceMcp.maxSchemaBytes`) and one agent's bridges (`mcpEndpoint.maxToolBytes` and
 * `maxToolsPerAgent`). Every tool goes into every model request (name, description, input
 * schema), so dozens of large schemas would multiply the cost of each turn. Past the budget the
 * descriptions (the tool's and those inside its schema) are cut first, then whole tools are
 * dropped from the last, so the first tools (the firmware lists its own first; the first bridge's
 * come first) stay.
 */
import type { JsonSchema, ToolSpec } from './contract/tool-source.ts';

/** Characters a description keeps once the budget is exceeded. */
export const SHORT_DESCRIPTION_CHARS = 200;

export interface ToolBudgetResult {
  specs: ToolSpec[];
  /** Names of tools whose descriptions were cut, and of tools dropped. */
  shortened: string[];
  dropped: string[];
  /** Bytes of the specs as announced, and as offered. */
  bytesBefore: number;
  bytesAfter: number;
}

/** UTF-8 bytes of a tool as the model is sent it (name, description, parameters). */
export function toolSpecBytes(spec: ToolSpec): number {
  return Buffer.byteLength(
    JSON.stringify({ name: spec.name, description: spec.description, parameters: spec.inputSchema }),
  );
}

const cut = (text: string): string =>
  text.length > SHORT_DESCRIPTION_CHARS ? Array.from(text).slice(0, SHORT_DESCRIPTION_CHARS).join('') : text;

/**
 * A copy of `value` whose `description` strings are cut. Schemas reaching here were checked for
 * depth (`schema-limits.ts`), so the recursion is bounded.
 */
function shortenDescriptions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shortenDescriptions);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = k === 'description' && typeof v === 'string' ? cut(v) : shortenDescriptions(v);
  return out;
}

/**
 * `specs` within `maxBytes` in total and at most `maxTools` of them: descriptions cut first (only
 * when over the bytes), then tools dropped from the last.
 */
export function fitToolBudget(
  specs: ToolSpec[],
  maxBytes: number,
  maxTools = Number.POSITIVE_INFINITY,
): ToolBudgetResult {
  const sizes = specs.map(toolSpecBytes);
  const bytesBefore = sizes.reduce((a, b) => a + b, 0);
  if (bytesBefore <= maxBytes && specs.length <= maxTools)
    return { specs, shortened: [], dropped: [], bytesBefore, bytesAfter: bytesBefore };
  const shortened: string[] = [];
  const short =
    bytesBefore <= maxBytes
      ? specs
      : specs.map((spec, i) => {
          const s: ToolSpec = { ...spec, inputSchema: shortenDescriptions(spec.inputSchema) as JsonSchema };
          if (spec.description !== undefined) s.description = cut(spec.description);
          const bytes = toolSpecBytes(s);
          if (bytes === sizes[i]) return spec;
          shortened.push(spec.name);
          sizes[i] = bytes;
          return s;
        });
  let total = sizes.reduce((a, b) => a + b, 0);
  let keep = short.length;
  while (keep > 0 && (total > maxBytes || keep > maxTools)) total -= sizes[--keep] as number;
  const dropped = short.slice(keep).map((s) => s.name);
  return {
    specs: short.slice(0, keep),
    shortened: shortened.filter((n) => !dropped.includes(n)),
    dropped,
    bytesBefore,
    bytesAfter: total,
  };
}
