/**
 * @module Rebuilds whole tool calls from streamed deltas. OpenAI sends each call's id and name once
 * and its `arguments` JSON in pieces, keyed by `index`; several calls may interleave. Some
 * OpenAI-compatible servers omit `index` or send a whole call in one chunk: both are handled.
 */
import type { ToolCall } from '../../llm/types.ts';

/** The subset of a streamed tool-call delta we read. */
export interface ToolCallDelta {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

export interface ToolCallAccumulator {
  add(delta: ToolCallDelta): void;
  /** The calls so far, in index order; calls without a name are dropped, missing ids are generated. */
  calls(): ToolCall[];
}

export function createToolCallAccumulator(): ToolCallAccumulator {
  const byIndex = new Map<number, { id: string; name: string; arguments: string }>();
  let lastIndex = -1;

  return {
    add(delta) {
      let index = delta.index;
      if (index === undefined) {
        // No index: a new id starts a new call, otherwise the delta continues the last one.
        const isNew = delta.id != null && delta.id !== '' && byIndex.get(lastIndex)?.id !== delta.id;
        index = isNew || lastIndex < 0 ? lastIndex + 1 : lastIndex;
      }
      lastIndex = Math.max(lastIndex, index);
      let entry = byIndex.get(index);
      if (!entry) {
        entry = { id: '', name: '', arguments: '' };
        byIndex.set(index, entry);
      }
      if (delta.id) entry.id = delta.id;
      const fn = delta.function;
      if (fn?.name) entry.name += entry.name === fn.name ? '' : fn.name;
      if (fn?.arguments) entry.arguments += fn.arguments;
    },
    calls() {
      return [...byIndex.entries()]
        .sort(([a], [b]) => a - b)
        .filter(([, c]) => c.name !== '')
        .map(([i, c]) => ({ id: c.id || `call_${i}`, name: c.name, arguments: c.arguments }));
    },
  };
}
