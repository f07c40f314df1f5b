/**
 * The MCP endpoint's tokens on the store, the same cases on SQLite and PostgreSQL: stored hashed,
 * one per agent (a new one replaces the old), revoked by agent.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashMcpToken } from '../../../store/mcp-endpoint-tokens.ts';
import { open, postgresTarget, raw, sqliteTarget } from '../../helpers/store-targets.ts';

for (const target of [sqliteTarget(), postgresTarget()]) {
  describe(`mcp tokens on ${target.name}`, () => {
    after(() => target.close());

    test('issue, verify, rotate, revoke; only the hash is stored', async () => {
      const db = await target.fresh();
      const store = await open(db);
      const conn = await raw(db);
      try {
        const { token } = await store.mcpTokens.issue('kitchen');
        assert.match(token, /^[A-Za-z0-9_-]{43}$/);
        assert.equal(await store.mcpTokens.verify(token), 'kitchen');
        assert.equal(await store.mcpTokens.verify(token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')), undefined);
        assert.equal(await store.mcpTokens.verify(''), undefined);
        assert.equal(await store.mcpTokens.verify('x'.repeat(5000)), undefined);
        const rows = await conn.db.selectFrom('mcp_tokens').selectAll().execute();
        assert.deepEqual(
          rows.map((r) => [r.agent, r.token_hash]),
          [['kitchen', hashMcpToken(token)]],
        );
        assert.ok(!JSON.stringify(rows).includes(token), 'the token itself is never stored');

        const other = await store.mcpTokens.issue('office');
        const rotated = await store.mcpTokens.issue('kitchen');
        assert.equal(await store.mcpTokens.verify(token), undefined, 'rotating replaces the old token');
        assert.equal(await store.mcpTokens.verify(rotated.token), 'kitchen');
        assert.equal(await store.mcpTokens.verify(other.token), 'office');
        assert.equal((await store.mcpTokens.info('kitchen'))?.createdAt, rotated.createdAt);

        assert.equal(await store.mcpTokens.revoke('kitchen'), true);
        assert.equal(await store.mcpTokens.revoke('kitchen'), false);
        assert.equal(await store.mcpTokens.verify(rotated.token), undefined);
        assert.equal(await store.mcpTokens.info('kitchen'), undefined);
        assert.equal(await store.mcpTokens.verify(other.token), 'office');
      } finally {
        await conn.db.destroy();
        await store.close();
      }
    });
  });
}
