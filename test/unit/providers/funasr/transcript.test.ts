/** How FunASR results add up to the utterance's text (providers/funasr/transcript.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FunasrTranscript, MAX_TRANSCRIPT_CHARS } from '../../../../providers/funasr/transcript.ts';

type Step = [mode: string | undefined, text: string, expected: string];

const cases: Array<{ name: string; steps: Step[] }> = [
  {
    name: 'online pieces are appended',
    steps: [
      ['online', '今天', '今天'],
      ['online', '的天气', '今天的天气'],
    ],
  },
  {
    name: 'a 2pass-offline sentence replaces the streaming pieces of its sentence',
    steps: [
      ['2pass-online', '今天', '今天'],
      ['2pass-online', '的天气', '今天的天气'],
      ['2pass-offline', '今天的天气，', '今天的天气，'],
    ],
  },
  {
    name: 'several sentences in one utterance: each offline result closes one, the next streams after it',
    steps: [
      ['2pass-online', '今天的天气', '今天的天气'],
      ['2pass-offline', '今天的天气，', '今天的天气，'],
      ['2pass-online', '怎么', '今天的天气，怎么'],
      ['2pass-online', '样', '今天的天气，怎么样'],
      ['2pass-offline', '怎么样？', '今天的天气，怎么样？'],
    ],
  },
  {
    name: 'an empty sentence result drops the streaming guess of a sentence that had no words',
    steps: [
      ['2pass-online', '嗯', '嗯'],
      ['2pass-offline', '', ''],
    ],
  },
  {
    name: 'offline-mode results (one per VAD segment on the Python server) add up',
    steps: [
      ['offline', 'what is the weather ', 'what is the weather'],
      ['offline', 'in berlin', 'what is the weather in berlin'],
    ],
  },
  {
    name: 'messages of other modes (the acknowledgement, a C++ end result without text) change nothing',
    steps: [
      ['2pass-online', 'hello', 'hello'],
      ['2pass', '', 'hello'],
      [undefined, '', 'hello'],
    ],
  },
];

for (const c of cases) {
  test(c.name, () => {
    const t = new FunasrTranscript();
    for (const [mode, text, expected] of c.steps) {
      t.apply(mode, text);
      assert.equal(t.text, expected, `after ${mode} "${text}"`);
    }
  });
}

test('apply says whether the hypothesis changed', () => {
  const t = new FunasrTranscript();
  assert.equal(t.apply('2pass-online', '今天'), 'changed');
  assert.equal(t.apply('2pass-online', ''), 'unchanged');
  assert.equal(t.apply('2pass-offline', '今天'), 'unchanged', 'the offline pass confirmed the same text');
  assert.equal(t.apply('2pass', ''), 'unchanged');
});

test('a transcript past the bound is refused and the text kept as it was', () => {
  const t = new FunasrTranscript();
  assert.equal(t.apply('online', 'x'.repeat(MAX_TRANSCRIPT_CHARS)), 'changed');
  assert.equal(t.apply('online', 'y'), 'too_long');
  assert.equal(t.text.length, MAX_TRANSCRIPT_CHARS);
  assert.equal(t.apply('2pass-offline', 'short'), 'changed', 'a sentence result that replaces the pieces fits again');
});
