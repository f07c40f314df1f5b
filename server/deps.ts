/**
 * @module Builds the process-wide dependencies from the configuration: the shared VAD model, ASR
 * and TTS providers, the LLM client, the MCP connections, and the per-session tool wiring. The
 * provider choice is an explicit switch on config here (no self-registration anywhere).
 */
import type { Logger } from '../core/logger.ts';
import type { WorkerObserver } from '../core/worker-rpc.ts';
import { createAsr, type Asr } from '../audio/asr/asr.ts';
import { EspeakTts } from '../audio/tts/espeak.ts';
import { createTts, type Tts } from '../audio/tts/tts.ts';
import { createMediaEngine, resolveWorkerCount } from '../audio/media/engine.ts';
import type { MediaEngine } from '../audio/media/media.ts';
import type { EspeakVoice } from '../audio/tts/espeak-wasm.ts';
import type { LlmClient } from '../llm/types.ts';
import { createCompositeToolSource, type NamedToolSource } from '../mcp/composite-tool-source.ts';
import { createLocalTools, dateTimeTool, endConversationTool } from '../mcp/local-tools.ts';
import { createMcpManager, type McpManager } from '../mcp/manager.ts';
import { playMusicTool } from '../mcp/local-tools/play-music.ts';
import { startProviderThread, type ProviderThread } from './providers/provider-thread.ts';
import { createResultDispatcher } from '../voice/dispatch/result-dispatcher.ts';
import type { Config } from './config.ts';
import type { ConversationFactory } from '../voice/session/conversation.ts';
import { createVoiceConversationFactory } from '../voice/conversation/voice-conversation.ts';
import type { SessionTools, SessionToolsInput, TurnObserver, VoiceDeps } from '../voice/conversation/voice-deps.ts';

export interface Deps {
  createConversation: ConversationFactory;
  /** Opus, VAD and embedded TTS for every session (worker threads). */
  media: MediaEngine;
  asr: Asr;
  tts: Tts;
  llm: LlmClient;
  /** The thread the LLM client and a remote ASR run on. */
  providers: ProviderThread;
  mcp: McpManager;
  /** Releases providers, child processes and MCP connections. */
  close(): Promise<void>;
}

export interface CreateDepsOptions {
  observer?: TurnObserver;
  /** Longest wait for MCP servers at start-up before serving anyway (they keep connecting). */
  mcpStartWaitMs?: number;
  /** Sees each media worker and provider thread as it starts. */
  onWorker?: WorkerObserver;
}

export async function createDeps(config: Config, log: Logger, opts: CreateDepsOptions = {}): Promise<Deps> {
  // The embedded TTS voice the media workers load: the configured one, or the fallback's.
  const espeak: EspeakVoice =
    config.tts.provider === 'espeak'
      ? { voice: config.tts.voice ?? 'en-us', ...(config.tts.speed !== undefined ? { speed: config.tts.speed } : {}) }
      : { voice: 'en-us' };
  const media = await createMediaEngine({
    workers: resolveWorkerCount(config.audio.workers),
    workerNice: config.audio.workerNice,
    vadProvider: config.vad.provider,
    espeak,
    espeakEngine: config.audio.espeakEngine,
    sendAheadMs: config.audio.sendAheadMs,
    preBufferFrames: config.audio.preBufferFrames,
    ...(opts.onWorker ? { onWorker: opts.onWorker } : {}),
    log: log.child({ part: 'media' }),
  });
  // The LLM client and a remote ASR run on the provider thread (server/providers/): their HTTP
  // and SSE work would otherwise hold up the main thread's frame pacing under a burst of turns.
  const providers = await startProviderThread(
    {
      llm: {
        baseURL: config.llm.baseURL,
        apiKey: config.llm.apiKey,
        model: config.llm.model,
        timeoutMs: config.llm.timeoutMs,
        maxRetries: config.llm.maxRetries,
        headers: config.llm.headers,
        extraBody: config.llm.extraBody,
        ...(config.llm.temperature !== undefined ? { temperature: config.llm.temperature } : {}),
      },
      ...(config.asr.provider === 'openai' ? { asr: config.asr } : {}),
    },
    log,
    opts.onWorker ? { onWorker: opts.onWorker } : {},
  ).catch(async (err: unknown) => {
    await media.close();
    throw err;
  });
  const asr = providers.asr ?? (await createAsr(config.asr, log.child({ part: 'asr' })));
  // The embedded TTS runs in the media workers (which checked its voice as they loaded); the
  // provider object here only names it, so the engine is not loaded in this thread too.
  const tts = config.tts.provider === 'espeak' ? new EspeakTts(config.tts, log) : await createTts(config.tts, log.child({ part: 'tts' }));
  // Apologies must be audible even when a remote TTS is what failed.
  const fallbackTts = config.tts.provider === 'espeak' ? tts : new EspeakTts({ provider: 'espeak', voice: 'en-us' }, log);
  const llm = providers.llm;
  const mcp = createMcpManager({ servers: config.mcpServers, log: log.child({ part: 'mcp' }) });
  const started = mcp.start();
  const waitMs = opts.mcpStartWaitMs ?? 5000;
  await Promise.race([started, new Promise((r) => setTimeout(r, waitMs).unref())]);

  // The local tools hold no per-session state: built once (the date tool's Intl formatter is
  // costly), shared by every session's tool source.
  const localTools = [
    dateTimeTool(config.tools.timeZone ? { timeZone: config.tools.timeZone } : {}),
    endConversationTool({ goodbye: config.conversation.goodbye }),
    // Offered only when there is something to play: a tool that always fails confuses the model.
    ...(config.tools.music.folder || config.tools.music.allowedHosts.length > 0
      ? [playMusicTool({ folder: config.tools.music.folder, allowedHosts: config.tools.music.allowedHosts, allowPrivateAddresses: config.tools.music.allowPrivateAddresses })]
      : []),
  ];
  const toolsFor = (input: SessionToolsInput): SessionTools => {
    const local = createLocalTools(localTools, { log: input.log });
    const sources: NamedToolSource[] = [
      { name: 'local', source: local },
      { name: 'mcp', source: mcp.sessionView() },
    ];
    if (input.deviceTools) sources.push({ name: 'device', source: input.deviceTools });
    return {
      tools: createCompositeToolSource(sources, { log: input.log }),
      dispatcher: createResultDispatcher({
        log: input.log,
        ...config.media,
        playbackError: (name) => config.conversation.playbackError.replace('{name}', name),
      }),
      context: async (signal) => (Object.keys(config.mcpServers).length > 0 ? mcp.contextFor({ signal }) : []),
    };
  };

  const voiceDeps: VoiceDeps = {
    config,
    log,
    media,
    asr,
    tts,
    fallbackTts,
    llm,
    toolsFor,
    ...(opts.observer ? { observer: opts.observer } : {}),
  };
  return {
    createConversation: createVoiceConversationFactory(voiceDeps),
    media,
    asr,
    tts,
    llm,
    providers,
    mcp,
    close: async () => {
      await Promise.allSettled([asr.close(), tts.close(), fallbackTts === tts ? Promise.resolve() : fallbackTts.close(), mcp.close()]);
      await Promise.allSettled([media.close(), providers.close()]);
    },
  };
}
