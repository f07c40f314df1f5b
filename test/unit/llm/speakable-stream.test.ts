/** The model's text cleaned for a streaming voice: held back only to a word's end, never to a sentence's. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSpeakableStream } from '../../../llm/speakable-stream.ts';

/** Every piece `deltas` give, flush included. */
function pieces(deltas: string[]): string[] {
  const s = createSpeakableStream();
  const out = deltas.map((d) => s.push(d));
  out.push(s.flush());
  return out;
}

test('words go out as soon as they end, with their spaces; a sentence end is not waited for', () => {
  assert.deepEqual(pieces(['Hel', 'lo th', 'ere my', ' friend']), ['', 'Hello ', 'there ', 'my ', 'friend']);
});

test('Chinese goes out character by character', () => {
  assert.deepEqual(pieces(['你好', '，今天']), ['你好', '，今天', '']);
});

test('markdown and emoji are removed, even when split between fragments', () => {
  const out = pieces(['**Bold', '** and *it', 'alic* 😀 ', '`code` ', '# a heading\n', '- item\n']).join('');
  assert.equal(out, 'Bold and italic code a heading, item, ');
});

test('a link is held until it closes, then only its text is spoken', () => {
  const s = createSpeakableStream();
  assert.equal(s.push('See [the docs '), 'See ');
  assert.equal(s.push('page](http://x.example/a b) now '), 'the docs page now ');
});

test('a line that ends without punctuation keeps its pause', () => {
  assert.deepEqual(pieces(['First line\n', 'Second']), ['First line, ', '', 'Second']);
});

test('an unclosed link does not hold the rest of the answer for ever', () => {
  const s = createSpeakableStream();
  assert.equal(s.push('Look [here '), 'Look ');
  const long = 'word '.repeat(100);
  assert.ok(s.push(long).length > 400, 'released past the bound');
});
