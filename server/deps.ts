/**
 * @module Builds the process-wide dependencies from the configuration: the shared VAD model, ASR
 * and TTS providers, the LLM client, the MCP connections, and the per-session tool wiring. The
 * provider choice is an explicit switch on config here (no self-registration anywhere).
 */
import type { Logger } from '../core/logger.ts';
import { createAsr, type Asr } from '../audio/asr/asr.ts';
import { createTts, type Tts } from '../audio/tts/tts.ts';
import { createVadModel, type VadModel } from '../audio/vad/vad.ts';
import { createLlmClient } from '../llm/client.ts';
import type { LlmClient } from '../llm/types.ts';
import { createCompositeToolSource, type NamedToolSource } from '../mcp/composite-tool-source.ts';
import { createLocalTools, dateTimeTool, endConversationTool } from '../mcp/local-tools.ts';
import { createMcpManager, type McpManager } from '../mcp/manager.ts';
import { playMusicTool } from '../mcp/local-tools/play-music.ts';
import { createResultDispatcher } from './dispatch/result-dispatcher.ts';
import type { Config } from './config.ts';
import type { ConversationFactory } from './session/conversation.ts';
import { createVoiceConversationFactory } from './session/voice/voice-conversation.ts';
import type { SessionTools, SessionToolsInput, TurnObserver, VoiceDeps } from './session/voice/voice-deps.ts';

export interface Deps {
  createConversation: ConversationFactory;
  vadModel: VadModel;
  asr: Asr;
  tts: Tts;
  llm: LlmClient;
  mcp: McpManager;
  /** Releases providers, child processes and MCP connections. */
  close(): Promise<void>;
}

export interface CreateDepsOptions {
  observer?: TurnObserver;
  /** Longest wait for MCP servers at start-up before serving anyway (they keep connecting). */
  mcpStartWaitMs?: number;
}

export async function createDeps(config: Config, log: Logger, opts: CreateDepsOptions = {}): Promise<Deps> {
  const vadModel = await createVadModel({ provider: config.vad.provider, log: log.child({ part: 'vad' }) });
  const asr = await createAsr(config.asr, log.child({ part: 'asr' }));
  const tts = await createTts(config.tts, log.child({ part: 'tts' }));
  // Apologies must be audible even when a remote TTS is what failed.
  const fallbackTts = config.tts.provider === 'espeak' ? tts : await createTts({ provider: 'espeak', voice: 'en-us' }, log.child({ part: 'tts-fallback' }));
  const llm = createLlmClient({
    baseURL: config.llm.baseURL,
    apiKey: config.llm.apiKey,
    model: config.llm.model,
    timeoutMs: config.llm.timeoutMs,
    maxRetries: config.llm.maxRetries,
    headers: config.llm.headers,
    extraBody: config.llm.extraBody,
    ...(config.llm.temperature !== undefined ? { temperature: config.llm.temperature } : {}),
    log: log.child({ part: 'llm' }),
  });
  const mcp = createMcpManager({ servers: config.mcpServers, log: log.child({ part: 'mcp' }) });
  const started = mcp.start();
  const waitMs = opts.mcpStartWaitMs ?? 5000;
  await Promise.race([started, new Promise((r) => setTimeout(r, waitMs).unref())]);

  const toolsFor = (input: SessionToolsInput): SessionTools => {
    const local = createLocalTools(
      [
        dateTimeTool(config.tools.timeZone ? { timeZone: config.tools.timeZone } : {}),
        endConversationTool({ goodbye: config.conversation.goodbye }),
        // Offered only when there is something to play: a tool that always fails confuses the model.
        ...(config.tools.music.folder || config.tools.music.allowedHosts.length > 0
          ? [playMusicTool({ folder: config.tools.music.folder, allowedHosts: config.tools.music.allowedHosts })]
          : []),
      ],
      { log: input.log },
    );
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
    vadModel,
    asr,
    tts,
    fallbackTts,
    llm,
    toolsFor,
    ...(opts.observer ? { observer: opts.observer } : {}),
  };
  return {
    createConversation: createVoiceConversationFactory(voiceDeps),
    vadModel,
    asr,
    tts,
    llm,
    mcp,
    close: async () => {
      await Promise.allSettled([asr.close(), tts.close(), fallbackTts === tts ? Promise.resolve() : fallbackTts.close(), mcp.close()]);
      await vadModel.close();
    },
  };
}
