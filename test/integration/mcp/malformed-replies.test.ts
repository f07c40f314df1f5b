// A server that answers one malformed reply (a result that fails the schema) over real stdio: that
// call fails with a message the model can read, the shared connection stays up, a call of another
// session in flight at the same moment completes, and the next call on the connection works.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { createMcpManager, type McpManager } from '../../../mcp/manager.ts';
import type { ToolResult } from '../../../mcp/contract/tool-source.ts';
import { recordingLogger, REPO_ROOT, resourcesOf, servers } from './mcp-test-helpers.ts';

const MALFORMED = fileURLToPath(new URL('../../fixtures/mcp-malformed-server.ts', import.meta.url));
const sig = (): AbortSignal => new AbortController().signal;
const text = (r: ToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('MCP: a malformed reply fails one call, not the connection', () => {
  let m: McpManager;
  const log = recordingLogger();
  before(async () => {
    m = createMcpManager({
      log,
      servers: servers({
        odd: {
          command: process.execPath,
          args: ['--import', 'tsx', MALFORMED],
          cwd: REPO_ROOT,
          resources: { tools: true },
        },
      }),
    });
    await m.start();
  });
  after(() => m.close());

  test('a tool result whose content is not an array: that call fails clearly; other sessions and the next call are unaffected', async () => {
    const other = m.sessionView();
    const mine = m.sessionView();
    const slow = other.callTool('odd__slow', {}, { signal: sig() });
    const bad = await mine.callTool('odd__bad', {}, { signal: sig() });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /malformed tool result: "content" is a string/);
    assert.equal(text(await slow), 'slow but fine', 'the other session’s call in flight completed');
    assert.equal(text(await mine.callTool('odd__good', {}, { signal: sig() })), 'good result');
    assert.equal(m.stats().odd?.reconnects, 0, 'no reconnect');
    assert.ok(!log.records.some((r) => /reconnect|lost the connection/.test(r.msg)), 'nothing logged about the link');
  });

  test('a resources/read whose contents is not an array: a ToolFailed error, then reads work', async () => {
    const src = await resourcesOf(m, 'odd__good');
    assert.ok(src);
    await assert.rejects(
      src.readResource('bad://page'),
      (err: unknown) =>
        err instanceof VoiceError && err.code === ErrorCode.ToolFailed && /malformed result/.test(err.message),
    );
    const [page] = await src.readResource('good://page');
    assert.equal(page?.text, 'good page');
    assert.equal(m.stats().odd?.reconnects, 0);
  });
});
