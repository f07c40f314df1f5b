import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { updateConcerns, uriCovers } from '../../../mcp/resource-uri.ts';

describe('resource URI matching for resources/updated', () => {
  test('equal, or continued after a path, query or fragment boundary', () => {
    assert.equal(uriCovers('file:///a', 'file:///a'), true);
    assert.equal(uriCovers('file:///a', 'file:///a/b'), true);
    assert.equal(uriCovers('file:///a', 'file:///a?page=2'), true);
    assert.equal(uriCovers('file:///a/', 'file:///a/b'), true);
    assert.equal(uriCovers('file:///a', 'file:///ab'), false);
    assert.equal(uriCovers('file:///a/b', 'file:///a'), false);
  });
  test('an update concerns the resource, its sub-resources and its parents, never siblings sharing a prefix', () => {
    assert.equal(updateConcerns('x://items/1', 'x://items/1'), true);
    assert.equal(updateConcerns('x://items/1/part', 'x://items/1'), true);
    assert.equal(updateConcerns('x://items', 'x://items/1'), true);
    assert.equal(updateConcerns('x://items/12', 'x://items/1'), false);
    assert.equal(updateConcerns('x://items/1', 'x://items/12'), false);
  });
});
