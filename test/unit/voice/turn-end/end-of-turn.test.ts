import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../../../../core/logger.ts';
import { EndOfTurn, longestSilenceMs, shortestSilenceMs } from '../../../../voice/turn-end/end-of-turn.ts';
import type { Completeness } from '../../../../voice/turn-end/completeness.ts';
import { createLlmJudge, type CompletenessJudge } from '../../../../voice/turn-end/llm-judge.ts';
import type { LlmClient } from '../../../../llm/types.ts';

const SETTINGS = { completeSilenceMs: 250, minSilenceMs: 700, unfinishedSilenceMs: 1500 };

describe('EndOfTurn', () => {
  it('waits the plain silence until there is a transcript', () => {
    const eot = new EndOfTurn(SETTINGS, silentLogger);
    assert.equal(eot.verdict, 'unknown');
    assert.equal(eot.ends(699), false);
    assert.equal(eot.ends(700), true);
  });

  it('ends a complete-looking transcript after the short silence, an unfinished one after the long one', () => {
    const eot = new EndOfTurn(SETTINGS, silentLogger);
    eot.transcript('what is the capital of France');
    assert.equal(eot.ends(249), false);
    assert.equal(eot.ends(250), true);
    eot.transcript('what is the capital of');
    assert.equal(eot.silenceNeededMs, 1500);
    assert.equal(eot.ends(1499), false);
    assert.equal(eot.ends(1500), true);
  });

  it('forgets the transcript at a new utterance', () => {
    const eot = new EndOfTurn(SETTINGS, silentLogger);
    eot.transcript('turn on the light');
    eot.reset();
    assert.equal(eot.verdict, 'unknown');
    assert.equal(eot.text, '');
    assert.equal(eot.silenceNeededMs, 700);
  });

  it('with completeSilenceMs 0 ignores transcripts: every utterance waits minSilenceMs', () => {
    const off = { ...SETTINGS, completeSilenceMs: 0 };
    const eot = new EndOfTurn(off, silentLogger);
    eot.transcript('what is the capital of');
    assert.equal(eot.silenceNeededMs, 700);
    eot.transcript('thank you');
    assert.equal(eot.silenceNeededMs, 700);
    assert.equal(longestSilenceMs(off), 700, "the VAD's own end is the plain silence");
  });

  it("never waits less than minSilenceMs for an unfinished transcript, and the VAD's end is the longest wait", () => {
    const eot = new EndOfTurn({ ...SETTINGS, unfinishedSilenceMs: 300 }, silentLogger);
    eot.transcript('and');
    assert.equal(eot.silenceNeededMs, 700);
    assert.equal(longestSilenceMs(SETTINGS), 1500);
    assert.equal(shortestSilenceMs(SETTINGS, 200), 200);
    assert.equal(shortestSilenceMs(SETTINGS, 0), 250);
  });
});

describe('EndOfTurn with the model judge', () => {
  function judged(answer: Completeness): { judge: CompletenessJudge; asked: string[]; answer(): void } {
    const asked: string[] = [];
    let release: () => void = () => {};
    const judge: CompletenessJudge = (text) => {
      asked.push(text);
      return new Promise((resolve) => {
        release = () => resolve(answer);
      });
    };
    return { judge, asked, answer: () => release() };
  }

  it('asks about a transcript no rule judged, once its silence is long enough, and ends when it says complete', async () => {
    const j = judged('complete');
    const eot = new EndOfTurn(SETTINGS, silentLogger, j.judge);
    let changes = 0;
    eot.onChange(() => changes++);
    eot.transcript('turn on the light');
    assert.equal(eot.verdict, 'unknown', 'waits as with no transcript until the model answers');
    assert.equal(eot.ends(100), false);
    assert.deepEqual(j.asked, [], 'not asked before completeSilenceMs');
    assert.equal(eot.ends(250), false);
    eot.ends(310);
    assert.deepEqual(j.asked, ['turn on the light'], 'asked once');
    j.answer();
    await new Promise((r) => setImmediate(r));
    assert.equal(changes, 1);
    assert.equal(eot.ends(310), true);
  });

  it('an "unfinished" answer makes the wait the long one; a rule-judged transcript is never asked about', async () => {
    const j = judged('unfinished');
    const eot = new EndOfTurn(SETTINGS, silentLogger, j.judge);
    eot.transcript('what is the capital of');
    eot.ends(400);
    assert.deepEqual(j.asked, [], 'the rules decided');
    eot.transcript('I would like a cup of tea');
    eot.ends(400);
    j.answer();
    await new Promise((r) => setImmediate(r));
    assert.equal(eot.silenceNeededMs, 1500);
  });

  it('an answer about an older transcript is ignored', async () => {
    const j = judged('complete');
    const eot = new EndOfTurn(SETTINGS, silentLogger, j.judge);
    eot.transcript('turn on the light');
    eot.ends(300);
    eot.transcript('turn on the light in the');
    j.answer();
    await new Promise((r) => setImmediate(r));
    assert.equal(eot.verdict, 'unfinished');
  });
});

describe('createLlmJudge', () => {
  function model(reply: string | Error): LlmClient {
    return {
      model: 'fake',
      async *stream() {
        if (reply instanceof Error) throw reply;
        for (const piece of reply.match(/.{1,3}/gs) ?? []) yield { type: 'text_delta' as const, text: piece };
        yield { type: 'done' as const, finishReason: 'stop' };
      },
    };
  }
  const ask = (reply: string | Error): Promise<Completeness> =>
    createLlmJudge(() => model(reply), { timeoutMs: 1000, log: silentLogger })(
      'hello there',
      new AbortController().signal,
    );

  it('reads the first word of the answer', async () => {
    assert.equal(await ask('Complete.'), 'complete');
    assert.equal(await ask('unfinished'), 'unfinished');
    assert.equal(await ask('It is incomplete'), 'unfinished');
    assert.equal(await ask('I cannot tell'), 'unknown');
    assert.equal(await ask(new Error('down')), 'unknown', 'a failing model changes nothing');
  });
});
