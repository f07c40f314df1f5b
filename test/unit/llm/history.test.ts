import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHistory } from '../../../llm/history.ts';
import { buildSystemPrompt } from '../../../llm/system-prompt.ts';
import type { ChatMessage } from '../../../llm/types.ts';

const call = (id: string) => ({ id, name: 'get_current_datetime', arguments: '{}' });

describe('history', () => {
  test('keeps the last historyTurns turns and puts the system prompt first', () => {
    const h = createHistory({ systemPrompt: 'You are Xiaozhi.', historyTurns: 2 });
    for (const n of [1, 2, 3]) {
      h.addUser(`question ${n}`);
      h.append({ role: 'assistant', content: `answer ${n}` });
    }
    assert.equal(h.turns, 2);
    assert.deepEqual(h.messages(), [
      { role: 'system', content: 'You are Xiaozhi.' },
      { role: 'user', content: 'question 2' },
      { role: 'assistant', content: 'answer 2' },
      { role: 'user', content: 'question 3' },
      { role: 'assistant', content: 'answer 3' },
    ]);
  });

  test('the bound never separates tool calls from their results', () => {
    const h = createHistory({ systemPrompt: '', historyTurns: 2 });
    h.addUser('old');
    h.append({ role: 'assistant', content: 'old answer' });
    h.addUser('what time is it');
    h.append(
      { role: 'assistant', content: '', toolCalls: [call('c1'), call('c2')] },
      { role: 'tool', toolCallId: 'c1', content: '12:00' },
      { role: 'tool', toolCallId: 'c2', content: '12:00' },
      { role: 'assistant', content: 'It is noon.' },
    );
    h.addUser('thanks');
    const msgs = h.messages();
    assert.equal(msgs[0]?.role, 'user', 'no system message when the prompt is empty');
    assert.deepEqual(
      msgs.map((m) => m.role),
      ['user', 'assistant', 'tool', 'tool', 'assistant', 'user'],
    );
    h.addUser('next');
    // The tool turn is dropped whole: no orphan tool message is left at the front.
    assert.deepEqual(
      h.messages().map((m) => m.role),
      ['user', 'user'],
    );
  });

  test('a character budget drops old turns whole, keeping the current one', () => {
    const h = createHistory({ systemPrompt: 's', historyTurns: 10, maxChars: 50 });
    h.addUser('a'.repeat(30));
    h.append({ role: 'assistant', content: 'b'.repeat(10) });
    h.addUser('c'.repeat(30));
    assert.deepEqual(h.messages(), [
      { role: 'system', content: 's' },
      { role: 'user', content: 'c'.repeat(30) },
    ]);
    h.addUser('d'.repeat(200));
    assert.equal(h.turns, 1, 'the current turn stays even when over budget');
  });

  test('tool calls without results are removed, their text kept; orphan results removed', () => {
    const h = createHistory({ systemPrompt: '', historyTurns: 5 });
    h.addUser('q');
    h.append({ role: 'assistant', content: 'Let me check.', toolCalls: [call('x1')] });
    h.append({ role: 'tool', toolCallId: 'nobody', content: 'stray' });
    const expected: ChatMessage[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'Let me check.' },
    ];
    assert.deepEqual(h.messages(), expected);
  });

  test('checkpoint() puts back the history as it was, turns dropped by the bound included', () => {
    const h = createHistory({ systemPrompt: '', historyTurns: 2 });
    h.addUser('one');
    h.append({ role: 'assistant', content: 'first answer' });
    h.addUser('two');
    h.append({ role: 'assistant', content: 'second answer' });
    const before = h.messages();
    const restore = h.checkpoint();
    // A third turn drops the first (historyTurns 2), and its answer is partial.
    h.addUser('three');
    h.append({ role: 'assistant', content: 'partial', toolCalls: [{ id: 'c1', name: 'x', arguments: '{}' }] });
    assert.equal(h.messages()[0]?.content, 'two');
    restore();
    assert.deepEqual(h.messages(), before);
    assert.equal(h.turns, 2);
    // The checkpoint is a copy: appending after restoring does not change what it restores to.
    h.append({ role: 'assistant', content: 'more' });
    restore();
    assert.deepEqual(h.messages(), before);
  });

  test('a greeting before any user turn and clear()', () => {
    const h = createHistory({ systemPrompt: () => 'dynamic', historyTurns: 3 });
    h.append({ role: 'assistant', content: 'Hello!' });
    h.append({ role: 'system', content: 'ignored' });
    assert.deepEqual(h.messages(), [
      { role: 'system', content: 'dynamic' },
      { role: 'assistant', content: 'Hello!' },
    ]);
    h.clear();
    assert.equal(h.turns, 0);
    assert.deepEqual(h.messages(), [{ role: 'system', content: 'dynamic' }]);
  });
});

describe('system prompt', () => {
  test('fills date, time, weekday, device and vars; leaves unknown braces', () => {
    const now = new Date('2026-05-03T06:05:00Z');
    const out = buildSystemPrompt('Today is {date} {time}, {weekday}. Device {device}. {mood} {unknown} {"json": 1}', {
      now,
      timeZone: 'Asia/Shanghai',
      device: 'aa:bb:cc',
      vars: { mood: 'cheerful' },
    });
    assert.equal(out, 'Today is 2026-05-03 14:05, Sunday. Device aa:bb:cc. cheerful {unknown} {"json": 1}');
    assert.match(buildSystemPrompt('{weekday}', { now, timeZone: 'Asia/Shanghai', language: 'zh-CN' }), /星期日/);
    assert.equal(buildSystemPrompt('{timezone}', { timeZone: 'Europe/Paris' }), 'Europe/Paris');
  });
});
