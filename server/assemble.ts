/**
 * @module Wires the whole server from a configuration: providers and MCP (deps), metrics, the
 * session registry, health and metrics routes, and the app. main.ts adds only process concerns
 * (listen, signals, exit codes); tests use this to run the server exactly as production wires it.
 */
import type { Logger as PinoLogger } from 'pino';
import type { WorkerObserver } from '../core/worker-rpc.ts';
import { AdmissionControl, type MediaLoad, type SessionOpenedHook } from '../transport/session-door/index.ts';
import { buildApp, deviceSessionsFor, recordSessions, type App } from './app.ts';
import type { Config } from './config.ts';
import { createDeps, type CreateDepsOptions, type Deps } from './deps.ts';
import { agentLookupOf, configAgentParts, type AgentLookup } from '../features/agents/index.ts';
import { openConfiguredStore } from './open-store.ts';
import { bridgeHubFor } from '../features/mcp-endpoint/index.ts';
import type { Store } from '../store/store.ts';
import { healthRoutes, providerChecks } from './health-route.ts';
import { metricsRoute, createServerMetrics, type ServerMetrics } from '../features/metrics/index.ts';
import { createProviderDoctor } from '../providers/doctor.ts';
import type { OpusSampleRate } from '../audio/opus/codec.ts';
import { PushDelivery, AudioClips, pushAudioRoute, notifyAudio, type IdleDeviceLinks } from '../features/push/index.ts';
import { mqttTransportFor, type MqttTransport } from '../transport/mqtt/index.ts';
import { ReminderScheduler } from '../features/reminders/index.ts';
import { Vision } from '../features/vision/index.ts';

export interface AssembledServer {
  app: App;
  deps: Deps;
  metrics: ServerMetrics;
  /**
   * Server-initiated speech: `push.say({ deviceId, text, source })` delivers wherever the device
   * is (reminders call it with `source: 'reminder'`, exempt from the rate). Its `onSessionOpened`
   * is a hook of the session door every transport opens through (queued messages); `useIdleLinks`
   * hands it the MQTT transport's idle devices.
   */
  push: PushDelivery;
  /**
   * The MQTT+UDP transport when `mqtt.enabled` (and no gateway stands in for it): listening from
   * here on, closed with the app. Its `ports` are the bound ones; it is the `IdleDeviceLinks` of
   * features/push/.
   */
  mqtt?: MqttTransport;
  /** `/readyz` answers 503 while this is false (start-up, drain). */
  setReady(ready: boolean): void;
  /** Fires the reminders that fall due through `push` (absent when `reminders.enabled` is off). */
  reminders?: ReminderScheduler;
  /** Closes the app, then providers and MCP connections, then the metrics. */
  close(): Promise<void>;
}

export interface AssembleOptions {
  /** Longest wait for MCP servers before serving anyway (they keep connecting). */
  mcpStartWaitMs?: number;
  /** Media-worker pressure for admission control (queued media jobs per worker); absent: not judged. */
  mediaLoad?: () => MediaLoad;
  /** Where secrets made at run time go (the device-token secret, each issued token), for log redaction by value. */
  onSecret?: (value: string, issued?: boolean) => void;
  /** Sees each media worker and provider thread as it starts. */
  onWorker?: WorkerObserver;
  /** Where devices' agents are looked up; default: the store's cache (kept fresh by its change feed). */
  agents?: AgentLookup;
  /** The store; default: opened from `store.url` here and closed with the server. */
  store?: Store;
  /** Devices connected to the MQTT broker here (server-initiated speech reaches them while idle). */
  idleLinks?: IdleDeviceLinks;
  /** Wall-clock time of reminders (set and fired) and of the vision tokens' age, ms since the epoch; default `Date.now` (tests move it). */
  now?: () => number;
  /** Makes a voice from its options; default the registry's (`CreateDepsOptions.createTts`: tests inject stand-ins). */
  createTts?: CreateDepsOptions['createTts'];
}

export async function assembleServer(
  config: Config,
  log: PinoLogger,
  opts: AssembleOptions = {},
): Promise<AssembledServer> {
  // Opened first: an unreachable database stops the start with a message naming store.url, before
  // any worker or child process exists.
  const store = opts.store ?? (await openConfiguredStore(config, log));
  const ownStore = opts.store === undefined;
  try {
    return await assembleWithStore(config, log, opts, store, ownStore);
  } catch (err) {
    if (ownStore) await store.close();
    throw err;
  }
}

async function assembleWithStore(
  config: Config,
  log: PinoLogger,
  opts: AssembleOptions,
  store: Store,
  ownStore: boolean,
): Promise<AssembledServer> {
  // Agents declared in the configuration exist in the store (created when missing, never
  // overwritten: the console may have edited them since); their `devices:` get them when unset.
  for (const agent of config.agents) {
    const { name, settings, devices } = configAgentParts(agent);
    await store.agents.ensure(name, settings, devices);
  }
  const agents = opts.agents ?? agentLookupOf(store.cache, (listener) => store.onChange(listener));
  const metrics = createServerMetrics({ mcpServerNames: Object.keys(config.mcpServers) });
  // Shared by the endpoint (bridges join it) and the sessions' tools (their agent's bridges).
  const bridges = bridgeHubFor(config, log, store.mcpRelay);
  const vision = visionFor(config, log, agents, opts);
  const deps = await createDeps(config, log, {
    ...(vision.enabled ? { visionFor: (info) => vision.grantFor(info) } : {}),
    bridges,
    observer: metrics.observer,
    ...(opts.mcpStartWaitMs !== undefined ? { mcpStartWaitMs: opts.mcpStartWaitMs } : {}),
    ...(opts.onWorker ? { onWorker: opts.onWorker } : {}),
    agents,
    memory: store.memory,
    ...(config.reminders.enabled ? { reminders: store.reminders } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.createTts ? { createTts: opts.createTts } : {}),
    onStoreChange: (listener) => store.onChange(listener),
    ...(opts.onSecret ? { onSecret: opts.onSecret } : {}),
  });
  let ready = true;
  // Queued media requests per worker: a worker that falls behind shows here first.
  const mediaLoad =
    opts.mediaLoad ??
    ((): MediaLoad => {
      const st = deps.media.stats();
      return { queueDepth: st.queueDepth / Math.max(1, st.workers) };
    });
  metrics.bind({ media: () => deps.media.stats(), providerThreadRestarts: () => deps.providers.restarts });
  // Before serving: one log line per provider that cannot work, naming what to set.
  const doctor = createProviderDoctor(config);
  await doctor.reportAtStartup(log);
  const admission = new AdmissionControl({ ...config.server.admission, load: mediaLoad });
  metrics.bind({ admissionEventLoopDelayMs: () => admission.eventLoopDelayMs() });
  // Server-initiated speech: sessions here, idle MQTT devices (notify audio at a single-use URL),
  // other replicas and the offline queue, through the store.
  const clips = new AudioClips(config.push.audioUrlTtlMs);
  // The one door of every transport: each session opened is recorded in the store, then offered
  // push's queued messages; every refusal is counted. Closed with the app (admission with it).
  const hooks: SessionOpenedHook[] = [recordSessions(store, config, log)];
  const sessions = deviceSessionsFor(config, {
    createConversation: metrics.countSessions(deps.createConversation),
    onOpened: hooks,
    admission,
    onRefused: (reason) => metrics.connectionRefused(reason),
  });
  const { registry } = sessions;
  metrics.bind({ mcp: deps.mcp, activeSessions: () => registry.size });
  const push = new PushDelivery({
    config: config.push,
    publicWsUrl: config.server.publicWsUrl,
    registry,
    store,
    clips,
    notifyAudio: (deviceId, text) =>
      notifyAudio(
        {
          media: deps.media,
          profileFor: (d) => deps.profiles.profileFor(d),
          sampleRate: config.audio.outputSampleRate as OpusSampleRate,
          complexity: config.audio.opusComplexity,
          vad: {
            threshold: config.vad.threshold,
            minSilenceMs: config.vad.minSilenceMs,
            minSpeechMs: config.vad.minSpeechMs,
            pauseMs: config.vad.earlyStartMs,
          },
          log: log.child({ part: 'push' }),
        },
        deviceId,
        text,
      ),
    log: log.child({ part: 'push' }),
  });
  hooks.push(push.onSessionOpened);
  if (opts.idleLinks) push.useIdleLinks(opts.idleLinks);
  let app: App;
  let mqtt: MqttTransport | undefined;
  try {
    mqtt = await mqttTransportFor(config, log, {
      devices: store.registry,
      sessions,
      onUdpDrop: (reason) => metrics.udpDropped(reason),
    });
    if (mqtt) metrics.bind({ mqtt: mqtt.stats });
    // Idle MQTT devices can be reached (notify/alert) and get their queued messages when they connect.
    if (mqtt) push.useIdleLinks(mqtt);
    // The app closes the session door (admission control with it) and the MQTT transport when it
    // closes (main.ts closes the app by shutdown()).
    app = await buildApp({
      config,
      log,
      sessions,
      ...(mqtt ? { mqtt, transports: [mqtt] } : {}),
      store,
      bridges,
      push,
      vision,
      ...(opts.onSecret ? { onSecret: opts.onSecret } : {}),
      plugins: [
        pushAudioRoute(clips),
        healthRoutes({
          mcp: deps.mcp,
          ready: () => ready,
          checks: providerChecks(config),
          problems: () => doctor.problems(),
          adminSecret: config.server.adminSecret,
        }),
        metricsRoute({ metrics }),
      ],
    });
  } catch (err) {
    await mqtt?.close();
    sessions.close();
    await push.close();
    await deps.close();
    throw err;
  }
  // Every replica polls; each due reminder is claimed by exactly one of them.
  const reminders = config.reminders.enabled
    ? new ReminderScheduler({
        store: store.reminders,
        push,
        replica: store.replica,
        staleAfterMs: config.reminders.staleAfterMs,
        spoken: (deviceId, text) => deps.locale.reminderText(deviceId, text),
        log,
        ...(opts.now ? { now: opts.now } : {}),
      })
    : undefined;
  reminders?.start();
  return {
    app,
    deps,
    metrics,
    push,
    ...(mqtt ? { mqtt } : {}),
    ...(reminders ? { reminders } : {}),
    setReady: (r) => {
      ready = r;
    },
    close: async () => {
      // No reminder is fired once the app stops: the scheduler first, then the delivery.
      await reminders?.stop();
      await push.close();
      await app.fastify.close();
      await deps.close();
      metrics.close();
      if (ownStore) await store.close();
    },
  };
}

/** The camera endpoint (features/vision/): photos go to the device's agent's model over the configuration's. */
function visionFor(
  config: Config,
  log: PinoLogger,
  agents: AgentLookup,
  opts: Pick<AssembleOptions, 'onSecret' | 'now'>,
): Vision {
  const defaultAgent = config.defaultAgent ?? config.agents[0]?.name;
  return new Vision({
    settings: config.vision,
    publicWsUrl: config.server.publicWsUrl,
    httpRequestTimeoutMs: config.server.httpRequestTimeoutMs,
    // A live session holds one; a replaced session's is revoked when it ends.
    maxTokens: Math.max(1000, 2 * config.server.maxSessions),
    chat: { baseURL: config.llm.baseURL, apiKey: config.llm.apiKey, model: config.llm.model },
    agentSettingsOf: (deviceId) => {
      const named = agents.agentNameOf(deviceId);
      const row =
        (named !== null ? agents.agent(named) : undefined) ?? (defaultAgent ? agents.agent(defaultAgent) : undefined);
      return row?.settings;
    },
    ...(opts.onSecret ? { onSecret: opts.onSecret } : {}),
    ...(opts.now ? { now: opts.now } : {}),
    log: log.child({ part: 'vision' }),
  });
}
