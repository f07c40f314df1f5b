/**
 * The summary fold over a real SQLite store: when the turns past the summary are more text than
 * one request to the model holds, only the turns the model was shown are marked folded; the rest
 * stay for the next fold. The model is a scripted `LlmClient` (the cloud service is the one thing
 * faked).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmClient, LlmEvent, LlmStreamRequest } from '../../../llm/types.ts';
import { foldIntoSummary } from '../../../features/memory/summarizer.ts';
import { open, sqliteTarget } from '../../helpers/store-targets.ts';

const DEV = 'a8:00:00:00:00:02';
const PAIR = { deviceId: DEV, clientId: 'client-of-the-summarised-device' };

describe('summary fold', () => {
  const target = sqliteTarget();
  after(() => target.close());

  test('turns too long for one request: only those shown to the model are folded, the rest at the next fold', async () => {
    const store = await open(await target.fresh());
    try {
      // 40 turns of about 1,900 characters: far more than one request holds.
      const turns = Array.from({ length: 40 }, (_, i) => ({
        ...PAIR,
        agent: 'home',
        role: 'user' as const,
        text: `turn-${i}-mark ${'x'.repeat(1900)}`,
      }));
      await store.memory.addTurns(turns);
      const asked: string[] = [];
      const llm: LlmClient = {
        model: 'scripted',
        async *stream(req: LlmStreamRequest): AsyncIterable<LlmEvent> {
          asked.push(
            req.messages.map((m) => ('content' in m && typeof m.content === 'string' ? m.content : '')).join('\n'),
          );
          yield { type: 'text_delta', text: `summary ${asked.length}` };
          yield { type: 'done', finishReason: 'stop' };
        },
      };
      const fold = () =>
        foldIntoSummary({
          store: store.memory,
          llm,
          pair: PAIR,
          agent: 'home',
          keepRecent: 0,
          signal: new AbortController().signal,
        });
      for (let i = 0; i < 10 && (await store.memory.unsummarised(PAIR, 'home', 0)).length > 0; i++) await fold();
      const shown = asked.join('\n');
      for (let i = 0; i < 40; i++)
        assert.match(
          shown,
          new RegExp(`turn-${i}-mark`),
          `turn ${i} was shown to the model before it was marked folded`,
        );
      assert.ok(asked.length > 1, 'more than one fold');
      assert.deepEqual(await store.memory.unsummarised(PAIR, 'home', 0), []);
    } finally {
      await store.close();
    }
  });
});
