/** The end line of an OpenAI-compatible event stream, as `EventStreamEnd` finds it in a body's chunks. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventStreamEnd } from '../../../../providers/openai/event-stream-end.ts';

const seenIn = (...chunks: string[]): boolean => {
  const end = new EventStreamEnd();
  for (const c of chunks) end.push(Buffer.from(c));
  return end.seen;
};

test('the end line is found wherever the chunks split it, at the body start too, with or without the space', () => {
  const body = 'data: {"choices":[]}\n\ndata: [DONE]\n\n';
  for (let cut = 0; cut <= body.length; cut++)
    assert.ok(seenIn(body.slice(0, cut), body.slice(cut)), `split at ${cut}`);
  assert.ok(seenIn('data: [DONE]\n\n'));
  assert.ok(seenIn('data:{}\r\n\r\ndata:[DONE]\r\n\r\n'));
  assert.ok(seenIn('data: {}\n\nda', 'ta', ': [DO', 'NE]'));
});

test('the same words inside an event, or before the end line has been sent, are not the end', () => {
  assert.equal(seenIn('data: {"content":"say data: [DONE]"}\n\n'), false);
  assert.equal(seenIn('data: {}\n\n', 'data: [DO'), false);
  assert.equal(seenIn('event: data: [DONE]\n\n'), false);
});
