/**
 * @module The MCP endpoint's tokens: each belongs to one agent, at most one per agent (creating
 * one replaces the agent's earlier token). Only a SHA-256 hash is stored; a token is found by its
 * hash (the primary key) and the hashes compared again in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Writer } from './writer.ts';

export interface McpTokenInfo {
  agent: string;
  createdAt: string;
}

export interface McpTokens {
  /** A new token for `agent`, replacing its earlier one; returned once, never stored in clear. */
  issue(agent: string): Promise<{ token: string; createdAt: string }>;
  /** The agent a token belongs to; undefined for an unknown or revoked token. */
  verify(token: string): Promise<string | undefined>;
  /** The agent's token, when it has one (when it was made, not the token). */
  info(agent: string): Promise<McpTokenInfo | undefined>;
  /** Removes the agent's token; false when it had none. */
  revoke(agent: string): Promise<boolean>;
}

/** Token hashes are hex SHA-256; tokens are 32 random bytes, base64url (43 characters). */
export function hashMcpToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;

export class StoreMcpTokens implements McpTokens {
  readonly #w: Writer;
  readonly #now: () => number;

  constructor(writer: Writer, now: () => number = Date.now) {
    this.#w = writer;
    this.#now = now;
  }

  async issue(agent: string): Promise<{ token: string; createdAt: string }> {
    const token = randomBytes(32).toString('base64url');
    const createdAt = new Date(this.#now()).toISOString();
    await this.#w.write(async (trx) => {
      await trx.deleteFrom('mcp_tokens').where('agent', '=', agent).execute();
      await trx
        .insertInto('mcp_tokens')
        .values({ agent, token_hash: hashMcpToken(token), created_at: createdAt })
        .execute();
    });
    return { token, createdAt };
  }

  async verify(token: string): Promise<string | undefined> {
    if (!TOKEN_SHAPE.test(token)) return undefined;
    const hash = hashMcpToken(token);
    const row = await this.#w.db
      .selectFrom('mcp_tokens')
      .select(['agent', 'token_hash'])
      .where('token_hash', '=', hash)
      .executeTakeFirst();
    if (!row) return undefined;
    const a = Buffer.from(row.token_hash, 'hex');
    const b = Buffer.from(hash, 'hex');
    return a.length === b.length && timingSafeEqual(a, b) ? row.agent : undefined;
  }

  async info(agent: string): Promise<McpTokenInfo | undefined> {
    const row = await this.#w.db
      .selectFrom('mcp_tokens')
      .select(['agent', 'created_at'])
      .where('agent', '=', agent)
      .orderBy('created_at', 'desc')
      .executeTakeFirst();
    return row ? { agent: row.agent, createdAt: row.created_at } : undefined;
  }

  async revoke(agent: string): Promise<boolean> {
    return this.#w.write(async (trx) => {
      const r = await trx.deleteFrom('mcp_tokens').where('agent', '=', agent).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    });
  }
}
