import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { createLocalTools, dateTimeTool, endConversationTool } from '../../../mcp/local-tools.ts';
import type { LocalTool } from '../../../mcp/local-tools.ts';
import { validateArgs } from '../../../mcp/local-tools/validate-args.ts';
import { textResult } from '../../../mcp/contract/tool-source.ts';

const opts = () => ({ signal: new AbortController().signal });
const firstText = (r: { content: Array<{ type: string; text?: string }> }) => r.content[0]?.text ?? '';

const volume: LocalTool = {
  name: 'set_volume',
  description: 'Set the speaker volume',
  inputSchema: {
    type: 'object',
    properties: { volume: { type: 'integer', minimum: 0, maximum: 100 }, mode: { enum: ['soft', 'loud'] } },
    required: ['volume'],
    additionalProperties: false,
  },
  async handler(args) {
    return textResult(`volume ${String(args.volume)}`);
  },
};

describe('local tools', () => {
  test('lists specs and calls handlers with valid arguments', async () => {
    const src = createLocalTools([volume]);
    assert.deepEqual(await src.listTools(), [
      { name: 'set_volume', description: 'Set the speaker volume', inputSchema: volume.inputSchema },
    ]);
    const r = await src.callTool('set_volume', { volume: 40 }, opts());
    assert.equal(r.isError, false);
    assert.equal(firstText(r), 'volume 40');
  });

  test('wrong arguments give an error result naming the problem', async () => {
    const src = createLocalTools([volume]);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /volume is required/],
      [{ volume: 'loud' }, /volume must be integer, got string/],
      [{ volume: 4.5 }, /volume must be integer, got number/],
      [{ volume: 120 }, /volume must be <= 100/],
      [{ volume: 1, mode: 'medium' }, /mode must be one of "soft", "loud"/],
      [{ volume: 1, extra: true }, /extra is not a known argument/],
    ];
    for (const [args, re] of cases) {
      const r = await src.callTool('set_volume', args, opts());
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.match(firstText(r), re);
    }
  });

  test('unknown tool, throwing handler and aborted call are error results', async () => {
    const boom: LocalTool = {
      name: 'boom',
      description: 'fails',
      inputSchema: { type: 'object' },
      handler: async () => {
        throw new Error('kaput');
      },
    };
    const slow: LocalTool = {
      name: 'slow',
      description: 'waits for abort',
      inputSchema: { type: 'object' },
      handler: (_args, ctx) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new VoiceError(ErrorCode.Aborted, 'aborted')), {
            once: true,
          }),
        ),
    };
    const src = createLocalTools([boom, slow]);
    const unknown = await src.callTool('nope', {}, opts());
    assert.ok(unknown.isError && /Unknown tool "nope"/.test(firstText(unknown)));
    const failed = await src.callTool('boom', {}, opts());
    assert.ok(failed.isError && /kaput/.test(firstText(failed)));
    const ctrl = new AbortController();
    const pending = src.callTool('slow', {}, { signal: ctrl.signal });
    ctrl.abort();
    const cancelled = await pending;
    assert.ok(cancelled.isError && /cancelled/.test(firstText(cancelled)));
  });

  test('duplicate or invalid names are refused at construction', () => {
    assert.throws(() => createLocalTools([volume, volume]), /defined twice/);
    assert.throws(() => createLocalTools([{ ...volume, name: 'bad name!' }]), /not a valid function name/);
  });

  test('date/time tool uses the configured zone and clock', async () => {
    const src = createLocalTools([
      dateTimeTool({ timeZone: 'Asia/Shanghai', now: () => new Date('2026-05-03T06:05:09Z') }),
    ]);
    const [spec] = await src.listTools();
    assert.equal(spec?.name, 'get_current_datetime');
    const r = await src.callTool('get_current_datetime', {}, opts());
    assert.equal(firstText(r), 'It is Sunday, 2026-05-03, 14:05 (Asia/Shanghai).');
    assert.deepEqual(r.structuredContent, {
      date: '2026-05-03',
      time: '14:05',
      seconds: 9,
      weekday: 'Sunday',
      timeZone: 'Asia/Shanghai',
    });
    assert.equal(r.action, undefined, 'a query result does not stop the loop');
    assert.throws(
      () => dateTimeTool({ timeZone: 'Mars/Olympus' }),
      (e: unknown) => e instanceof VoiceError && e.code === ErrorCode.ConfigInvalid,
    );
  });

  test('end conversation says goodbye with the final / no further response / end session flags', async () => {
    const src = createLocalTools([endConversationTool({ goodbye: '再见！' })]);
    const own = await src.callTool('end_conversation', {}, opts());
    assert.equal(firstText(own), '再见！');
    assert.deepEqual(own.action, { final: true, noFurtherResponse: true, endSession: true });
    assert.equal(own.isError, false);
    const custom = await src.callTool('end_conversation', { farewell: 'See you tomorrow!' }, opts());
    assert.equal(firstText(custom), 'See you tomorrow!');
  });
});

describe('validateArgs', () => {
  test('nested objects, arrays and union types', () => {
    const schema = {
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string' } },
        where: { type: 'object', properties: { lat: { type: 'number' } }, required: ['lat'] },
        note: { type: ['string', 'null'], maxLength: 3 },
      },
    };
    assert.deepEqual(validateArgs({ tags: ['a'], where: { lat: 1.5 }, note: null }, schema), []);
    assert.deepEqual(validateArgs({ tags: ['a', 2], where: {}, note: 'long' }, schema), [
      'tags[1] must be string, got integer',
      'where.lat is required',
      'note must have at most 3 characters',
    ]);
  });
});
