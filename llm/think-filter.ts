/**
 * @module Removes `<think>...</think>` blocks from streamed text. Reasoning models served through
 * OpenAI-compatible endpoints (Qwen3, DeepSeek-R1 on Ollama or vLLM) put their reasoning inline;
 * it must never be spoken. Tags split across deltas are handled.
 */

const OPEN = '<think>';
const CLOSE = '</think>';

/** Length of the longest suffix of `s` that is a proper prefix of `tag` (a tag possibly cut in two). */
function partialTagSuffix(s: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, s.length); n > 0; n--) {
    if (s.endsWith(tag.slice(0, n))) return n;
  }
  return 0;
}

export interface ThinkFilter {
  push(delta: string): string;
  flush(): string;
}

export function createThinkFilter(): ThinkFilter {
  let inThink = false;
  let pending = '';
  return {
    push(delta) {
      let s = pending + delta;
      pending = '';
      let out = '';
      for (;;) {
        const tag = inThink ? CLOSE : OPEN;
        const idx = s.indexOf(tag);
        if (idx >= 0) {
          if (!inThink) out += s.slice(0, idx);
          s = s.slice(idx + tag.length);
          inThink = !inThink;
          continue;
        }
        const keep = partialTagSuffix(s, tag);
        if (!inThink) out += s.slice(0, s.length - keep);
        pending = s.slice(s.length - keep);
        return out;
      }
    },
    flush() {
      const out = inThink ? '' : pending;
      pending = '';
      inThink = false;
      return out;
    },
  };
}
