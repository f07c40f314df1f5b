import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EMOTIONS, type Emotion } from '../../../core/emotions.ts';
import { createEmotionExtractor, emotionForEmoji, emotionForTag } from '../../../llm/emotion.ts';
import { EmotionEmoji } from '../../../protocol/messages.ts';
import { createThinkFilter } from '../../../llm/think-filter.ts';
import { parseToolArguments, spokenResultText, toolResultText } from '../../../llm/tool-results.ts';

function runExtractor(pieces: string[]): { text: string; emotions: Emotion[] } {
  const emotions: Emotion[] = [];
  const ex = createEmotionExtractor((e) => emotions.push(e));
  let text = '';
  for (const p of pieces) text += ex.push(p);
  text += ex.flush();
  return { text, emotions };
}

describe('emotion cues', () => {
  test('the 21 xiaozhi emotions', () => {
    assert.equal(EMOTIONS.length, 21);
    for (const e of EMOTIONS) assert.equal(emotionForTag(e), e);
  });

  test('the emoji the device is sent with each emotion reads back as that emotion', () => {
    assert.deepEqual(Object.keys(EmotionEmoji).sort(), [...EMOTIONS].sort());
    for (const e of EMOTIONS) assert.equal(emotionForEmoji(EmotionEmoji[e]), e, `${e}: ${EmotionEmoji[e]}`);
  });

  test('a leading emoji becomes an emotion and is stripped', () => {
    assert.deepEqual(runExtractor(['😂', ' That is funny.']), { text: 'That is funny.', emotions: ['funny'] });
    assert.deepEqual(runExtractor(['❤️ I love it']), { text: 'I love it', emotions: ['loving'] });
    assert.deepEqual(runExtractor(['  ', '🤔', 'Let me think']), { text: 'Let me think', emotions: ['thinking'] });
    assert.equal(emotionForEmoji('😊'), 'happy');
    assert.equal(emotionForEmoji('👍🏽'), 'confident');
  });

  test('a [tag] split across deltas, English or Chinese', () => {
    assert.deepEqual(runExtractor(['[ha', 'ppy] Great', ' day!']), { text: 'Great day!', emotions: ['happy'] });
    assert.deepEqual(runExtractor(['【开心】今天真好']), { text: '今天真好', emotions: ['happy'] });
    assert.deepEqual(runExtractor(['[Sad]Oh no.']), { text: 'Oh no.', emotions: ['sad'] });
  });

  test('anything else passes through untouched, and only the start counts', () => {
    assert.deepEqual(runExtractor(['[1] is a citation']), { text: '[1] is a citation', emotions: [] });
    assert.deepEqual(runExtractor(['Hello 😀 there']), { text: 'Hello 😀 there', emotions: [] });
    assert.deepEqual(runExtractor(['[unfinished']), { text: '[unfinished', emotions: [] });
    assert.deepEqual(
      runExtractor(['🦄 unicorn']),
      { text: 'unicorn', emotions: [] },
      'unknown emoji stripped, no emotion',
    );
  });
});

describe('think filter', () => {
  test('removes think blocks, tags split anywhere', () => {
    const text = '<think>The user wants the time. I should call a tool.</think>It is noon.';
    for (const size of [1, 2, 5, 100]) {
      const f = createThinkFilter();
      let out = '';
      for (let i = 0; i < text.length; i += size) out += f.push(text.slice(i, i + size));
      out += f.flush();
      assert.equal(out, 'It is noon.', `chunk size ${size}`);
    }
  });

  test('keeps text that only looks like a tag start', () => {
    const f = createThinkFilter();
    assert.equal(f.push('a < b and <th'), 'a < b and ');
    assert.equal(f.push('is>'), '<this>');
    assert.equal(f.push(' x <thi'), ' x ');
    assert.equal(f.flush(), '<thi');
  });
});

describe('tool results for the model', () => {
  test('argument parsing', () => {
    assert.deepEqual(parseToolArguments(''), { ok: true, args: {} });
    assert.deepEqual(parseToolArguments('{"a":1}'), { ok: true, args: { a: 1 } });
    assert.deepEqual(parseToolArguments('"{\\"a\\":1}"'), { ok: true, args: { a: 1 } }, 'double-encoded JSON');
    const bad = parseToolArguments('{"city": "Par');
    assert.equal(bad.ok, false);
    assert.ok(!bad.ok && /not valid JSON/.test(bad.error));
    assert.equal(parseToolArguments('[1,2]').ok, false);
    assert.equal(parseToolArguments('null').ok, false);
  });

  test('text joined, other content described, errors prefixed, long text cut', () => {
    const text = toolResultText({
      isError: false,
      content: [
        { type: 'text', text: 'Now playing.' },
        { type: 'audio', data: 'A'.repeat(4096), mimeType: 'audio/mpeg' },
        { type: 'image', data: '', mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///song.mp3', name: 'song', mimeType: 'audio/mpeg' },
        { type: 'resource', resource: { uri: 'x://t', text: 'embedded words' } },
        { type: 'resource', resource: { uri: 'x://b', blob: 'AAAA', mimeType: 'application/octet-stream' } },
      ],
    });
    assert.equal(
      text,
      'Now playing.\n[audio content (audio/mpeg, about 3 KB)]\n[image (image/png)]\n[resource link "song": file:///song.mp3 (audio/mpeg)]\nembedded words\n[binary resource x://b (application/octet-stream)]',
    );
    assert.equal(
      toolResultText({ isError: true, content: [{ type: 'text', text: 'no such city' }] }),
      'Error: no such city',
    );
    assert.equal(toolResultText({ isError: false, content: [], structuredContent: { t: 1 } }), '{"t":1}');
    assert.equal(toolResultText({ isError: false, content: [] }), '(no output)');
    const long = toolResultText({ isError: false, content: [{ type: 'text', text: 'x'.repeat(100) }] }, 10);
    assert.match(long, /^x{10}\n\[truncated: 90 more characters\]$/);
    assert.equal(
      spokenResultText({
        isError: false,
        content: [
          { type: 'text', text: ' Bye! ' },
          { type: 'image', data: '', mimeType: 'image/png' },
        ],
      }),
      'Bye!',
    );
  });
});
