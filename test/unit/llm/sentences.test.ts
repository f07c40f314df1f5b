import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSentenceCutter } from '../../../llm/sentences.ts';
import type { SentenceCutterOptions } from '../../../llm/sentences.ts';
import { spokenWeight, toSpeakable } from '../../../llm/speakable.ts';

/** Feeds `text` in pieces of `size` characters and returns every piece cut, flush included. */
function cut(text: string, size: number, opts?: SentenceCutterOptions): string[] {
  const c = createSentenceCutter(opts);
  const out: string[] = [];
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i += size) out.push(...c.push(chars.slice(i, i + size).join('')));
  out.push(...c.flush());
  return out;
}

/** The cut must not depend on how the stream was chunked. */
function cutAll(text: string, opts?: SentenceCutterOptions): string[] {
  const whole = cut(text, 100_000, opts);
  for (const size of [1, 2, 3, 7]) assert.deepEqual(cut(text, size, opts), whole, `chunk size ${size}`);
  return whole;
}

describe('sentence cutter', () => {
  test('English sentences, with the first piece cut early at a comma', () => {
    assert.deepEqual(cutAll('Well, the weather today is great, and tomorrow too. Bring a hat! Why not?'), [
      'Well, the weather today is great,',
      'and tomorrow too.',
      'Bring a hat!',
      'Why not?',
    ]);
  });

  test('only the first piece is cut at a comma', () => {
    const out = cutAll('Alright then, here is the plan, step by step, slowly. Next, we go.');
    assert.deepEqual(out, ['Alright then,', 'here is the plan, step by step, slowly.', 'Next, we go.']);
  });

  test('pieces are emitted before the stream ends', () => {
    const c = createSentenceCutter();
    assert.deepEqual(c.push('The first sentence is here. The sec'), ['The first sentence is here.']);
    assert.deepEqual(c.push('ond one'), []);
    assert.deepEqual(c.flush(), ['The second one']);
  });

  test('Chinese punctuation cuts at once, first piece at a comma', () => {
    assert.deepEqual(cutAll('今天北京天气晴朗，气温二十度，适合出门。明天会下雨！你要带伞吗？'), [
      '今天北京天气晴朗，',
      '气温二十度，适合出门。',
      '明天会下雨！',
      '你要带伞吗？',
    ]);
    const c = createSentenceCutter();
    assert.deepEqual(
      c.push('好的，我来帮你查一下。'),
      ['好的，我来帮你查一下。'],
      'a full-width stop needs no lookahead',
    );
  });

  test('mixed Chinese and English', () => {
    assert.deepEqual(cutAll('Hello 小智。This is a test.你好世界！OK then'), [
      'Hello 小智。',
      'This is a test.',
      '你好世界！',
      'OK then',
    ]);
  });

  test('numbers, abbreviations and initials do not end a sentence', () => {
    assert.deepEqual(
      cutAll(
        'Pi is about 3.14159 today. Use e.g. a ruler, i.e. a tool. Mr. Smith met J. K. Rowling at 10:30, sharp. It costs 1,000 dollars.',
      ),
      [
        'Pi is about 3.14159 today.',
        'Use e.g. a ruler, i.e. a tool.',
        'Mr. Smith met J. K. Rowling at 10:30, sharp.',
        'It costs 1,000 dollars.',
      ],
    );
  });

  test('too-short pieces merge with the next one', () => {
    assert.deepEqual(cutAll('Hi. Yes. Okay. Let us go.'), ['Hi. Yes.', 'Okay.', 'Let us go.']);
    assert.deepEqual(cutAll('嗯。好。我们走吧。'), ['嗯。好。', '我们走吧。']);
    for (const piece of cutAll('Hi! Oh. Ah, so. Right. This is it.')) {
      assert.ok(spokenWeight(piece) >= 4, `"${piece}" is too short`);
    }
  });

  test('markdown is stripped and links are never split', () => {
    const md =
      '## Weather today\n- **Sunny**, 25 degrees\n- Wind: see [the forecast. Really](http://example.com/a.b?x=1)\n\n`code` stays as words.';
    assert.deepEqual(cutAll(md), [
      'Weather today',
      'Sunny, 25 degrees',
      'Wind: see the forecast. Really',
      'code stays as words.',
    ]);
  });

  test('emoji are removed; an emoji-only piece disappears', () => {
    assert.deepEqual(cutAll('Great news 🎉! The build passed ✅.\n😀😀\nDone for today.'), [
      'Great news!',
      'The build passed.',
      'Done for today.',
    ]);
  });

  test('a long run without punctuation is cut at a space before maxChars', () => {
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    const out = cutAll(words, { maxChars: 50 });
    assert.ok(out.length > 1);
    for (const p of out) assert.ok(spokenWeight(p) <= 50, `"${p}" is longer than maxChars`);
    assert.equal(out.join(' '), words, 'no word is lost or split');
  });

  test('options change the thresholds', () => {
    assert.deepEqual(cutAll('Hi, there. Go.', { firstCutMinChars: 2, minChars: 2 }), ['Hi,', 'there.', 'Go.']);
  });

  test('flush resets the cutter for the next turn', () => {
    const c = createSentenceCutter();
    c.push('First turn, unfinished');
    assert.deepEqual(c.flush(), ['First turn, unfinished']);
    assert.deepEqual(c.push('Second turn started here, with more.'), ['Second turn started here,']);
  });
});

describe('toSpeakable', () => {
  test('removes markup but keeps words and snake_case', () => {
    assert.equal(toSpeakable('# Title'), 'Title');
    assert.equal(toSpeakable('> quoted *text* and __bold__'), 'quoted text and bold');
    assert.equal(toSpeakable('![a cat](http://x/cat.png) and [docs](http://x)'), 'a cat and docs');
    assert.equal(toSpeakable('| a | b |\n|---|---|\n| 1 | 2 |'), 'a b, 1 2');
    assert.equal(toSpeakable('use my_var now'), 'use my_var now');
    assert.equal(toSpeakable('line one\nline two'), 'line one, line two');
    assert.equal(toSpeakable('第一行\n第二行'), '第一行，第二行');
    assert.equal(toSpeakable('👍🏽 thumbs 👨‍👩‍👧 family'), 'thumbs family');
  });
});
