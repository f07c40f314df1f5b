import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { Logger } from '../../../core/logger.ts';
import { createCompositeToolSource } from '../../../mcp/composite-tool-source.ts';
import { createLocalTools } from '../../../mcp/local-tools.ts';
import type { LocalTool } from '../../../mcp/local-tools.ts';
import { textResult } from '../../../mcp/contract/tool-source.ts';
import type { ToolSource } from '../../../mcp/contract/tool-source.ts';
import { mockTime, runMocked } from '../../helpers/mock-timers.ts';

const echo = (name: string, tag: string): LocalTool => ({
  name,
  description: `${name} from ${tag}`,
  inputSchema: { type: 'object' },
  handler: async (args) => textResult(`${tag}:${name}:${JSON.stringify(args)}`),
});
const opts = () => ({ signal: new AbortController().signal });
const firstText = (r: { content: Array<{ type: string; text?: string }> }) => r.content[0]?.text ?? '';

/** A logger that records warn calls. */
function recordingLogger(): { log: Logger; warns: Array<{ obj: object; msg?: string }> } {
  const warns: Array<{ obj: object; msg?: string }> = [];
  const log: Logger = {
    ...silentLogger,
    warn: ((obj: object | string, msg?: string) => {
      if (typeof obj === 'object') warns.push({ obj, msg });
    }) as Logger['warn'],
    child: () => log,
  };
  return { log, warns };
}

describe('composite tool source', () => {
  test('joins sources and routes calls; collisions get a source prefix', async () => {
    const local = createLocalTools([echo('get_time', 'local'), echo('play', 'local')]);
    const remote = createLocalTools([echo('play', 'remote'), echo('weather', 'remote')]);
    const { log, warns } = recordingLogger();
    const c = createCompositeToolSource(
      [
        { name: 'local', source: local },
        { name: 'music.server', source: remote },
      ],
      { log },
    );
    const names = (await c.listTools()).map((t) => t.name);
    assert.deepEqual(names, ['get_time', 'play', 'music_server__play', 'weather']);
    assert.ok(warns.some((w) => w.msg === 'tool name collision; renamed'));
    assert.equal(firstText(await c.callTool('play', { a: 1 }, opts())), 'local:play:{"a":1}');
    assert.equal(
      firstText(await c.callTool('music_server__play', {}, opts())),
      'remote:play:{}',
      'routed to the original name',
    );
    assert.equal(firstText(await c.callTool('weather', {}, opts())), 'remote:weather:{}');
    const unknown = await c.callTool('nothing', {}, opts());
    assert.equal(unknown.isError, true);
  });

  test('a source that keeps its names (the device) keeps them however late it is listed; the earlier clashing source is renamed', async () => {
    const bridge = createLocalTools([echo('self_audio_speaker_set_volume', 'bridge'), echo('weather', 'bridge')]);
    const device = createLocalTools([echo('self_audio_speaker_set_volume', 'device')]);
    const c = createCompositeToolSource(
      [
        { name: 'bridge', source: bridge },
        { name: 'device', source: device, keepsNames: true },
      ],
      { log: silentLogger },
    );
    assert.deepEqual(
      (await c.listTools()).map((t) => t.name),
      ['bridge__self_audio_speaker_set_volume', 'weather', 'self_audio_speaker_set_volume'],
      'listed in source order',
    );
    assert.equal(
      firstText(await c.callTool('self_audio_speaker_set_volume', { volume: 30 }, opts())),
      'device:self_audio_speaker_set_volume:{"volume":30}',
    );
    assert.equal(
      firstText(await c.callTool('bridge__self_audio_speaker_set_volume', {}, opts())),
      'bridge:self_audio_speaker_set_volume:{}',
    );
  });

  test('a failing or hanging source is logged and skipped in listTools', async (t) => {
    const timers = mockTime(t);
    const failing: ToolSource = {
      listTools: async () => {
        throw new Error('server crashed');
      },
      callTool: async () => textResult('never'),
    };
    const hanging: ToolSource = {
      listTools: (signal) =>
        new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true })),
      callTool: async () => textResult('never'),
    };
    const { log, warns } = recordingLogger();
    const c = createCompositeToolSource(
      [
        { name: 'bad', source: failing },
        { name: 'slow', source: hanging },
        { name: 'local', source: createLocalTools([echo('ok', 'local')]) },
      ],
      { log, listTimeoutMs: 100 },
    );
    assert.deepEqual(
      (await runMocked(timers, c.listTools(), 'listTools')).map((tool) => tool.name),
      ['ok'],
    );
    assert.equal(Date.now(), 100, 'the hanging source was given up on after listTimeoutMs');
    const skipped = warns
      .filter((w) => w.msg === 'tool source failed to list tools; skipped')
      .map((w) => (w.obj as { source: string }).source);
    assert.deepEqual(skipped.sort(), ['bad', 'slow']);
  });

  test('a source that throws from callTool becomes an error result', async () => {
    const throwing: ToolSource = {
      listTools: async () => [{ name: 'x', inputSchema: { type: 'object' } }],
      callTool: async () => {
        throw new Error('socket closed');
      },
    };
    const c = createCompositeToolSource([{ name: 't', source: throwing }], { log: silentLogger });
    // callTool before any listing lists first.
    const r = await c.callTool('x', {}, opts());
    assert.equal(r.isError, true);
    assert.match(firstText(r), /socket closed/);
  });

  test('sources can be added and removed', async () => {
    const c = createCompositeToolSource([{ name: 'a', source: createLocalTools([echo('one', 'a')]) }], {
      log: silentLogger,
    });
    c.add({ name: 'device', source: createLocalTools([echo('self_light', 'device')]) });
    assert.deepEqual(
      (await c.listTools()).map((t) => t.name),
      ['one', 'self_light'],
    );
    c.remove('device');
    const r = await c.callTool('self_light', {}, opts());
    assert.equal(r.isError, true, 'a removed source is no longer called');
    assert.deepEqual(
      (await c.listTools()).map((t) => t.name),
      ['one'],
    );
  });

  test('sources whose names are alike once made safe get distinct prefixes: no tool is lost to the collision', async () => {
    const c = createCompositeToolSource(
      [
        { name: 'local', source: createLocalTools([echo('play', 'local')]) },
        { name: 'music.box', source: createLocalTools([echo('play', 'dot')]) },
        { name: 'music_box', source: createLocalTools([echo('play', 'underscore')]) },
      ],
      { log: silentLogger },
    );
    assert.deepEqual(
      (await c.listTools()).map((t) => t.name),
      ['play', 'music_box__play', 'music_box_2__play'],
    );
    assert.equal(firstText(await c.callTool('music_box_2__play', {}, opts())), 'underscore:play:{}');
  });
});
