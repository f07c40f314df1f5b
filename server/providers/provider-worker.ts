/**
 * @module Entry of the provider thread: the LLM client and an HTTP ASR (one whose provider runs in
 * the provider thread, `providers/index.ts`) run here, so
 * their HTTP streaming, SSE parsing, chunk validation and multipart uploads stay off
 * the main thread, which keeps every device's 60 ms frame beat (measured: about a third of the
 * main thread's work at 50 devices answering at once was in these clients).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { toVoiceError } from '../../core/errors.ts';
import { createThreadLogger } from '../../core/thread-logger.ts';
import { nameThisThread } from '../../core/thread-name.ts';
import { asrProvider } from '../../providers/index.ts';
import { createLlmClient } from '../../providers/openai/llm.ts';
import type { FromProvider, ProviderThreadData, ToProvider } from './provider-protocol.ts';

const port = parentPort;
if (!port) throw new Error('provider-worker.ts must run as a worker thread');
const data = workerData as ProviderThreadData;
nameThisThread('xz-providers');

function post(msg: FromProvider): void {
  port?.postMessage(msg);
}

const log = createThreadLogger((rec) => post({ op: 'log', rec }));
const llm = createLlmClient(data.llm, log.child({ part: 'llm' }));
const asr = data.asr ? await asrProvider(data.asr).create(data.asr, log.child({ part: 'asr' })) : undefined;
/** Requests in flight, by id: aborting one cancels its HTTP request. */
const inFlight = new Map<number, AbortController>();

function fail(rid: number, err: unknown): void {
  const e = toVoiceError(err);
  post({ op: 'error', rid, code: e.code, message: e.message, retryable: e.retryable });
}

async function runLlm(rid: number, m: Extract<ToProvider, { op: 'llm' }>, signal: AbortSignal): Promise<void> {
  for await (const ev of llm.stream({ messages: m.messages, tools: m.tools, signal })) post({ op: 'event', rid, ev });
  post({ op: 'end', rid });
}

async function runAsr(rid: number, m: Extract<ToProvider, { op: 'asr' }>, signal: AbortSignal): Promise<void> {
  if (!asr) throw new Error('no ASR is configured in the provider thread');
  const text = await asr.transcribe(m.pcm, { signal, sampleRate: m.sampleRate });
  post({ op: 'text', rid, text });
}

port.on('message', (m: ToProvider) => {
  if (m.op === 'crash') throw new Error('provider thread crash requested (test)');
  if (m.op === 'abort') {
    inFlight.get(m.rid)?.abort();
    return;
  }
  const ac = new AbortController();
  inFlight.set(m.rid, ac);
  const run = m.op === 'llm' ? runLlm(m.rid, m, ac.signal) : runAsr(m.rid, m, ac.signal);
  run.catch((err: unknown) => fail(m.rid, err)).finally(() => inFlight.delete(m.rid));
});

post({ op: 'ready' });
