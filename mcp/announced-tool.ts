/**
 * @module One tool as a peer announced it in `tools/list` (the device's firmware, a bridge on the
 * MCP endpoint), checked against its source's bounds and shaped as the model will be sent it: a
 * name, the description cut to a length, and the input schema within the shape bounds
 * (`schema-limits.ts`), or an empty object schema when it gave none; names made safe for the
 * model (`name-patterns.ts`). Both sources read their listings through here; what is kept is then
 * cut to a size budget (`tool-budget.ts`).
 */
import { ToolNameMap } from './name-patterns.ts';
import { schemaOverLimits, type SchemaLimits } from './schema-limits.ts';
import type { JsonSchema, ToolSpec } from './contract/tool-source.ts';

export interface AnnouncedToolLimits {
  /** Longest name; a longer one leaves the tool out. Absent: any (the exposed name is made safe and cut anyway). */
  nameChars?: number;
  /** A longer description is cut to this many characters. */
  descriptionChars: number;
  /** The input schema's shape; past it the tool is left out. */
  schema: SchemaLimits;
  /** Tools kept from one listing; the rest are left out. Absent: all. */
  maxTools?: number;
}

type AnnouncedTool =
  | { ok: true; name: string; description?: string; inputSchema: JsonSchema }
  /** Left out; `why` says which bound for the log. */
  | { ok: false; name: string; problem: 'nameTooLong' | 'schemaTooDeep' | 'schemaTooLarge'; why: string };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The tool `raw` announces, or why it is left out; undefined when it is not a tool at all (no name). */
function readAnnouncedTool(raw: unknown, limits: AnnouncedToolLimits): AnnouncedTool | undefined {
  if (!isRecord(raw) || typeof raw.name !== 'string' || raw.name === '') return undefined;
  const name = raw.name;
  if (limits.nameChars !== undefined && name.length > limits.nameChars) {
    return { ok: false, name, problem: 'nameTooLong', why: `name longer than ${limits.nameChars} characters` };
  }
  // Anything but an object is not a schema: the tool gets the empty one, so only an object is walked.
  const given = isRecord(raw.inputSchema) ? raw.inputSchema : undefined;
  const over = given === undefined ? undefined : schemaOverLimits(given, limits.schema);
  if (over !== undefined)
    return { ok: false, name, problem: over.kind === 'tooDeep' ? 'schemaTooDeep' : 'schemaTooLarge', why: over.why };
  const inputSchema: JsonSchema =
    given !== undefined ? { ...(given as JsonSchema) } : { type: 'object', properties: {} };
  if (inputSchema.type === undefined) inputSchema.type = 'object';
  // As the model will be sent it (`providers/openai/to-openai.ts` adds the same), so that the size budget measures it as sent.
  if (inputSchema.type === 'object' && inputSchema.properties === undefined) inputSchema.properties = {};
  const description =
    typeof raw.description === 'string' ? raw.description.slice(0, limits.descriptionChars) : undefined;
  return description === undefined ? { ok: true, name, inputSchema } : { ok: true, name, description, inputSchema };
}

/** A listing read: the tools kept, by exposed name, and what was left out. */
export interface AnnouncedTools {
  specs: ToolSpec[];
  /** Exposed (safe, unique) name → the name the peer gave. */
  names: ToolNameMap<string>;
  /** Left out for a bound, with why (the log's business). */
  leftOut: Array<{ name: string; problem: 'nameTooLong' | 'schemaTooDeep' | 'schemaTooLarge'; why: string }>;
  /** Entries not read at all once `maxTools` were kept. */
  overCount: number;
}

/**
 * The tools of one listing within `limits`, in the peer's order, exposed as `prefix` + their name
 * made safe (`ToolNameMap`: distinct after sanitizing). A name listed twice: its first acceptable
 * listing stands.
 */
export function readAnnouncedTools(raw: readonly unknown[], limits: AnnouncedToolLimits, prefix = ''): AnnouncedTools {
  const out: AnnouncedTools = { specs: [], names: new ToolNameMap<string>(), leftOut: [], overCount: 0 };
  const taken = new Set<string>();
  for (const [i, t] of raw.entries()) {
    if (limits.maxTools !== undefined && out.specs.length >= limits.maxTools) {
      out.overCount = raw.length - i;
      break;
    }
    const tool = readAnnouncedTool(t, limits);
    if (tool === undefined || taken.has(tool.name)) continue;
    if (!tool.ok) {
      out.leftOut.push({ name: tool.name, problem: tool.problem, why: tool.why });
      continue;
    }
    taken.add(tool.name);
    const name = out.names.add(`${prefix}${tool.name}`, tool.name);
    out.specs.push(
      tool.description === undefined
        ? { name, inputSchema: tool.inputSchema }
        : { name, description: tool.description, inputSchema: tool.inputSchema },
    );
  }
  return out;
}
