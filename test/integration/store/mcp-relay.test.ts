/**
 * The replicas' shared view of the MCP endpoint on SQLite and PostgreSQL: published bridges (other
 * processes' only, stale ones ignored), and forwarded calls claimed exactly once.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BRIDGE_STALE_MS, MAX_RELAYED_BYTES } from '../../../store/mcp-endpoint-relay.ts';
import { open, postgresTarget, sqliteTarget } from '../../helpers/store-targets.ts';

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`mcp relay on ${target.name}`, () => {
    after(() => target.close());

    test("publish, read the others', stale ones ignored; a call is claimed once and answered", async () => {
      let now = 1_000_000;
      const store = await open(await target.fresh(), { now: () => now });
      try {
        const relay = store.mcpRelay;
        await relay.publish('A', [
          {
            id: 'b1',
            agent: 'kitchen',
            name: 'calc',
            address: '10.0.0.1',
            connectedAt: '2026-01-01T00:00:00.000Z',
            tools: [{ name: 'add', inputSchema: { type: 'object' } }],
          },
        ]);
        await relay.publish('B', [
          {
            id: 'b2',
            agent: 'kitchen',
            name: 'lights',
            address: '10.0.0.2',
            connectedAt: '2026-01-01T00:00:00.000Z',
            tools: [],
          },
        ]);
        assert.deepEqual(
          (await relay.remote('kitchen', 'B')).map((r) => [
            r.id,
            r.owner,
            r.name,
            r.address,
            r.connectedAt,
            r.tools.length,
          ]),
          [['b1', 'A', 'calc', '10.0.0.1', '2026-01-01T00:00:00.000Z', 1]],
        );
        assert.deepEqual(await relay.remote('office', 'B'), []);
        await relay.publish('A', []);
        assert.deepEqual(await relay.remote('kitchen', 'B'), [], 'a new publish replaces the old one');
        await relay.publish('A', [
          {
            id: 'b1',
            agent: 'kitchen',
            name: 'calc',
            address: '10.0.0.1',
            connectedAt: '2026-01-01T00:00:00.000Z',
            tools: [],
          },
        ]);
        now += BRIDGE_STALE_MS + 1;
        assert.deepEqual(await relay.remote('kitchen', 'B'), [], 'a process silent too long is ignored');

        await relay.enqueue('A', { id: 'c1', bridgeId: 'b1', tool: 'add', args: { a: 1 } });
        assert.equal(await relay.take('c1'), undefined, 'not answered yet');
        const [first, second] = await Promise.all([relay.claim('A'), relay.claim('A')]);
        assert.equal(first.length + second.length, 1, 'claimed once');
        assert.deepEqual([...first, ...second][0], { id: 'c1', bridgeId: 'b1', tool: 'add', args: { a: 1 } });
        assert.deepEqual(await relay.claim('B'), []);
        await relay.finish('c1', { content: [{ type: 'text', text: '2' }], isError: false });
        assert.deepEqual(await relay.take('c1'), { content: [{ type: 'text', text: '2' }], isError: false });
        assert.equal(await relay.take('c1'), undefined, 'taken once');
        await relay.clear('A');
        now -= BRIDGE_STALE_MS + 1;
        assert.deepEqual(await relay.remote('kitchen', 'B'), []);
      } finally {
        await store.close();
      }
    });

    test("a heartbeat keeps an owner's bridges fresh without rewriting their tools", async () => {
      let now = 1_000_000;
      const store = await open(await target.fresh(), { now: () => now });
      try {
        const relay = store.mcpRelay;
        await relay.publish('A', [
          {
            id: 'b1',
            agent: 'kitchen',
            name: 'calc',
            address: '10.0.0.1',
            connectedAt: '2026-01-01T00:00:00.000Z',
            tools: [{ name: 'add', inputSchema: { type: 'object' } }],
          },
        ]);
        now += BRIDGE_STALE_MS - 1000;
        await relay.heartbeat('A');
        now += BRIDGE_STALE_MS - 1000;
        assert.deepEqual(
          (await relay.remote('kitchen', 'B')).map((r) => [r.id, r.tools.length]),
          [['b1', 1]],
          'fresh by its heartbeat, tools as published',
        );
        now += BRIDGE_STALE_MS + 1;
        assert.deepEqual(await relay.remote('kitchen', 'B'), [], 'stale once the heartbeats stop');
      } finally {
        await store.close();
      }
    });

    test('a result or arguments over the bound do not go into the database whole', async () => {
      const store = await open(await target.fresh());
      try {
        const relay = store.mcpRelay;
        const huge = 'x'.repeat(MAX_RELAYED_BYTES + 1);
        await assert.rejects(
          relay.enqueue('A', { id: 'c2', bridgeId: 'b1', tool: 'echo', args: { text: huge } }),
          /over the limit/,
        );
        await relay.enqueue('A', { id: 'c3', bridgeId: 'b1', tool: 'echo', args: { text: 'hi' } });
        await relay.finish('c3', { content: [{ type: 'text', text: huge }], isError: false });
        const taken = (await relay.take('c3')) as { content: Array<{ text: string }>; isError: boolean };
        assert.equal(taken.isError, true);
        assert.match(taken.content[0]?.text ?? '', /over the limit of \d+ bytes/);
        assert.ok(JSON.stringify(taken).length < 1000);
      } finally {
        await store.close();
      }
    });
  });
}
