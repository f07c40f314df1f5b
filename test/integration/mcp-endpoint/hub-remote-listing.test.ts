/**
 * The bridges of the other replicas, as a device's tool listing sees them: read from the database
 * at most once per short interval for all the sessions of an agent, not at every turn's listing.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { BridgeHub } from '../../../features/mcp-endpoint/hub.ts';
import { DEFAULT_MCP_ENDPOINT_LIMITS } from '../../../features/mcp-endpoint/limits.ts';
import type { McpRelay } from '../../../store/mcp-endpoint-relay.ts';
import { open, sqliteTarget } from '../../helpers/store-targets.ts';

const target = sqliteTarget();
after(() => target.close());

test("many listings of an agent's tools read the other replicas' bridges once; a later listing reads them again", async () => {
  const store = await open(await target.fresh());
  let reads = 0;
  const relay: McpRelay = Object.assign(Object.create(store.mcpRelay) as McpRelay, {
    remote: (agent: string, owner: string) => {
      reads++;
      return store.mcpRelay.remote(agent, owner);
    },
  });
  const hub = new BridgeHub(DEFAULT_MCP_ENDPOINT_LIMITS, silentLogger, { relay, remoteTtlMs: 60_000 });
  try {
    await store.mcpRelay.publish('other', [
      {
        id: 'b1',
        agent: 'kitchen',
        name: 'calc',
        address: '10.0.0.1',
        connectedAt: '2026-01-01T00:00:00.000Z',
        tools: [{ name: 'add', inputSchema: { type: 'object' } }],
      },
    ]);
    const sessions = Array.from({ length: 5 }, () => hub.toolSource(() => 'kitchen'));
    for (let turn = 0; turn < 4; turn++) {
      for (const s of sessions)
        assert.deepEqual(
          (await s.listTools()).map((t) => t.name),
          ['add'],
        );
    }
    assert.equal(reads, 1, `${reads} reads for 20 listings`);
    const brief = new BridgeHub(DEFAULT_MCP_ENDPOINT_LIMITS, silentLogger, { relay, remoteTtlMs: 20 });
    await brief.toolSource(() => 'kitchen').listTools();
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(
      (await brief.toolSource(() => 'kitchen').listTools()).map((t) => t.name),
      ['add'],
    );
    assert.equal(reads, 3, 'read again once the last read is older than its interval');
    await brief.stop();
  } finally {
    await hub.stop();
    await store.close();
  }
});
