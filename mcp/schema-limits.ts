/**
 * @module The shape bounds of one tool's input schema, shared by the device's tools
 * (`device-mcp.ts`) and the MCP endpoint's bridges: nesting depth and number of values, walked
 * without recursion (a schema 30,000 levels deep must not overflow the stack), then optionally its
 * length as JSON. A schema past them leaves its tool out.
 */

export interface SchemaLimits {
  /** Nesting depth of objects and arrays. */
  maxDepth: number;
  /** Values (objects, arrays, scalars) in the schema. */
  maxNodes: number;
  /** Characters of the schema as JSON (measured only once depth and count passed). */
  maxChars?: number;
}

export interface SchemaProblem {
  kind: 'tooDeep' | 'tooLarge';
  /** For the log: which bound, and its value. */
  why: string;
}

/** Why `schema` is past the bounds, or undefined when it is within them. */
export function schemaOverLimits(schema: unknown, limits: SchemaLimits): SchemaProblem | undefined {
  const stack: Array<[unknown, number]> = [[schema, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (++nodes > limits.maxNodes) return { kind: 'tooLarge', why: `more than ${limits.maxNodes} values` };
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limits.maxDepth) return { kind: 'tooDeep', why: `nested deeper than ${limits.maxDepth}` };
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  if (limits.maxChars !== undefined && schema !== undefined && JSON.stringify(schema).length > limits.maxChars) {
    return { kind: 'tooLarge', why: `longer than ${limits.maxChars} characters` };
  }
  return undefined;
}
