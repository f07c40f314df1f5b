/**
 * @module Entry of the provider thread: the LLM clients and HTTP ASRs (those whose provider runs in
 * the provider thread, `providers/index.ts`) run here, so
 * their HTTP streaming, SSE parsing, chunk validation and multipart uploads stay off
 * the main thread, which keeps every device's 60 ms frame beat (measured: about a third of the
 * main thread's work at 50 devices answering at once was in these clients). One client per
 * distinct options (`client-cache.ts`): the configured ones, and each agent's own.
 */
import { workerData } from 'node:worker_threads';
import { workerRpcThread } from '../../core/worker-rpc-thread.ts';
import { nameThisThread } from '../../core/thread-name.ts';
import type { Asr } from '../../audio/asr/asr.ts';
import type { LlmClient } from '../../llm/types.ts';
import { asrProvider, type AsrOptions } from '../registry/registry.ts';
import { createLlmClient } from '../openai/llm.ts';
import type { OpenAiLlmOptions } from '../openai/options.ts';
import { ClientCache } from './client-cache.ts';
import type { ProviderApi, ProviderThreadData } from './provider-protocol.ts';

const rpc = workerRpcThread<ProviderApi>();
const data = workerData as ProviderThreadData;
nameThisThread('xz-providers');

const log = rpc.log;
const max = data.maxClients ?? 16;
const llms = new ClientCache<OpenAiLlmOptions, LlmClient>(max, async (o) =>
  createLlmClient(o, log.child({ part: 'llm' })),
);
const asrs = new ClientCache<AsrOptions, Asr>(max, (o) => {
  const entry = asrProvider(o);
  if (entry.runsIn !== 'provider-thread') throw new Error(`the ${o.provider} ASR does not run in the provider thread`);
  return entry.create(o, log.child({ part: 'asr' }));
});
const llm = await llms.pin(data.llm);
const asr = data.asr ? await asrs.pin(data.asr) : undefined;

// A cancelled call aborts its signal, which cancels the HTTP request.
rpc.serve({
  llm: async ({ options, messages, tools }, call) => {
    const client = options ? await llms.get(options) : llm;
    for await (const ev of client.stream({ messages, tools, signal: call.signal })) call.send(ev);
  },
  asr: async ({ options, pcm, sampleRate }, call) => {
    const client = options ? await asrs.get(options) : asr;
    if (!client) throw new Error('no ASR is configured in the provider thread');
    return client.transcribe(pcm, { signal: call.signal, sampleRate });
  },
  clients: () => ({
    llm: { created: llms.created, kept: llms.size },
    asr: { created: asrs.created, kept: asrs.size },
  }),
});
