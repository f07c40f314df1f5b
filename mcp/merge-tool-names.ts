/**
 * @module One tool list from several groups of tools (the sources of a session's composite, the
 * bridges of an agent), each exposed name routed back to its group and the tool's own name. The
 * earlier group keeps a name; a later one offering it again is exposed as `<group>__<tool>`, the
 * group's prefix made safe and distinct among the groups (`calc`, `calc_2`). A group marked
 * `keepsNames` (the device's own tools) claims its names before every other: no other group can
 * take the device's calls. A name still taken after the prefix is dropped.
 */
import type { ToolSpec } from './contract/tool-source.ts';

/** Longest exposed name (OpenAI function names). */
const MAX_NAME = 64;

export interface ToolGroup<G> {
  /** Its name: the prefix of its renamed tools. */
  name: string;
  specs: readonly ToolSpec[];
  /** Its tools keep their plain names whatever the other groups offer. */
  keepsNames?: boolean;
  /** What a call of one of its tools is routed to. */
  group: G;
}

export interface MergedTools<G> {
  /** In group order, each group's in its own. */
  specs: ToolSpec[];
  /** Exposed name → its group and the tool's own name. */
  routes: Map<string, { group: G; original: string }>;
  /** Tools exposed under a prefixed name (for the log). */
  renamed: Array<{ group: string; tool: string; exposedAs: string }>;
}

function safe(s: string): string {
  return s.replace(/[^a-zA-Z0-9_-]/g, '_');
}

export function mergeToolNames<G>(groups: ReadonlyArray<ToolGroup<G>>): MergedTools<G> {
  const out: MergedTools<G> = { specs: [], routes: new Map(), renamed: [] };
  const claimed = new Set<string>();
  for (const g of groups) if (g.keepsNames) for (const spec of g.specs) claimed.add(spec.name);
  const prefixes = new Set<string>();
  for (const g of groups) {
    // Half the name at most, so the tool's own name stays readable after it.
    const base = safe(g.name).slice(0, MAX_NAME / 2);
    let prefix = base;
    for (let n = 2; prefixes.has(prefix); n++) prefix = `${base}_${n}`;
    prefixes.add(prefix);
    for (const spec of g.specs) {
      let exposed = spec.name;
      if (out.routes.has(exposed) || (!g.keepsNames && claimed.has(exposed))) {
        exposed = `${prefix}__${spec.name}`.slice(0, MAX_NAME);
        // Still taken (the same name twice in one group, or an unlucky prefix): dropped.
        if (out.routes.has(exposed) || claimed.has(exposed)) continue;
        out.renamed.push({ group: g.name, tool: spec.name, exposedAs: exposed });
      }
      out.routes.set(exposed, { group: g.group, original: spec.name });
      out.specs.push(exposed === spec.name ? spec : { ...spec, name: exposed });
    }
  }
  return out;
}
