import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { McpServerConfigSchema, isStdioConfig, parseMcpServersConfig } from '../../../mcp/server-config.ts';

describe('mcpServers config', () => {
  test('accepts the shape other MCP hosts use and applies our defaults', () => {
    const cfg = parseMcpServersConfig({
      fs: { command: 'npx', args: ['-y', 'server-filesystem', '/data'], env: { TOKEN: '${NOT_EXPANDED}' } },
      remote: { url: 'https://example.test/mcp', headers: { Authorization: 'Bearer x' } },
    });
    const fs = cfg.fs;
    assert.ok(fs && isStdioConfig(fs));
    assert.equal(fs.enabled, true);
    assert.equal(fs.timeoutMs, 30_000);
    assert.equal(fs.env?.TOKEN, '${NOT_EXPANDED}', 'values are literal');
    const remote = cfg.remote;
    assert.ok(remote && !isStdioConfig(remote));
    assert.equal(remote.transport, 'auto');
  });

  test('resources block defaults', () => {
    const c = McpServerConfigSchema.parse({ command: 'x', resources: {} });
    assert.deepEqual(c.resources, {
      context: 'none',
      budgetChars: 4000,
      tools: false,
      subscribe: true,
      cacheTtlMs: 60000,
    });
    const p = McpServerConfigSchema.parse({ command: 'x', resources: { context: ['docs://*'], budgetChars: 10 } });
    assert.deepEqual(p.resources?.context, ['docs://*']);
  });

  test('validation errors name the key', () => {
    assert.throws(
      () => parseMcpServersConfig({ weather: { command: 'x', timeoutMs: -5 } }),
      /mcpServers\.weather\.timeoutMs/,
    );
    assert.throws(() => parseMcpServersConfig({ weather: { command: 'x', bogus: 1 } }), /mcpServers\.weather.*bogus/);
    assert.throws(() => parseMcpServersConfig({ weather: { url: 'ftp://x' } }), /mcpServers\.weather\.url/);
    assert.throws(
      () => parseMcpServersConfig({ weather: { url: 'http://x', transport: 'carrier-pigeon' } }),
      /mcpServers\.weather\.transport/,
    );
    assert.throws(
      () => parseMcpServersConfig({ weather: {} }),
      /mcpServers\.weather: an MCP server needs either "command"/,
    );
    assert.throws(
      () => parseMcpServersConfig({ w: { command: 'x', resources: { context: 'some' } } }),
      /mcpServers\.w\.resources\.context/,
    );
  });
});
