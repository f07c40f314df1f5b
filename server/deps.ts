/**
 * @module Builds the process-wide dependencies from the configuration: the shared VAD model, ASR
 * and TTS providers, the LLM client, the MCP connections, each device's agent (`agents/`: what a
 * turn uses, asked for at every turn start), and the per-session tool wiring (filtered by the
 * agent's tool policy). The
 * providers come from the one explicit map in `providers/index.ts` (no self-registration
 * anywhere); where each runs is what the provider declares.
 */
import type { Logger } from '../core/logger.ts';
import type { WorkerObserver } from '../core/worker-rpc.ts';
import type { Asr } from '../audio/asr/asr.ts';
import type { Tts } from '../audio/tts/tts.ts';
import { createMediaEngine, resolveWorkerCount } from '../audio/media/engine.ts';
import type { MediaEngine } from '../audio/media/media.ts';
import { EspeakTtsSchema } from '../providers/espeak/options.ts';
import { createEspeakTts } from '../providers/espeak/tts.ts';
import { asrProvider, createTts, type TtsOptions } from '../providers/index.ts';
import { pickLlmOptions } from '../providers/openai/options.ts';
import type { LlmClient } from '../llm/types.ts';
import { createCompositeToolSource, type NamedToolSource } from '../mcp/composite-tool-source.ts';
import { createLocalTools, dateTimeTool, endConversationTool } from '../mcp/local-tools.ts';
import { createMcpManager, type McpManager } from '../mcp/manager.ts';
import { playMusicTool } from '../mcp/local-tools/play-music.ts';
import { startProviderThread, type ProviderThread } from '../providers/thread/provider-thread.ts';
import { createResultDispatcher } from '../voice/dispatch/result-dispatcher.ts';
import type { Config } from './config.ts';
import type { ConversationFactory } from '../voice/session/conversation.ts';
import { createVoiceConversationFactory } from '../voice/conversation/voice-conversation.ts';
import type { SessionTools, SessionToolsInput, TurnObserver, VoiceDeps } from '../voice/conversation/voice-deps.ts';
import {
  configAgentLookup,
  type AgentLookup,
  AgentProfiles,
  localToolsUnder,
  mcpToolsUnder,
  DeviceLocale,
} from '../features/agents/index.ts';
import type { BridgeHub } from '../features/mcp-endpoint/index.ts';
import type { DeviceMemoryStore } from '../store/memory.ts';
import type { StoreChange } from '../store/types.ts';
import { DeviceMemory } from '../features/memory/index.ts';
import { memoryTools } from '../mcp/local-tools/memory-tools.ts';
import { reminderTools } from '../mcp/local-tools/reminder-tools.ts';
import type { RemindersStore } from '../store/reminders.ts';
import { sessionReminders } from '../features/reminders/index.ts';

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
  /** Each device's agent and what it resolves to for a turn. */
  agents: AgentLookup;
  profiles: AgentProfiles;
  /** Each device's memory (absent without a store). */
  memory?: DeviceMemory;
  /** Each device's time zone and language, from its agent over the configuration. */
  locale: DeviceLocale;
  /** Releases providers, child processes and MCP connections. */
  close(): Promise<void>;
}

export interface CreateDepsOptions {
  observer?: TurnObserver;
  /** Longest wait for MCP servers at start-up before serving anyway (they keep connecting). */
  mcpStartWaitMs?: number;
  /** Sees each media worker and provider thread as it starts. */
  onWorker?: WorkerObserver;
  /** Where devices' agents are looked up (the store's cache); default: the configuration's `agents:` in memory. */
  agents?: AgentLookup;
  /** Where secrets found at run time go (agents' API keys), for log redaction by value. */
  onSecret?: (value: string) => void;
  /** The bridges dialled in to the MCP endpoint: their agent's tools join each session's. */
  bridges?: BridgeHub;
  /** Where each device's memory is kept (the store); absent: nothing is kept across sessions. */
  memory?: DeviceMemoryStore;
  /** Where reminders are kept (given with `reminders.enabled`); absent: the reminder tools are not offered. */
  reminders?: RemindersStore;
  /** Wall-clock time reminders are set by, ms since the epoch (tests move it); default `Date.now`. */
  now?: () => number;
  /** The store's change feed: a device's memory deleted anywhere empties its live sessions' too. */
  onStoreChange?: (listener: (c: StoreChange) => void) => () => void;
  /** The server's camera endpoint, for each session (`VoiceDeps.visionFor`); absent: none advertised. */
  visionFor?: VoiceDeps['visionFor'];
  /** Makes a voice from its options (the configuration's and agents'); default the registry's. Tests inject stand-ins. */
  createTts?: (options: TtsOptions, log: Logger) => Promise<Tts>;
}

export async function createDeps(config: Config, log: Logger, opts: CreateDepsOptions = {}): Promise<Deps> {
  // The embedded TTS synthesises in the media workers, which load its voice; apologies must be
  // audible even when a remote TTS is what failed, so with one the embedded voice is the fallback.
  const makeTts: (options: TtsOptions, log: Logger) => Promise<Tts> = opts.createTts ?? createTts;
  const tts = await makeTts(config.tts, log.child({ part: 'tts' }));
  const fallbackTts =
    tts.synthesis === 'media-worker' ? tts : createEspeakTts(EspeakTtsSchema.parse({ provider: 'espeak' }));
  const media = await createMediaEngine({
    workers: resolveWorkerCount(config.audio.workers),
    workerNice: config.audio.workerNice,
    vadProvider: config.vad.provider,
    espeak: fallbackTts.voice,
    espeakEngine: config.audio.espeakEngine,
    sendAheadMs: config.audio.sendAheadMs,
    preBufferFrames: config.audio.preBufferFrames,
    ...(opts.onWorker ? { onWorker: opts.onWorker } : {}),
    log: log.child({ part: 'media' }),
  });
  // The LLM client and an HTTP ASR run on the provider thread (providers/thread/): their HTTP
  // and SSE work would otherwise hold up the main thread's frame pacing under a burst of turns.
  const asrEntry = asrProvider(config.asr);
  const providers = await startProviderThread(
    {
      llm: pickLlmOptions(config.llm),
      ...(asrEntry.runsIn === 'provider-thread' ? { asr: config.asr } : {}),
    },
    log,
    opts.onWorker ? { onWorker: opts.onWorker } : {},
  ).catch(async (err: unknown) => {
    await media.close();
    throw err;
  });
  const asr = providers.asr ?? (await asrEntry.create(config.asr, log.child({ part: 'asr' })));
  const llm = providers.llm;
  // Each device's assistant: its agent's settings over the configuration, built once per distinct
  // settings and shared by the agent's devices; asked for at every turn start.
  const agents = opts.agents ?? configAgentLookup(config);
  const profiles = new AgentProfiles({
    config,
    lookup: agents,
    log,
    base: { asr, tts },
    clients: providers,
    createTts: makeTts,
    ...(opts.onSecret ? { onSecret: opts.onSecret } : {}),
  });
  // Each device's memory: its agent now, and that agent's model for the summary.
  const memory = opts.memory
    ? new DeviceMemory({
        store: opts.memory,
        settings: config.memory,
        agentOf: (deviceId) => {
          const held = profiles.profileFor(deviceId);
          held.release();
          return { agent: held.profile.agent, llm: held.profile.llm };
        },
        log,
        ...(opts.onStoreChange ? { onChange: opts.onStoreChange } : {}),
      })
    : undefined;
  const mcp = createMcpManager({ servers: config.mcpServers, log: log.child({ part: 'mcp' }) });
  const started = mcp.start();
  const waitMs = opts.mcpStartWaitMs ?? 5000;
  await Promise.race([started, new Promise((r) => setTimeout(r, waitMs).unref())]);

  // The date tool checks `tools.timeZone` here (a config error at start); a device's session gets
  // one that answers in its agent's zone (the Intl formatters, which are costly, are shared per
  // zone). The other local tools hold no per-session state: built once, shared by every session.
  const dateTool = dateTimeTool(config.tools.timeZone ? { timeZone: config.tools.timeZone } : {});
  const locale = new DeviceLocale({ config, agents, defaultAgent: () => profiles.defaultAgent(), log });
  const sessionDateTool = (deviceId: string | null) =>
    deviceId
      ? dateTimeTool({
          ...(config.tools.timeZone ? { timeZone: config.tools.timeZone } : {}),
          zoneOf: () => locale.timeZoneOf(deviceId),
        })
      : dateTool;
  const localTools = [
    endConversationTool({ goodbye: config.conversation.goodbye }),
    // Offered only when there is something to play: a tool that always fails confuses the model.
    ...(config.tools.music.folder || config.tools.music.allowedHosts.length > 0
      ? [
          playMusicTool({
            folder: config.tools.music.folder,
            allowedHosts: config.tools.music.allowedHosts,
            allowPrivateAddresses: config.tools.music.allowPrivateAddresses,
          }),
        ]
      : []),
  ];
  // The memory tools act on the session's own device memory only: made per session around it.
  const sessionMemoryTools = (input: SessionToolsInput) => {
    const target = input.memory ? memory?.toolTarget(input.memory) : undefined;
    return target ? memoryTools(target) : [];
  };
  // The reminder tools act on the session's own device (a session without a Device-Id gets none).
  const remindersStore = config.reminders.enabled ? opts.reminders : undefined;
  const sessionReminderTools = (input: SessionToolsInput) => {
    const { deviceId, clientId } = input.info;
    if (!remindersStore || !deviceId || !clientId) return [];
    return reminderTools(
      sessionReminders({
        store: remindersStore,
        locale,
        settings: config.reminders,
        deviceId,
        clientId,
        log: input.log,
        ...(opts.now ? { now: opts.now } : {}),
      }),
    );
  };
  const toolsFor = (input: SessionToolsInput): SessionTools => {
    const policy = input.policy ?? (() => undefined);
    // The agent's tool policy is read at each listing and call: the device's own tools are not filtered.
    const sources: NamedToolSource[] = [
      {
        name: 'local',
        source: localToolsUnder(
          createLocalTools(
            [
              sessionDateTool(input.info.deviceId),
              ...localTools,
              ...sessionMemoryTools(input),
              ...sessionReminderTools(input),
            ],
            { log: input.log },
          ),
          policy,
        ),
      },
      { name: 'mcp', source: mcpToolsUnder(mcp.sessionView(), policy) },
    ];
    if (opts.bridges) {
      // The device's agent is asked at each listing: a change of agent applies from the next turn.
      const deviceId = input.info.deviceId;
      const agentOf = (): string => {
        const named = deviceId ? agents.agentNameOf(deviceId) : null;
        return named !== null && agents.agent(named) !== undefined ? named : profiles.defaultAgent();
      };
      sources.push({ name: 'bridge', source: opts.bridges.toolSource(agentOf) });
    }
    // The device's own tools keep their names: no bridge or MCP server can take the device's calls.
    if (input.deviceTools) sources.push({ name: 'device', source: input.deviceTools, keepsNames: true });
    return {
      tools: createCompositeToolSource(sources, { log: input.log }),
      dispatcher: createResultDispatcher({
        log: input.log,
        ...config.media,
        playbackError: (name) => config.conversation.playbackError.replace('{name}', name),
      }),
      context: async (signal) => {
        if (Object.keys(config.mcpServers).length === 0) return [];
        const servers = policy()?.mcpServers;
        return mcp.contextFor(servers ? { signal, servers } : { signal });
      },
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
    profileFor: (info) => profiles.profileFor(info.deviceId),
    ...(memory ? { memoryFor: (info) => memory.forSession(info) } : {}),
    ...(opts.visionFor ? { visionFor: opts.visionFor } : {}),
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
    agents,
    profiles,
    ...(memory ? { memory } : {}),
    locale,
    close: async () => {
      await memory?.close();
      await Promise.allSettled([
        asr.close(),
        tts.close(),
        fallbackTts === tts ? Promise.resolve() : fallbackTts.close(),
        mcp.close(),
        profiles.close(),
      ]);
      await Promise.allSettled([media.close(), providers.close()]);
    },
  };
}
