import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { linkedUris, normalizeToolResult } from '../../../mcp/normalize.ts';
import { renderContentsForModel } from '../../../mcp/resource-cache.ts';
import { uriShapeProblem } from '../../../mcp/resource-tools.ts';

describe('tool result normalization', () => {
  test('keeps every standard block type', () => {
    const r = normalizeToolResult({
      content: [
        { type: 'text', text: 'hi', annotations: { audience: ['user'] } },
        { type: 'image', data: 'iVBO', mimeType: 'image/png' },
        { type: 'audio', data: 'UklG', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'x://1', name: 'one', size: 3, extra: true },
        { type: 'resource', resource: { uri: 'x://2', mimeType: 'text/plain', text: 'two' } },
        { type: 'resource', resource: { uri: 'x://3', blob: 'AAAA' } },
      ],
      isError: false,
    });
    assert.deepEqual(r.content, [
      { type: 'text', text: 'hi' },
      { type: 'image', data: 'iVBO', mimeType: 'image/png' },
      { type: 'audio', data: 'UklG', mimeType: 'audio/wav' },
      { type: 'resource_link', uri: 'x://1', name: 'one', size: 3 },
      { type: 'resource', resource: { uri: 'x://2', mimeType: 'text/plain', text: 'two' } },
      { type: 'resource', resource: { uri: 'x://3', blob: 'AAAA' } },
    ]);
    assert.equal(r.isError, false);
    assert.deepEqual(linkedUris(r), ['x://1', 'x://2', 'x://3']);
  });

  test('unknown and malformed blocks become short notes, never throws', () => {
    const r = normalizeToolResult({
      content: [
        { type: 'video', url: 'x' },
        { type: 'text', text: 'ok' },
        7,
        null,
        { type: 'image' },
        { type: 'resource_link' },
      ],
      isError: true,
    });
    assert.equal(r.isError, true);
    assert.equal(r.content.length, 6);
    assert.match(r.content[0]?.type === 'text' ? r.content[0].text : '', /unsupported content block type "video"/);
    assert.deepEqual(r.content[1], { type: 'text', text: 'ok' });
    assert.ok(r.content.every((c) => c.type === 'text'));
    assert.equal(normalizeToolResult('nonsense').isError, true);
    assert.deepEqual(normalizeToolResult({}).content, []);
  });

  test('structuredContent passes through and is added as text when no text block exists', () => {
    const r = normalizeToolResult({ content: [], structuredContent: { tempC: 21 } });
    assert.deepEqual(r.structuredContent, { tempC: 21 });
    assert.deepEqual(r.content, [{ type: 'text', text: '{"tempC":21}' }]);
    const withText = normalizeToolResult({
      content: [{ type: 'text', text: 'warm' }],
      structuredContent: { tempC: 21 },
    });
    assert.equal(withText.content.length, 1);
  });

  test("the firmware's nested image shape is unpacked", () => {
    const r = normalizeToolResult({
      content: [{ type: 'image', image: JSON.stringify({ type: 'image', mimeType: 'image/jpeg', data: '/9j/' }) }],
    });
    assert.deepEqual(r.content, [{ type: 'image', data: '/9j/', mimeType: 'image/jpeg' }]);
  });
});

describe('resource rendering and URI checks', () => {
  test('small text inline, large text and blobs as stubs', () => {
    assert.equal(renderContentsForModel([{ uri: 'a://1', text: 'short' }]), 'short');
    const big = renderContentsForModel([{ uri: 'a://2', mimeType: 'text/plain', text: 'y'.repeat(50) }], 10, 5);
    assert.equal(big, '[resource a://2 (text/plain, 50 chars) is too large to include in full; beginning: yyyyy…]');
    assert.equal(
      renderContentsForModel([{ uri: 'a://3', mimeType: 'image/png', blob: 'AAAAAAAA' }]),
      '[binary resource a://3 (image/png, about 6 bytes) not shown]',
    );
    assert.equal(renderContentsForModel([]), '(empty resource)');
  });

  test('URI shape problems', () => {
    assert.equal(uriShapeProblem('demo://resource/1'), undefined);
    assert.match(uriShapeProblem('file:///a/../etc/passwd') ?? '', /\.\./);
    assert.match(uriShapeProblem('x://a/%2E%2E/b') ?? '', /\.\./);
    assert.match(uriShapeProblem('x://a\nb') ?? '', /control/);
    assert.match(uriShapeProblem('x://%E0%A4%A') ?? '', /percent/);
    assert.match(uriShapeProblem('') ?? '', /empty/);
  });
});
