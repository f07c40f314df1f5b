/**
 * @module Entry of the provider thread: the LLM client and an HTTP ASR (one whose provider runs in
 * the provider thread, `providers/index.ts`) run here, so
 * their HTTP streaming, SSE parsing, chunk validation and multipart uploads stay off
 * the main thread, which keeps every device's 60 ms frame beat (measured: about a third of the
 * main thread's work at 50 devices answering at once was in these clients).
 */
import { workerData } from 'node:worker_threads';
import { workerRpcThread } from '../../core/worker-rpc-thread.ts';
import { nameThisThread } from '../../core/thread-name.ts';
import { asrProvider } from '../index.ts';
import { createLlmClient } from '../openai/llm.ts';
import type { ProviderApi, ProviderThreadData } from './provider-protocol.ts';

const rpc = workerRpcThread<ProviderApi>();
const data = workerData as ProviderThreadData;
nameThisThread('xz-providers');

const log = rpc.log;
const llm = createLlmClient(data.llm, log.child({ part: 'llm' }));
const asr = data.asr ? await asrProvider(data.asr).create(data.asr, log.child({ part: 'asr' })) : undefined;

// A cancelled call aborts its signal, which cancels the HTTP request.
rpc.serve({
  llm: async ({ messages, tools }, call) => {
    for await (const ev of llm.stream({ messages, tools, signal: call.signal })) call.send(ev);
  },
  asr: ({ pcm, sampleRate }, call) => {
    if (!asr) throw new Error('no ASR is configured in the provider thread');
    return asr.transcribe(pcm, { signal: call.signal, sampleRate });
  },
});
