/**
 * The provider thread (providers/thread/): the LLM client and the OpenAI-compatible ASR running on a
 * worker thread behave like the in-process clients (same events, same error codes, aborts reach the
 * HTTP request), their log lines come out of the main logger, and a thread that dies fails only what
 * was in flight and is replaced.
 */
import { AsrSchema } from '../../../providers/index.ts';
import { OpenAiLlmSchema } from '../../../providers/openai/options.ts';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:worker_threads';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { silentLogger } from '../../../core/logger.ts';
import { createLlmClient } from '../../../providers/openai/llm.ts';
import type { LlmEvent } from '../../../llm/types.ts';
import { createLogger } from '../../../server/logger.ts';
import { startProviderThread, type ProviderThread } from '../../../providers/thread/provider-thread.ts';
import { fakeError, fakeText, fakeToolCalls, startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio, type FakeOpenAiAudio } from '../../fixtures/fake-openai-audio.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { waitFor, within } from '../../helpers/wait.ts';
import { threadNames } from '../../helpers/threads.ts';

async function collect(it: AsyncIterable<LlmEvent>): Promise<LlmEvent[]> {
  const out: LlmEvent[] = [];
  for await (const ev of it) out.push(ev);
  return out;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof VoiceError, `expected a VoiceError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected the call to fail');
}

const user = [{ role: 'user' as const, content: 'hello' }];
const tools = [{ name: 'get_time', description: 'The time', inputSchema: { type: 'object', properties: {} } }];

describe('provider thread', { timeout: 60_000 }, () => {
  let llm: FakeOpenAi;
  let audio: FakeOpenAiAudio;
  let logs: LogSink;
  let thread: ProviderThread;
  /** Every provider thread started, in order: the last one is the running one. */
  const workers: Worker[] = [];

  before(async () => {
    llm = await startFakeOpenAi();
    audio = await startFakeOpenAiAudio({ transcript: 'what time is it', slowMs: 30_000 });
    logs = createLogSink();
    const log = createLogger({ level: 'debug', logContent: false, destination: logs.stream });
    thread = await startProviderThread(
      {
        llm: OpenAiLlmSchema.parse({
          baseURL: llm.url,
          apiKey: 'sk-thread-test',
          model: 'fake-model',
          timeoutMs: 30_000,
          maxRetries: 1,
        }),
        asr: AsrSchema.parse({ provider: 'openai', baseURL: audio.baseURL, apiKey: 'sk-asr', model: 'whisper-1' }),
        maxClients: 2,
      },
      log,
      { onWorker: (w) => workers.push(w) },
    );
  });
  after(async () => {
    await thread?.close();
    await llm?.close();
    await audio?.close();
  });

  test('the thread names itself xz-providers, for top -H and /proc', {
    skip: process.platform !== 'linux' && 'thread names are read from Linux /proc',
  }, () => {
    assert.equal(threadNames().filter((n) => n === 'xz-providers').length, 1, JSON.stringify(threadNames()));
  });

  test('a streamed answer with tool calls gives the same events as the in-process client', async () => {
    const replies = [
      fakeToolCalls([{ id: 'call_1', name: 'get_time', arguments: { zone: 'UTC' } }], { text: 'Let me check.' }),
      fakeText('It is noon.'),
    ];
    const inProcess = createLlmClient(
      { baseURL: llm.url, apiKey: 'sk-thread-test', model: 'fake-model' },
      silentLogger,
    );
    llm.script(...replies);
    const direct = [
      ...(await collect(inProcess.stream({ messages: user, tools, signal: new AbortController().signal }))),
      ...(await collect(inProcess.stream({ messages: user, tools, signal: new AbortController().signal }))),
    ];
    llm.script(...replies);
    const viaThread = [
      ...(await collect(thread.llm.stream({ messages: user, tools, signal: new AbortController().signal }))),
      ...(await collect(thread.llm.stream({ messages: user, tools, signal: new AbortController().signal }))),
    ];
    assert.deepEqual(viaThread, direct);
    assert.ok(
      viaThread.some((e) => e.type === 'tool_calls'),
      'the tool call crossed the thread',
    );
    // The request really left from the provider thread with the configured key and the tools.
    const last = llm.requests.at(-1);
    assert.equal(last?.headers.authorization, 'Bearer sk-thread-test');
    assert.equal(last?.body.tools?.[0]?.function.name, 'get_time');
  });

  test('provider errors keep their code, and the thread logs through the main logger', async () => {
    llm.script(fakeError(401, 'bad key'));
    assert.equal(
      await codeOf(collect(thread.llm.stream({ messages: user, tools: [], signal: new AbortController().signal }))),
      ErrorCode.ProviderRejected,
    );
    // 429 is retried once inside the thread (maxRetries 1), then reported as rate limited.
    llm.script(fakeError(429, 'slow down'), fakeError(429, 'slow down'));
    assert.equal(
      await codeOf(collect(thread.llm.stream({ messages: user, tools: [], signal: new AbortController().signal }))),
      ErrorCode.RateLimited,
    );
    const failed = logs.find('llm request failed');
    assert.ok(failed.length >= 2, 'the final failures were logged');
    assert.equal(failed[0]?.part, 'llm');
    assert.equal(failed[0]?.level, 40);
    assert.ok(logs.find('llm request failed, retrying').length >= 1, 'the retry was logged');
  });

  test('an abort mid-stream rejects at once and closes the HTTP request', async () => {
    llm.script({ kind: 'stall', text: 'Still thinking' });
    const before = llm.requests.length;
    const ac = new AbortController();
    const seen: LlmEvent[] = [];
    const run = (async () => {
      for await (const ev of thread.llm.stream({ messages: user, tools: [], signal: ac.signal })) seen.push(ev);
    })();
    await waitFor(() => seen.length > 0, { what: 'the first delta', timeoutMs: 5000 });
    ac.abort();
    assert.equal(await codeOf(run), ErrorCode.Aborted);
    const req = llm.requests[before];
    assert.ok(req, 'the request was made');
    // Well before the 30 s idle timeout: the abort itself reached the request in the thread.
    await within(req.finished, 5000, 'the request closed after the abort');
    assert.equal(req.closedEarly, true, 'the provider thread closed the connection');
  });

  test('a consumer that stops reading early closes the HTTP request too', async () => {
    llm.script({ kind: 'stall', text: 'Partial answer' });
    const before = llm.requests.length;
    for await (const ev of thread.llm.stream({ messages: user, tools: [], signal: new AbortController().signal })) {
      assert.equal(ev.type, 'text_delta');
      break;
    }
    const req = llm.requests[before];
    assert.ok(req);
    await within(req.finished, 5000, 'the request closed after the consumer left');
    assert.equal(req.closedEarly, true);
  });

  test('the OpenAI ASR transcribes through the thread, and the caller keeps its PCM', async () => {
    assert.ok(thread.asr, 'the thread serves the configured OpenAI ASR');
    const pcm = new Int16Array(16000).map((_, i) => Math.round(8000 * Math.sin(i / 5)));
    const text = await thread.asr.transcribe(pcm, { signal: new AbortController().signal, sampleRate: 16000 });
    assert.equal(text, 'what time is it');
    assert.equal(pcm.length, 16000, 'the PCM was copied, not transferred away from the caller');
    const sent = audio.transcriptions.at(-1);
    assert.equal(sent?.authorization, 'Bearer sk-asr');
    assert.equal(sent?.file.subarray(0, 4).toString(), 'RIFF');
    audio.transcriptionMode = 'error500';
    try {
      assert.equal(
        await codeOf(thread.asr.transcribe(pcm, { signal: new AbortController().signal, sampleRate: 16000 })),
        ErrorCode.ProviderFailed,
      );
    } finally {
      audio.transcriptionMode = 'ok';
    }
  });

  test("clients per distinct options: an agent's model, key and temperature are its own; equal options share one; the least recently used is dropped past the bound", async () => {
    const options = (model: string, temperature: number) =>
      OpenAiLlmSchema.parse({ baseURL: llm.url, apiKey: `sk-${model}-key`, model, temperature, maxRetries: 0 });
    assert.equal(
      thread.llmFor(
        OpenAiLlmSchema.parse({
          baseURL: llm.url,
          apiKey: 'sk-thread-test',
          model: 'fake-model',
          timeoutMs: 30_000,
          maxRetries: 1,
        }),
      ),
      thread.llm,
      'the configured options are the configured client',
    );
    const start = await thread.clients();
    const ask = async (o: ReturnType<typeof options>): Promise<void> => {
      await collect(thread.llmFor(o).stream({ messages: user, tools: [], signal: new AbortController().signal }));
    };
    await ask(options('model-a', 0.2));
    const a = llm.requests.at(-1);
    assert.equal(a?.body.model, 'model-a');
    assert.equal(a?.body.temperature, 0.2);
    assert.equal(a?.headers.authorization, 'Bearer sk-model-a-key');
    // The same options again, written in another key order: the same client.
    const again = Object.fromEntries(Object.entries(options('model-a', 0.2)).reverse()) as ReturnType<typeof options>;
    await ask(again);
    await ask(options('model-b', 0.9));
    assert.equal(llm.requests.at(-1)?.body.model, 'model-b');
    let now = await thread.clients();
    assert.equal(now.llm.created - start.llm.created, 2, 'one client per distinct options');
    assert.equal(now.llm.kept, start.llm.kept + 2);
    // A third: past the bound (2), model-a (least recently used) is dropped and made again on its next use.
    await ask(options('model-c', 0));
    await ask(options('model-b', 0.9));
    now = await thread.clients();
    assert.equal(now.llm.created - start.llm.created, 3);
    assert.equal(now.llm.kept, start.llm.kept + 2, 'bounded');
    await ask(options('model-a', 0.2));
    assert.equal((await thread.clients()).llm.created - start.llm.created, 4, 'model-a was dropped and made again');
    // An agent's own ASR.
    const text = await thread
      .asrFor(
        AsrSchema.parse({
          provider: 'openai',
          baseURL: audio.baseURL,
          apiKey: 'sk-asr-agent',
          model: 'agent-whisper',
          language: 'zh',
        }),
      )
      .transcribe(new Int16Array(1600), { signal: new AbortController().signal, sampleRate: 16000 });
    assert.equal(text, 'what time is it');
    const sent = audio.transcriptions.at(-1);
    assert.equal(sent?.model, 'agent-whisper');
    assert.equal(sent?.language, 'zh');
    assert.equal(sent?.authorization, 'Bearer sk-asr-agent');
  });

  test('a thread that dies fails what was in flight, and the next request goes to a new thread', async () => {
    llm.script({ kind: 'stall', text: 'Half' });
    const seen: LlmEvent[] = [];
    const run = (async () => {
      for await (const ev of thread.llm.stream({ messages: user, tools: [], signal: new AbortController().signal }))
        seen.push(ev);
    })();
    await waitFor(() => seen.length > 0, { what: 'the first delta', timeoutMs: 5000 });
    // An ASR request in flight too: both fail with the thread's one error.
    audio.transcriptionMode = 'slow';
    const uploads = audio.transcriptions.length;
    const asr = thread.asr;
    assert.ok(asr);
    const transcribing = asr
      .transcribe(new Int16Array(1600), { signal: new AbortController().signal, sampleRate: 16000 })
      .then(
        () => assert.fail('the transcription should fail'),
        (err: unknown) => err,
      );
    await waitFor(() => audio.transcriptions.length > uploads, { what: 'the upload arrived', timeoutMs: 5000 });
    const restartsBefore = thread.restarts;
    const started = workers.length;
    await workers.at(-1)?.terminate();
    const [llmError, asrError] = await Promise.all([run.catch((err: unknown) => err), transcribing]);
    audio.transcriptionMode = 'ok';
    assert.ok(llmError instanceof VoiceError && llmError.code === ErrorCode.ProviderFailed, String(llmError));
    assert.equal(asrError, llmError, 'the requests in flight fail with the same error');
    // Replaced at once: the new thread is already starting when the requests have failed.
    assert.equal(thread.restarts, restartsBefore + 1);
    assert.equal(workers.length, started + 1);
    llm.script(fakeText('Back again.'));
    // The new thread may still be loading: the request waits for it rather than failing.
    const events = await collect(
      thread.llm.stream({ messages: user, tools: [], signal: new AbortController().signal }),
    );
    assert.equal(
      events
        .filter((e) => e.type === 'text_delta')
        .map((e) => (e.type === 'text_delta' ? e.text : ''))
        .join(''),
      'Back again.',
    );
    assert.ok(logs.find('provider thread exited; starting a new one').length >= 1);
  });
});
