/**
 * The end-of-turn corpus (test/fixtures/end-of-turn/corpus.ts): 48 utterances spoken by espeak-ng,
 * 24 with a 400–900 ms pause inside, through real Opus, Silero and the listener, with a streaming
 * recogniser's partials emulated in audio time (test/helpers/end-of-turn-corpus.ts). The figures
 * are exact to a packet, not wall-clock times, so the goals of issue 43 can be asserted: at most
 * 5 % of the paused utterances cut at their pause, and the utterances said in one go ended 300 ms
 * (p50) after their last voiced sample. The same audio under silence alone (the settings before
 * the end of turn read transcripts) shows the corpus does cut: otherwise the test proves nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../../core/logger.ts';
import { CORPUS } from '../../fixtures/end-of-turn/corpus.ts';
import { runCorpus, summarize, type CorpusSettings } from '../../helpers/end-of-turn-corpus.ts';
import { VadSchema } from '../../../server/config-schema.ts';

/** Silence alone: the defaults before issue 43. */
const SILENCE_ONLY: CorpusSettings = {
  completeSilenceMs: 0,
  minSilenceMs: 700,
  unfinishedSilenceMs: 700,
  earlyStartMs: 300,
};

describe('end of turn over the corpus', () => {
  it('cuts at most 5 % of paused utterances and ends the others 300 ms after the speech (p50)', async (t) => {
    const defaults = VadSchema.parse({});
    const now: CorpusSettings = {
      completeSilenceMs: defaults.completeSilenceMs,
      minSilenceMs: defaults.minSilenceMs,
      unfinishedSilenceMs: defaults.unfinishedSilenceMs,
      earlyStartMs: defaults.earlyStartMs,
    };
    assert.ok(CORPUS.length >= 40, 'at least 40 utterances');
    const [before, after] = await runCorpus(
      CORPUS,
      [SILENCE_ONLY, now],
      { latencyMs: 100, everyMs: 120 },
      silentLogger,
    );
    const b = summarize(before ?? []);
    const a = summarize(after ?? []);
    for (const [name, s] of [
      ['silence only', b],
      ['end of turn', a],
    ] as const)
      t.diagnostic(
        `${name}: cut ${s.cuts}/${s.paused} (${(s.cutRate * 100).toFixed(1)} %), delay p50 ${s.p50} ms, p95 ${s.p95} ms`,
      );
    for (const r of after ?? []) if (r.cut) t.diagnostic(`cut: ${r.item.parts.join(' … ')}`);
    assert.equal(b.unended + a.unended, 0, 'every utterance ended');
    assert.ok(b.cuts >= 5, `silence alone cuts the corpus (${b.cuts} cuts): its pauses are long enough to matter`);
    assert.ok(a.cutRate <= 0.05, `cut rate ${(a.cutRate * 100).toFixed(1)} % over 5 %`);
    assert.ok(a.p50 <= 300, `end-of-turn delay p50 ${a.p50} ms over 300 ms`);
    assert.ok(a.p50 < b.p50, 'faster than silence alone');
  });
});
