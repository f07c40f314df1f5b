/**
 * The memory tools act only on the target they were made with (the talking device's memory) and
 * say so when the assistant keeps no facts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { memoryTools, type MemoryToolTarget } from '../../../mcp/local-tools/memory-tools.ts';
import { createLocalTools } from '../../../mcp/local-tools.ts';

function target(keeps = true): MemoryToolTarget & { facts: string[] } {
  const facts: string[] = [];
  return {
    facts,
    keepsFacts: () => keeps,
    remember: async (f) => (facts.push(f), true),
    forget: async (w) => {
      const before = facts.length;
      facts.splice(0, facts.length, ...facts.filter((f) => !f.includes(w)));
      return before - facts.length;
    },
    forgetAll: async () => void facts.splice(0),
    list: async () => [...facts],
  };
}

const text = (r: { content: Array<{ type: string; text?: string }> }): string =>
  r.content.map((c) => c.text ?? '').join('');

describe('memory tools', () => {
  test('remember, list, forget by words and everything, each on its own target', async () => {
    const mine = target();
    const other = target();
    const tools = createLocalTools(memoryTools(mine));
    const signal = new AbortController().signal;
    await tools.callTool('remember', { fact: 'my daughter is Mia' }, { signal });
    await tools.callTool('remember', { fact: 'the cat is Tom' }, { signal });
    assert.deepEqual(other.facts, []);
    assert.match(text(await tools.callTool('list_memories', {}, { signal })), /- my daughter is Mia\n- the cat is Tom/);
    assert.match(text(await tools.callTool('forget', { what: 'cat' }, { signal })), /Forgot 1 fact\./);
    assert.deepEqual(mine.facts, ['my daughter is Mia']);
    assert.equal((await tools.callTool('forget', {}, { signal })).isError, true);
    await tools.callTool('forget', { everything: true }, { signal });
    assert.deepEqual(mine.facts, []);
  });

  test('an assistant without facts (memory mode) says so and stores nothing', async () => {
    const t = target(false);
    const tools = createLocalTools(memoryTools(t));
    const r = await tools.callTool('remember', { fact: 'x' }, { signal: new AbortController().signal });
    assert.match(text(r), /Memory is off/);
    assert.deepEqual(t.facts, []);
  });
});
