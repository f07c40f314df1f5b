import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import { silentLogger } from '../../../../core/logger.ts';
import { createLlmClient } from '../../../../providers/openai/llm.ts';
import type { OpenAiLlmSchema } from '../../../../providers/openai/options.ts';
import type { z } from 'zod';
import type { LlmEvent } from '../../../../llm/types.ts';
import type { FakeOpenAi } from '../../../fixtures/fake-openai.ts';
import { fakeError, fakeText, fakeToolCalls, startFakeOpenAi } from '../../../fixtures/fake-openai.ts';

async function collect(it: AsyncIterable<LlmEvent>): Promise<LlmEvent[]> {
  const out: LlmEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<VoiceError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof VoiceError, `expected VoiceError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected a ${code} error`);
}

const user = [{ role: 'user' as const, content: 'hello' }];

describe('llm client against the fake OpenAI server', { timeout: 30_000 }, () => {
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi();
  });
  after(async () => {
    await fake.close();
  });

  const client = (o: Partial<z.input<typeof OpenAiLlmSchema>> = {}) =>
    createLlmClient({ baseURL: fake.url, apiKey: 'sk-test', model: 'fake-model', ...o }, silentLogger);

  test('streams text deltas in order, then done with usage', async () => {
    fake.script(fakeText('Hello there, friend. 你好！', { chunkSize: 3 }));
    const events = await collect(client().stream({ messages: user, tools: [], signal: new AbortController().signal }));
    const text = events.flatMap((e) => (e.type === 'text_delta' ? [e.text] : []));
    assert.ok(text.length > 3, 'text arrives in several deltas');
    assert.equal(text.join(''), 'Hello there, friend. 你好！');
    const done = events.at(-1);
    assert.equal(done?.type, 'done');
    assert.ok(done?.type === 'done' && done.finishReason === 'stop' && done.usage && done.usage.totalTokens > 0);
    const req = fake.requests.at(-1);
    assert.equal(req?.body.stream, true);
    assert.equal(req?.body.model, 'fake-model');
    assert.equal(req?.headers.authorization, 'Bearer sk-test');
    assert.equal(req?.body.tools, undefined, 'no tools key when there are no tools');
  });

  test('accumulates several tool calls with split, interleaved argument deltas', async () => {
    fake.script(
      fakeToolCalls(
        [
          { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
          { id: 'call_b', name: 'get_current_datetime', arguments: {} },
          { id: 'call_c', name: 'set_volume', arguments: { volume: 35 } },
        ],
        { argChunkSize: 3, text: 'Checking.' },
      ),
    );
    const tools = [
      {
        name: 'get_weather',
        description: 'weather',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
      },
      { name: 'get_current_datetime', inputSchema: {} },
    ];
    const events = await collect(client().stream({ messages: user, tools, signal: new AbortController().signal }));
    const calls = events.find((e) => e.type === 'tool_calls');
    assert.ok(calls && calls.type === 'tool_calls');
    assert.deepEqual(calls.calls, [
      { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
      { id: 'call_b', name: 'get_current_datetime', arguments: '{}' },
      { id: 'call_c', name: 'set_volume', arguments: '{"volume":35}' },
    ]);
    assert.equal(
      events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e.type === 'text_delta' ? e.text : ''))
        .join(''),
      'Checking.',
    );
    const done = events.at(-1);
    assert.ok(done?.type === 'done' && done.finishReason === 'tool_calls');
    const sent = fake.requests.at(-1)?.body.tools;
    assert.equal(sent?.length, 2);
    assert.equal(sent?.[0]?.function.name, 'get_weather');
    assert.deepEqual(
      sent?.[1]?.function.parameters,
      { type: 'object', properties: {} },
      'schema without type gets type object',
    );
  });

  test('sends assistant tool_calls and tool messages in the OpenAI shape', async () => {
    fake.script(fakeText('ok'));
    await collect(
      client().stream({
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'time?' },
          { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'now', arguments: '{}' }] },
          { role: 'tool', toolCallId: 'c1', content: '12:00' },
        ],
        tools: [],
        signal: new AbortController().signal,
      }),
    );
    const msgs = fake.requests.at(-1)?.body.messages;
    assert.deepEqual(msgs?.[2], {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'now', arguments: '{}' } }],
    });
    assert.deepEqual(msgs?.[3], { role: 'tool', tool_call_id: 'c1', content: '12:00' });
  });

  test('an empty apiKey sends no Authorization header; extra headers and body fields are sent', async () => {
    fake.script(fakeText('ok'));
    const c = client({ apiKey: '', headers: { 'x-tenant': 'home' }, extraBody: { max_tokens: 77 }, temperature: 0.3 });
    await collect(c.stream({ messages: user, tools: [], signal: new AbortController().signal }));
    const req = fake.requests.at(-1);
    assert.equal(req?.headers.authorization, undefined);
    assert.equal(req?.headers['x-tenant'], 'home');
    assert.equal(req?.body.max_tokens, 77);
    assert.equal(req?.body.temperature, 0.3);
  });

  test('a 500 is retried and the retry succeeds', async () => {
    const before = fake.requests.length;
    fake.script(fakeError(500, 'boom'), fakeText('recovered'));
    const events = await collect(
      client({ maxRetries: 2 }).stream({ messages: user, tools: [], signal: new AbortController().signal }),
    );
    assert.equal(
      events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e.type === 'text_delta' ? e.text : ''))
        .join(''),
      'recovered',
    );
    assert.equal(fake.requests.length - before, 2);
  });

  test('500s beyond maxRetries give a retryable provider_failed', async () => {
    const before = fake.requests.length;
    fake.script(fakeError(503, 'down'), fakeError(502, 'down'));
    const err = await rejectsWith(
      collect(client({ maxRetries: 1 }).stream({ messages: user, tools: [], signal: new AbortController().signal })),
      ErrorCode.ProviderFailed,
    );
    assert.equal(err.retryable, true);
    assert.match(err.message, /down/);
    assert.equal(fake.requests.length - before, 2);
  });

  test('401 and 403 are provider_rejected and not retried', async () => {
    for (const status of [401, 403]) {
      const before = fake.requests.length;
      fake.script(fakeError(status, 'bad key'), fakeText('should not be reached'));
      const err = await rejectsWith(
        collect(client({ maxRetries: 3 }).stream({ messages: user, tools: [], signal: new AbortController().signal })),
        ErrorCode.ProviderRejected,
      );
      assert.equal(err.retryable, false);
      assert.equal(fake.requests.length - before, 1);
      fake.reset();
    }
  });

  test('429 is rate_limited; a short Retry-After is honoured', async () => {
    const before = fake.requests.length;
    fake.script(
      { kind: 'error', status: 429, message: 'slow down', headers: { 'retry-after-ms': '50' } },
      fakeText('fine'),
    );
    const events = await collect(
      client({ maxRetries: 1 }).stream({ messages: user, tools: [], signal: new AbortController().signal }),
    );
    assert.ok(events.some((e) => e.type === 'text_delta'));
    assert.equal(fake.requests.length - before, 2);
    fake.script(fakeError(429, 'slow down'));
    const err = await rejectsWith(
      collect(client({ maxRetries: 0 }).stream({ messages: user, tools: [], signal: new AbortController().signal })),
      ErrorCode.RateLimited,
    );
    assert.equal(err.retryable, true);
  });

  test('a hanging server gives a Timeout within bounds', async () => {
    fake.script({ kind: 'hang' });
    const t0 = performance.now();
    const err = await rejectsWith(
      collect(
        client({ timeoutMs: 300, maxRetries: 0 }).stream({
          messages: user,
          tools: [],
          signal: new AbortController().signal,
        }),
      ),
      ErrorCode.Timeout,
    );
    const ms = performance.now() - t0;
    assert.ok(ms >= 250 && ms < 5000, `timed out after ${ms} ms`);
    assert.equal(err.retryable, true);
    await fake.requests.at(-1)?.finished;
    assert.equal(fake.requests.at(-1)?.closedEarly, true, 'the hung request was closed');
  });

  test('a stream that stalls after some text times out without retry', async () => {
    const before = fake.requests.length;
    fake.script({ kind: 'stall', text: 'partial answer' });
    const got: string[] = [];
    const run = async () => {
      for await (const e of client({ timeoutMs: 300, maxRetries: 2 }).stream({
        messages: user,
        tools: [],
        signal: new AbortController().signal,
      })) {
        if (e.type === 'text_delta') got.push(e.text);
      }
    };
    await rejectsWith(run(), ErrorCode.Timeout);
    assert.equal(got.join(''), 'partial answer');
    assert.equal(fake.requests.length - before, 1, 'no retry after text was yielded');
  });

  test('a consumer slower than the idle limit does not time the stream out', async () => {
    fake.script(fakeText('one two three four'));
    const got: string[] = [];
    for await (const e of client({ timeoutMs: 150, maxRetries: 0 }).stream({
      messages: user,
      tools: [],
      signal: new AbortController().signal,
    })) {
      if (e.type !== 'text_delta') continue;
      // Longer than the limit, twice: the limit is the provider's silence, not ours.
      if (got.length < 2) await new Promise((r) => setTimeout(r, 400));
      got.push(e.text);
    }
    assert.equal(got.join(''), 'one two three four');
  });

  test('aborting mid-stream stops promptly and closes the connection', async () => {
    fake.script({ kind: 'stall', text: 'streaming forever' });
    const ctrl = new AbortController();
    let abortedAt = 0;
    const run = async () => {
      for await (const e of client().stream({ messages: user, tools: [], signal: ctrl.signal })) {
        if (e.type === 'text_delta' && abortedAt === 0) {
          abortedAt = performance.now();
          ctrl.abort();
        }
      }
    };
    await rejectsWith(run(), ErrorCode.Aborted);
    const ms = performance.now() - abortedAt;
    // The stream stalls for ever: any bound shows the abort ended it; a loaded machine may take a while.
    assert.ok(ms < 10_000, `abort took ${ms} ms`);
    const rec = fake.requests.at(-1);
    await rec?.finished;
    assert.equal(rec?.closedEarly, true);
  });

  test('abort while waiting for headers and an already-aborted signal', async () => {
    fake.script({ kind: 'hang' });
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 50);
    await rejectsWith(collect(client().stream({ messages: user, tools: [], signal: ctrl.signal })), ErrorCode.Aborted);
    const before = fake.requests.length;
    await rejectsWith(
      collect(client().stream({ messages: user, tools: [], signal: AbortSignal.abort() })),
      ErrorCode.Aborted,
    );
    assert.equal(fake.requests.length, before, 'no request for an aborted signal');
  });

  test('an error event inside the stream is provider_failed', async () => {
    fake.script({ kind: 'stream_error', message: 'model overloaded' });
    const err = await rejectsWith(
      collect(client({ maxRetries: 0 }).stream({ messages: user, tools: [], signal: new AbortController().signal })),
      ErrorCode.ProviderFailed,
    );
    assert.match(err.message, /overloaded/);
  });

  test('a chunk of another shape fails the request once, naming the field; it is not retried', async () => {
    const before = fake.requests.length;
    fake.script({
      kind: 'raw',
      data: ['{"choices":[{"delta":{"content":"Hi"}}]}', '{"choices":[{"delta":{"content":42}}]}', '[DONE]'],
    });
    const got: LlmEvent[] = [];
    const err = await rejectsWith(
      (async () => {
        for await (const ev of client().stream({ messages: user, tools: [], signal: new AbortController().signal }))
          got.push(ev);
      })(),
      ErrorCode.ProviderFailed,
    );
    assert.deepEqual(got, [{ type: 'text_delta', text: 'Hi' }]);
    assert.match(err.message, /choices\.0\.delta\.content/);
    assert.equal(err.retryable, false);
    assert.equal(fake.requests.length, before + 1);
  });

  test('a stream error event is retried before any text; data that is not JSON is not', async () => {
    const before = fake.requests.length;
    fake.script({ kind: 'stream_error', message: 'overloaded' }, fakeText('Fine now.'));
    const events = await collect(
      client({ maxRetries: 1 }).stream({ messages: user, tools: [], signal: new AbortController().signal }),
    );
    assert.equal(
      events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e as { text: string }).text)
        .join(''),
      'Fine now.',
    );
    assert.equal(fake.requests.length, before + 2);
    fake.script({ kind: 'raw', data: ['{"choices":[{"delta":{"content":"Hel', '[DONE]'] });
    await rejectsWith(
      collect(client({ maxRetries: 1 }).stream({ messages: user, tools: [], signal: new AbortController().signal })),
      ErrorCode.ProviderFailed,
    );
    assert.equal(fake.requests.length, before + 3, 'no retry of an unreadable stream');
  });

  test('a refused connection is provider_unavailable and retryable', async () => {
    // A port that was just free: nothing listens there.
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const { port } = srv.address() as AddressInfo;
    await new Promise<void>((r) => srv.close(() => r()));
    const c = createLlmClient(
      { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', model: 'm', maxRetries: 1 },
      silentLogger,
    );
    const err = await rejectsWith(
      collect(c.stream({ messages: user, tools: [], signal: new AbortController().signal })),
      ErrorCode.ProviderUnavailable,
    );
    assert.equal(err.retryable, true);
  });
});
