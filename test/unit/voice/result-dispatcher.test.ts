// The result dispatcher without a device: which content is media, in which order, and the decision
// it returns for each kind of result (the ReAct loop acts on it: test/integration/llm/react.test.ts).
// Media runs through a real ffmpeg and, for resource links, a real MCP client reading pages.
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { encodeWav } from '../../../audio/pcm/wav.ts';
import type { ToolCallResult } from '../../../llm/round-decision.ts';
import type { ResourceLinkContent, ResourceSource, ToolResult } from '../../../mcp/contract/tool-source.ts';
import { tone } from '../../fixtures/audio/make-audio.ts';
import { startPagedServer, type PagedServer } from '../../fixtures/mcp-paged-server.ts';
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
    const [item] = mediaOf(
      result({
        resources: NO_SOURCE,
        content: [{ type: 'resource_link', uri: 'x://t.mp3', name: 't', title: 'long '.repeat(20_000) }],
      }),
      OPTS,
    );
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
    const link = (l: Record<string, string>): ToolResult =>
      result({ resources: NO_SOURCE, content: [{ type: 'resource_link', uri: 'x://a', ...l }] });
    assert.equal(mediaOf(link({ mimeType: 'audio/ogg' }), OPTS).length, 1);
    assert.equal(
      mediaOf(link({ mimeType: 'text/plain', name: 'song.mp3' }), OPTS).length,
      0,
      'a MIME type wins over the name',
    );
    assert.equal(mediaOf(link({ uri: 'x://b/song.flac' }), OPTS).length, 1);
    assert.equal(mediaOf(link({ description: 'http://h/a.opus?x=1' }), OPTS).length, 1);
    assert.equal(mediaOf(link({ name: 'notes.txt' }), OPTS).length, 0);
  });

  test('nothing plays from an error result, from embedded text, or from a link without a source to read it', () => {
    assert.deepEqual(
      mediaOf(result({ isError: true, content: [{ type: 'audio', data: b64, mimeType: 'audio/wav' }] }), OPTS),
      [],
    );
    assert.deepEqual(
      mediaOf(
        result({ content: [{ type: 'resource', resource: { uri: 'x://t', mimeType: 'audio/wav', text: 'words' } }] }),
        OPTS,
      ),
      [],
    );
    assert.deepEqual(
      mediaOf(result({ content: [{ type: 'resource_link', uri: 'x://a.mp3', mimeType: 'audio/mpeg' }] }), OPTS),
      [],
    );
  });
});

describe('the round decision the dispatcher returns, for each kind of result', () => {
  const WAV_URL = 'http://music.test/tone.wav';
  const WAV = encodeWav(tone(600, 16000, 440), 16000);
  const servers: PagedServer[] = [];
  after(async () => {
    for (const srv of servers) await srv.close();
  });

  /** A context whose audio out drains the PCM it is given (ffmpeg's real output) and records what ran, in order. */
  function context(): { ctx: DispatchContext; events: string[]; samples: number[] } {
    const events: string[] = [];
    const samples: number[] = [];
    const ctx: DispatchContext = {
      out: {
        play: async (label, pcm, onFirstFrame) => {
          let n = 0;
          for await (const chunk of pcm) {
            if (n === 0) onFirstFrame?.();
            n += chunk.length;
          }
          events.push(`play ${label}`);
          samples.push(n);
        },
      },
      flushSpeech: async () => {
        events.push('flush');
      },
      speak: (t) => events.push(`speak ${t}`),
      signal: new AbortController().signal,
      sampleRate: 16000,
    };
    return { ctx, events, samples };
  }
  const d = createResultDispatcher({ ...OPTS, pageSize: 4096, playbackError: (l) => `Could not play ${l}.` });
  const call = (r: ToolResult, name = 't'): ToolCallResult => ({
    call: { id: name, name, arguments: '{}' },
    result: r,
  });
  const text = (t: string): ToolResult['content'][number] => ({ type: 'text', text: t });

  test('text, images, non-audio links and errors go back to the model, and nothing plays or is said', async () => {
    const { ctx, events } = context();
    const results = [
      call(result({ content: [text('21 degrees')] })),
      call(result({ content: [{ type: 'image', data: b64, mimeType: 'image/png' }] })),
      call(
        result({
          resources: NO_SOURCE,
          content: [{ type: 'resource_link', uri: 'x://notes.txt', mimeType: 'text/plain' }],
        }),
      ),
      call(result({ isError: true, content: [{ type: 'audio', data: b64, mimeType: 'audio/wav' }] })),
    ];
    assert.deepEqual(await d.dispatch(results, ctx), { next: 'observe' });
    assert.deepEqual(events, []);
  });

  test("final and noFurtherResponse end the turn with the flagged results' text to say; silenceLLM ends it with nothing; nothing is said here", async () => {
    const { ctx, events } = context();
    assert.deepEqual(
      await d.dispatch(
        [
          call(result({ action: { final: true }, content: [text('Bye.')] })),
          call(result({ content: [text('not flagged')] })),
        ],
        ctx,
      ),
      {
        next: 'end',
        reason: 'final',
        say: 'Bye.',
      },
    );
    assert.deepEqual(
      await d.dispatch([call(result({ action: { noFurtherResponse: true }, content: [text('Done.')] }))], ctx),
      { next: 'end', reason: 'no_further_response', say: 'Done.' },
    );
    assert.deepEqual(await d.dispatch([call(result({ action: { noFurtherResponse: true } }))], ctx), {
      next: 'end',
      reason: 'no_further_response',
      say: '',
    });
    assert.deepEqual(
      await d.dispatch(
        [
          call(result({ action: { final: true }, content: [text('Bye.')] })),
          call(result({ action: { silenceLLM: true }, content: [text('hush')] })),
        ],
        ctx,
      ),
      {
        next: 'end',
        reason: 'silence',
        say: '',
      },
    );
    assert.deepEqual(
      await d.dispatch(
        [
          call(result({ action: { noFurtherResponse: true }, content: [text('One.')] })),
          call(result({ action: { final: true }, content: [text('Two.')] })),
        ],
        ctx,
      ),
      { next: 'end', reason: 'final', say: 'One.\nTwo.' },
      'final wins over noFurtherResponse; both results are said',
    );
    assert.deepEqual(events, [], 'the end text is spoken by the ReAct loop, not here');
  });

  test('audio content is played after the words so far, and ends the turn (over a final flag, whose text is not said)', async () => {
    const { ctx, events, samples } = context();
    const wav = WAV.toString('base64');
    const decision = await d.dispatch(
      [
        call(
          result({
            action: { final: true },
            content: [text('Bye.'), { type: 'audio', data: wav, mimeType: 'audio/wav' }],
          }),
        ),
      ],
      ctx,
    );
    assert.deepEqual(decision, { next: 'played', said: [] });
    assert.deepEqual(events, ['flush', 'play ♪ audio']);
    assert.ok(Math.abs((samples[0] ?? 0) - 9600) < 320, `600 ms at 16 kHz played: ${samples[0]} samples`);
  });

  test('an audio resource link is read in pages from the server that produced it and played', async () => {
    const srv = await startPagedServer({ style: 'template', files: { [WAV_URL]: WAV } });
    servers.push(srv);
    const { ctx, events, samples } = context();
    const link: ResourceLinkContent = {
      type: 'resource_link',
      uri: 'resource://read_from_http',
      name: 'Tone',
      description: WAV_URL,
      mimeType: 'audio/wav',
    };
    assert.deepEqual(await d.dispatch([call(result({ resources: srv.source, content: [link] }))], ctx), {
      next: 'played',
      said: [],
    });
    assert.deepEqual(events, ['flush', 'play ♪ Tone']);
    assert.equal(srv.served.length, Math.ceil(WAV.length / 4096), `${WAV.length} bytes in pages of 4096`);
    assert.ok(Math.abs((samples[0] ?? 0) - 9600) < 320, `600 ms at 16 kHz played: ${samples[0]} samples`);
  });

  test('media that cannot play is replaced by a spoken note, returned for the history; the rest still plays', async () => {
    const { ctx, events } = context();
    const junk = randomBytes(4096).toString('base64');
    const decision = await d.dispatch(
      [
        call(
          result({
            content: [
              { type: 'resource', resource: { uri: 'x://clips/broken.wav', mimeType: 'audio/wav', blob: junk } },
              { type: 'audio', data: WAV.toString('base64'), mimeType: 'audio/wav' },
            ],
          }),
        ),
      ],
      ctx,
    );
    assert.deepEqual(decision, { next: 'played', said: ['Could not play broken.wav.'] });
    assert.deepEqual(events, ['flush', 'speak Could not play broken.wav.', 'flush', 'play ♪ audio']);
  });
});
