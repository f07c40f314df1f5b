// The result dispatcher's routing without a device: which content is media, in which order, and
// what the flags decide when nothing plays.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { ToolCallResult } from '../../../llm/react.ts';
import type { ResourceSource, ToolResult } from '../../../mcp/tool-source.ts';
import { createResultDispatcher, mediaOf } from '../../../voice/dispatch/result-dispatcher.ts';
import type { DispatchContext } from '../../../voice/dispatch/dispatch.ts';

const OPTS = { pageSize: 1024, pageTimeoutMs: 1000, retryDelayMs: 10, maxTries: 1, log: silentLogger };
const NO_SOURCE: ResourceSource = {
  listResources: async () => [],
  listResourceTemplates: async () => [],
  readResource: async () => [],
};
const b64 = Buffer.from('RIFF').toString('base64');

function result(r: Partial<ToolResult>): ToolResult {
  return { content: [], isError: false, ...r };
}

describe('mediaOf', () => {
  test('a link title of any size becomes a label of at most 80 characters', () => {
    const [item] = mediaOf(result({ resources: NO_SOURCE, content: [{ type: 'resource_link', uri: 'x://t.mp3', name: 't', title: 'long '.repeat(20_000) }] }), OPTS);
    assert.ok(item, 'the link is media');
    assert.equal(item.label.length, 80);
    assert.ok(item.label.endsWith('…'));
  });

  test('local media first, then content in order: audio, embedded audio, audio links', () => {
    const items = mediaOf(
      result({
        media: { label: 'Song', mimeType: 'audio/mpeg', open: async function* () {} },
        resources: NO_SOURCE,
        content: [
          { type: 'text', text: 'here' },
          { type: 'resource_link', uri: 'x://track.mp3', name: 'Track' },
          { type: 'audio', data: b64, mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'x://clip/beep', mimeType: 'audio/wav', blob: b64 } },
        ],
      }),
      OPTS,
    );
    assert.deepEqual(
      items.map((i) => [i.kind, i.label, i.mimeType]),
      [
        ['local', 'Song', 'audio/mpeg'],
        ['link', 'Track', undefined],
        ['audio', 'audio', 'audio/wav'],
        ['embedded', 'beep', 'audio/wav'],
      ],
    );
  });

  test('links are audio by MIME type, else by an audio extension in the uri, description or name', () => {
    const link = (l: Record<string, string>): ToolResult => result({ resources: NO_SOURCE, content: [{ type: 'resource_link', uri: 'x://a', ...l }] });
    assert.equal(mediaOf(link({ mimeType: 'audio/ogg' }), OPTS).length, 1);
    assert.equal(mediaOf(link({ mimeType: 'text/plain', name: 'song.mp3' }), OPTS).length, 0, 'a MIME type wins over the name');
    assert.equal(mediaOf(link({ uri: 'x://b/song.flac' }), OPTS).length, 1);
    assert.equal(mediaOf(link({ description: 'http://h/a.opus?x=1' }), OPTS).length, 1);
    assert.equal(mediaOf(link({ name: 'notes.txt' }), OPTS).length, 0);
  });

  test('nothing plays from an error result, from embedded text, or from a link without a source to read it', () => {
    assert.deepEqual(mediaOf(result({ isError: true, content: [{ type: 'audio', data: b64, mimeType: 'audio/wav' }] }), OPTS), []);
    assert.deepEqual(mediaOf(result({ content: [{ type: 'resource', resource: { uri: 'x://t', mimeType: 'audio/wav', text: 'words' } }] }), OPTS), []);
    assert.deepEqual(mediaOf(result({ content: [{ type: 'resource_link', uri: 'x://a.mp3', mimeType: 'audio/mpeg' }] }), OPTS), []);
  });
});

describe('dispatch without media: the flags decide, and nothing is spoken here', () => {
  const spoken: string[] = [];
  const ctx = {
    out: undefined as never,
    flushSpeech: async () => {},
    speak: (t: string) => spoken.push(t),
    signal: new AbortController().signal,
    sampleRate: 24000,
  } satisfies DispatchContext;
  const d = createResultDispatcher({ ...OPTS, playbackError: (l) => `could not play ${l}` });
  const call = (r: ToolResult): ToolCallResult => ({ call: { id: '1', name: 't', arguments: '{}' }, result: r });

  test('silenceLLM beats final beats noFurtherResponse; no flag goes on', async () => {
    assert.deepEqual(await d.dispatch([call(result({ action: { final: true } })), call(result({ action: { silenceLLM: true } }))], ctx), { continue: false, reason: 'silence' });
    assert.deepEqual(
      await d.dispatch([call(result({ action: { noFurtherResponse: true } })), call(result({ action: { final: true }, content: [{ type: 'text', text: 'Bye.' }] }))], ctx),
      { continue: false, reason: 'final' },
    );
    assert.deepEqual(await d.dispatch([call(result({ action: { noFurtherResponse: true } }))], ctx), { continue: false, reason: 'no_further_response' });
    assert.deepEqual(await d.dispatch([call(result({ content: [{ type: 'text', text: 'x' }] }))], ctx), { continue: true });
    assert.deepEqual(spoken, [], 'a final result is spoken by llm/react, once, not here too');
  });
});
