import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from '../../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { silentLogger } from '../../../core/logger.ts';
import { createLlmClient } from '../../../providers/openai/llm.ts';
import type { Emotion } from '../../../core/emotions.ts';
import { createHistory } from '../../../llm/history.ts';
import type { History } from '../../../llm/history.ts';
import { MAX_CALLS_PER_ROUND, runReact } from '../../../llm/react.ts';
import { decideByFlags } from '../../../llm/round-decision.ts';
import type { ReactOptions } from '../../../llm/react.ts';
import { createSentenceCutter } from '../../../llm/sentences.ts';
import { createCompositeToolSource } from '../../../mcp/composite-tool-source.ts';
import { createLocalTools, dateTimeTool, endConversationTool } from '../../../mcp/local-tools.ts';
import type { LocalTool } from '../../../mcp/local-tools.ts';
import { textResult } from '../../../mcp/contract/tool-source.ts';
import type { ToolSource } from '../../../mcp/contract/tool-source.ts';
import type { FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { fakeError, fakeText, fakeToolCalls, onToolResults, startFakeOpenAi } from '../../fixtures/fake-openai.ts';

const NOW = new Date('2026-05-03T06:05:00Z');

describe('ReAct loop with the fake OpenAI server and local tools', { timeout: 30_000 }, () => {
  let fake: FakeOpenAi;
  let history: History;
  before(async () => {
    fake = await startFakeOpenAi();
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.reset();
    history = createHistory({ systemPrompt: 'You are a helpful voice assistant.', historyTurns: 10 });
  });

  const llm = () =>
    createLlmClient(
      { baseURL: fake.url, apiKey: 'sk-test', model: 'fake-model', maxRetries: 1, timeoutMs: 5000 },
      silentLogger,
    );
  const localTools = (...extra: LocalTool[]) =>
    createLocalTools([dateTimeTool({ timeZone: 'Asia/Shanghai', now: () => NOW }), endConversationTool(), ...extra]);

  /** Runs a turn, collecting what would be spoken. */
  async function turn(userText: string, o: Partial<ReactOptions> = {}) {
    const deltas: string[] = [];
    const emotions: Emotion[] = [];
    const outcome = await runReact({
      llm: llm(),
      tools: localTools(),
      history,
      userText,
      maxRounds: 3,
      signal: new AbortController().signal,
      log: silentLogger,
      onText: (d) => deltas.push(d),
      onEmotion: (e) => emotions.push(e),
      ...o,
    });
    return { outcome, deltas, spoken: deltas.join(''), emotions };
  }

  test('a plain answer streams through onText and is kept in history', async () => {
    fake.script(fakeText('Hello! I am your assistant. How can I help?', { chunkSize: 5 }));
    const { outcome, deltas, spoken } = await turn('hi');
    assert.equal(outcome.reason, 'answered');
    assert.equal(outcome.rounds, 1);
    assert.ok(deltas.length > 3, 'text arrives in pieces');
    assert.equal(spoken, 'Hello! I am your assistant. How can I help?');
    assert.ok(outcome.firstTokenMs !== undefined && outcome.firstTokenMs <= outcome.totalMs);
    const req = fake.requests.at(-1)?.body;
    assert.deepEqual(
      req?.messages.map((m) => m.role),
      ['system', 'user'],
    );
    assert.deepEqual(
      req?.tools?.map((t) => t.function.name),
      ['get_current_datetime', 'end_conversation'],
    );
    assert.deepEqual(history.messages().slice(1), [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'Hello! I am your assistant. How can I help?' },
    ]);
  });

  test('the model calls the date/time tool, gets its result and answers with it', async () => {
    fake.script(
      fakeToolCalls([{ id: 'call_t', name: 'get_current_datetime', arguments: {} }], { text: 'Let me check.' }),
    );
    fake.rule(onToolResults((v) => fakeText(`Right now: ${v.toolResults[0]?.content ?? '?'}`)));
    const started: string[] = [];
    const finished: Array<{ name: string; ms: number; isError: boolean }> = [];
    const { outcome, spoken } = await turn('what time is it?', {
      onToolStart: (c) => started.push(c.name),
      onToolResult: (c, r, ms) => finished.push({ name: c.name, ms, isError: r.isError }),
    });
    assert.equal(outcome.reason, 'answered');
    assert.equal(outcome.rounds, 2);
    assert.deepEqual(started, ['get_current_datetime']);
    assert.equal(finished[0]?.isError, false);
    assert.deepEqual(
      outcome.toolCalls.map((t) => t.name),
      ['get_current_datetime'],
    );
    assert.equal(spoken, 'Let me check.\nRight now: It is Sunday, 2026-05-03, 14:05 (Asia/Shanghai).');
    const cutter = createSentenceCutter();
    assert.deepEqual(
      [...cutter.push(spoken), ...cutter.flush()],
      ['Let me check.', 'Right now: It is Sunday, 2026-05-03, 14:05 (Asia/Shanghai).'],
    );
    // The second request carried the assistant tool call and the tool result.
    const second = fake.requests.at(-1)?.body.messages ?? [];
    assert.deepEqual(second.slice(-2), [
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [{ id: 'call_t', type: 'function', function: { name: 'get_current_datetime', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_t', content: 'It is Sunday, 2026-05-03, 14:05 (Asia/Shanghai).' },
    ]);
    // The next turn sees the whole exchange in history.
    fake.script(fakeText('You are welcome.'));
    await turn('thanks');
    assert.deepEqual(
      fake.requests.at(-1)?.body.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'assistant', 'user'],
    );
  });

  test('several tool calls in one round run in parallel', async () => {
    const events: string[] = [];
    const slow = (name: string): LocalTool => ({
      name,
      description: name,
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
      async handler(args, ctx) {
        events.push(`start ${name}`);
        await sleep(150, ctx.signal);
        events.push(`end ${name}`);
        return textResult(`${name} ${String(args.city)} ok`);
      },
    });
    fake.script(
      fakeToolCalls(
        [
          { id: 'a', name: 'weather', arguments: { city: 'Paris' } },
          { id: 'b', name: 'news', arguments: { city: 'Berlin' } },
        ],
        { argChunkSize: 2 },
      ),
    );
    const { outcome, spoken } = await turn('weather and news', { tools: localTools(slow('weather'), slow('news')) });
    assert.deepEqual(
      events.slice(0, 2).sort(),
      ['start news', 'start weather'],
      'both calls started before either ended',
    );
    assert.equal(spoken, 'The tool said: weather Paris ok; news Berlin ok.');
    assert.equal(outcome.toolCalls.length, 2);
  });

  test(`more than ${MAX_CALLS_PER_ROUND} calls in one round: the rest get an error result, not a run`, async () => {
    let runs = 0;
    const counter: LocalTool = {
      name: 'count',
      description: 'c',
      inputSchema: { type: 'object' },
      handler: async () => (runs++, textResult('counted')),
    };
    const n = MAX_CALLS_PER_ROUND + 5;
    fake.script(fakeToolCalls(Array.from({ length: n }, (_, i) => ({ id: `c${i}`, name: 'count', arguments: {} }))));
    await turn('count a lot', { tools: localTools(counter) });
    assert.equal(runs, MAX_CALLS_PER_ROUND);
    const toolMsgs = (fake.requests.at(-1)?.body.messages ?? [])
      .filter((m) => m.role === 'tool')
      .map((m) => String(m.content));
    assert.equal(toolMsgs.length, n, 'every call gets a result');
    assert.equal(toolMsgs.filter((t) => /at most/.test(t)).length, 5);
  });

  test('malformed tool arguments become an error result the model explains', async () => {
    let called = false;
    const weather: LocalTool = {
      name: 'weather',
      description: 'w',
      inputSchema: { type: 'object' },
      handler: async () => ((called = true), textResult('sunny')),
    };
    fake.script(fakeToolCalls([{ id: 'bad', name: 'weather', arguments: '{"city": "Par' }]));
    fake.rule(
      onToolResults((v) =>
        fakeText(
          /Invalid arguments/.test(v.toolResults[0]?.content ?? '')
            ? 'Sorry, I could not read the city.'
            : 'unexpected',
        ),
      ),
    );
    const { outcome, spoken } = await turn('weather in Paris', { tools: localTools(weather) });
    assert.equal(called, false, 'the handler never ran');
    assert.equal(outcome.reason, 'answered');
    assert.equal(spoken, 'Sorry, I could not read the city.');
    const toolMsg = fake.requests.at(-1)?.body.messages.at(-1);
    assert.equal(toolMsg?.role, 'tool');
    assert.match(
      String(toolMsg?.content),
      /^Error: Invalid arguments for tool "weather": arguments are not valid JSON/,
    );
    assert.equal(outcome.toolCalls[0]?.isError, true);
  });

  test('an unknown tool becomes an error result', async () => {
    fake.script(fakeToolCalls([{ id: 'u', name: 'launch_rocket', arguments: {} }]));
    const { outcome, spoken } = await turn('launch');
    assert.match(
      spoken,
      /^The tool said: Error: Unknown tool "launch_rocket"\. Available tools: get_current_datetime, end_conversation\./,
    );
    assert.equal(outcome.reason, 'answered');
  });

  test('a throwing source and a tool that ignores its timeout become error results', async () => {
    const throwing: ToolSource = {
      listTools: async () => [
        { name: 'flaky', inputSchema: { type: 'object' } },
        { name: 'stuck', inputSchema: { type: 'object' } },
      ],
      callTool: async (name) => {
        if (name === 'flaky') throw new Error('connection reset');
        return new Promise(() => {}); // never settles and ignores the signal
      },
    };
    fake.script(
      fakeToolCalls([
        { name: 'flaky', arguments: {} },
        { name: 'stuck', arguments: {} },
      ]),
    );
    const t0 = performance.now();
    const { spoken } = await turn('go', {
      tools: createCompositeToolSource([{ name: 'ext', source: throwing }], { log: silentLogger }),
      toolTimeoutMs: 200,
    });
    assert.ok(performance.now() - t0 < 5000);
    assert.match(spoken, /Error: Tool "flaky" failed: connection reset/);
    assert.match(spoken, /Error: Tool "stuck" timed out\./);
  });

  test('after maxRounds the model is asked once more without tools', async () => {
    fake.rule({
      when: (v) => v.toolNames.length > 0,
      reply: fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }]),
    });
    fake.rule({ when: () => true, reply: fakeText('I have checked enough times.') });
    const before = fake.requests.length;
    const { outcome, spoken } = await turn('loop forever', { maxRounds: 2 });
    assert.equal(outcome.reason, 'max_rounds');
    assert.equal(outcome.rounds, 3);
    assert.equal(fake.requests.length - before, 3);
    assert.equal(fake.requests.at(-1)?.body.tools, undefined, 'the last call offers no tools');
    assert.equal(spoken, 'I have checked enough times.');
    assert.equal(outcome.toolCalls.length, 2);
  });

  test('end_conversation speaks the goodbye, stops the loop and asks to end the session', async () => {
    fake.script(
      fakeToolCalls([{ name: 'end_conversation', arguments: { farewell: 'Bye, talk soon!' } }], { text: 'Okay.' }),
    );
    const before = fake.requests.length;
    const { outcome, spoken } = await turn('goodbye');
    assert.equal(outcome.reason, 'tool_ended');
    assert.equal(outcome.stopReason, 'final');
    assert.equal(outcome.endSession, true);
    assert.equal(fake.requests.length - before, 1, 'no further model round');
    assert.equal(spoken, 'Okay.\nBye, talk soon!');
    const cutter = createSentenceCutter();
    assert.deepEqual([...cutter.push(spoken), ...cutter.flush()], ['Okay.', 'Bye, talk soon!']);
    assert.deepEqual(history.messages().at(-1), { role: 'assistant', content: 'Bye, talk soon!' });
  });

  test('with a dispatcher that defers to the flags, a final result is spoken once and enters the history the same way', async () => {
    fake.script(
      fakeToolCalls([{ name: 'end_conversation', arguments: { farewell: 'Bye, talk soon!' } }], { text: 'Okay.' }),
    );
    const { outcome, spoken } = await turn('goodbye', { dispatch: async (results) => decideByFlags(results) });
    assert.equal(outcome.stopReason, 'final');
    assert.equal(spoken, 'Okay.\nBye, talk soon!');
    assert.deepEqual(history.messages().at(-1), { role: 'assistant', content: 'Bye, talk soon!' });
  });

  test('silenceLLM stops without speaking; a dispatch hook decides instead of the flags', async () => {
    const mute: LocalTool = {
      name: 'mute',
      description: 'm',
      inputSchema: { type: 'object' },
      handler: async () => textResult('muted', { silenceLLM: true }),
    };
    fake.script(fakeToolCalls([{ name: 'mute', arguments: {} }]));
    const silent = await turn('be quiet', { tools: localTools(mute) });
    assert.equal(silent.outcome.stopReason, 'silence');
    assert.equal(silent.spoken, '');

    const seen: string[] = [];
    fake.script(fakeToolCalls([{ name: 'end_conversation', arguments: {} }]));
    const played = await turn('play music', {
      dispatch: async (results) => {
        seen.push(...results.map((r) => r.call.name));
        return { next: 'played', said: [] };
      },
    });
    assert.deepEqual(seen, ['end_conversation']);
    assert.equal(played.outcome.stopReason, 'played_audio');
    assert.equal(played.spoken, '', 'with a dispatcher the loop does not speak tool text itself');
    assert.equal(played.outcome.endSession, true);

    fake.script(fakeToolCalls([{ name: 'mute', arguments: {} }]), fakeText('Continuing anyway.'));
    const cont = await turn('again', { tools: localTools(mute), dispatch: async () => ({ next: 'observe' }) });
    assert.equal(cont.outcome.reason, 'answered');
    assert.equal(cont.spoken, 'Continuing anyway.');
  });

  test("the loop acts on a dispatcher's decision: an end's text is spoken and recorded, a played round's notes are recorded only", async () => {
    fake.script(fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }], { text: 'One moment.' }));
    const before = fake.requests.length;
    const ended = await turn('what time is it', {
      dispatch: async () => ({ next: 'end', reason: 'no_further_response', say: 'It is late.' }),
    });
    assert.equal(ended.outcome.reason, 'tool_ended');
    assert.equal(ended.outcome.stopReason, 'no_further_response');
    assert.equal(fake.requests.length - before, 1, 'no further model round');
    assert.equal(ended.spoken, 'One moment.\nIt is late.');
    assert.deepEqual(history.messages().at(-1), { role: 'assistant', content: 'It is late.' });

    fake.script(fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }]));
    const played = await turn('play a song', {
      dispatch: async () => ({ next: 'played', said: ['Could not play Song.'] }),
    });
    assert.equal(played.outcome.stopReason, 'played_audio');
    assert.equal(played.spoken, '', 'the dispatcher spoke the note while playing; the loop does not say it again');
    assert.deepEqual(history.messages().at(-1), { role: 'assistant', content: 'Could not play Song.' });
  });

  test('a leading emoji or tag sets the emotion and is not spoken; think blocks are dropped', async () => {
    fake.script(fakeText('😊 Nice to meet you!', { chunkSize: 1 }));
    const a = await turn('hello');
    assert.deepEqual(a.emotions, ['happy']);
    assert.equal(a.outcome.emotion, 'happy');
    assert.equal(a.spoken, 'Nice to meet you!');
    fake.script(fakeText('<think>User is sad.</think>[sad] I am sorry to hear that.', { chunkSize: 3 }));
    const b = await turn('my cat is ill');
    assert.deepEqual(b.emotions, ['sad']);
    assert.equal(b.spoken, 'I am sorry to hear that.');
  });

  test('abort mid-stream ends the turn promptly and closes the request', async () => {
    fake.script({ kind: 'stall', text: 'I will talk for a very long time' });
    const ctrl = new AbortController();
    let abortedAt = 0;
    const { outcome, spoken } = await turn('tell me a story', {
      signal: ctrl.signal,
      onText: (d) => {
        if (abortedAt === 0 && d !== '') {
          abortedAt = performance.now();
          setImmediate(() => ctrl.abort());
        }
      },
    });
    assert.equal(outcome.reason, 'aborted');
    // The stream stalls for ever: any bound shows the abort ended it; a loaded machine may take a while.
    assert.ok(performance.now() - abortedAt < 10_000);
    assert.equal(spoken, '', 'collected by the overridden onText instead');
    const rec = fake.requests.at(-1);
    await rec?.finished;
    assert.equal(rec?.closedEarly, true);
    assert.equal(history.messages().at(-1)?.role, 'assistant', 'the partial reply is kept');
  });

  test('abort during a tool call reaches the tool and ends the turn', async () => {
    let toolSawAbort = false;
    const wait: LocalTool = {
      name: 'wait',
      description: 'w',
      inputSchema: { type: 'object' },
      handler: (_a, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener(
            'abort',
            () => {
              toolSawAbort = true;
              resolve(textResult('stopped'));
            },
            { once: true },
          );
        }),
    };
    fake.script(fakeToolCalls([{ name: 'wait', arguments: {} }]));
    const ctrl = new AbortController();
    const before = fake.requests.length;
    const run = turn('wait', {
      tools: localTools(wait),
      signal: ctrl.signal,
      onToolStart: () => setTimeout(() => ctrl.abort(), 20),
    });
    const { outcome } = await run;
    assert.equal(outcome.reason, 'aborted');
    assert.equal(toolSawAbort, true);
    assert.equal(fake.requests.length - before, 1, 'no further model call');
    // History stays valid: no tool call without its result.
    assert.deepEqual(
      history.messages().map((m) => m.role),
      ['system', 'user'],
    );
  });

  test('a failing model throws a VoiceError and the next turn still works', async () => {
    fake.script(fakeError(500, 'down'), fakeError(500, 'down'));
    await assert.rejects(turn('hello'), (e: unknown) => e instanceof VoiceError && e.code === ErrorCode.ProviderFailed);
    fake.script(fakeText('Back again.'));
    const { outcome, spoken } = await turn('hello again');
    assert.equal(outcome.reason, 'answered');
    assert.equal(spoken, 'Back again.');
  });

  test('tool listing failure answers without tools', async () => {
    const broken: ToolSource = {
      listTools: async () => {
        throw new Error('nope');
      },
      callTool: async () => textResult('x'),
    };
    fake.script(fakeText('No tools today.'));
    const { outcome } = await turn('hi', { tools: broken });
    assert.equal(outcome.reason, 'answered');
    assert.equal(fake.requests.at(-1)?.body.tools, undefined);
  });
});
