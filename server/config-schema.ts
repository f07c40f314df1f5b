/**
 * @module The one configuration schema. Every key has a default so the server runs with no file
 * at all (embedded defaults: espeak TTS, pocketsphinx ASR, Silero VAD, a local Ollama-style LLM).
 * README's configuration reference is checked against this schema by a test.
 */
import { z } from 'zod';
import { AsrSchema, RealtimeSchema, TtsSchema } from '../providers/index.ts';
import { OpenAiLlmSchema } from '../providers/openai/options.ts';
import {
  LANGUAGES,
  LANGUAGE_PACKS,
  PIPELINES,
  AgentNameSchema,
  ConfigAgentSchema,
  realtimeBlockMissing,
} from '../features/agents/index.ts';
import { SOURCES_BIND_COMMAND } from '../features/identity/index.ts';
import { AdminSchema } from '../features/admin/index.ts';
import { McpEndpointSchema } from '../features/mcp-endpoint/index.ts';
import { MemorySchema } from '../features/memory/index.ts';
import { PushSchema } from '../features/push/index.ts';
import { RemindersSchema } from '../features/reminders/index.ts';
import { VisionSchema } from '../features/vision/index.ts';
import { parseRange } from '../core/ip-address.ts';
import { MqttSchema } from '../transport/mqtt/index.ts';
import { MAX_DEVICE_TEXT } from '../protocol/messages.ts';
import { StoreSchema } from '../store/store-config.ts';

const EN = LANGUAGE_PACKS.en;
const DEFAULT_SYSTEM_PROMPT = EN.systemPrompt;

export const ServerSchema = z.strictObject({
  host: z.string().min(1).default('0.0.0.0'),
  port: z.number().int().min(0).max(65535).default(8000),
  /** What OTA hands out; empty: ws://<the Host header the device used>/xiaozhi/v1/ */
  publicWsUrl: z.string().default(''),
  /** Binary framing handed out by OTA (1, 2 or 3). */
  protocolVersion: z.union([z.literal(1), z.literal(2), z.literal(3)]).default(1),
  /**
   * The one directory where the server keeps what it stores (the SQLite database of `store.url`).
   * Relative: to the working directory. The image sets /data, a volume.
   */
  dataDir: z.string().min(1).default('data'),
  auth: z
    .strictObject({
      /**
       * open: no credential (LAN). tokens: the static `tokens` below, never handed out by OTA.
       * activation: devices bind by a spoken 6-digit code, then OTA gives each its own token.
       * Unset: tokens when `tokens` lists any, else open.
       */
      mode: z.enum(['open', 'tokens', 'activation']).optional(),
      /** Static bearer tokens accepted in `tokens` mode (for clients other than devices). */
      tokens: z.array(z.string().min(1)).default([]),
      /** Device-Id (MAC) allowlist; empty: any device. */
      allowedDevices: z.array(z.string().min(1)).default([]),
      /** activation: HMAC key of device tokens. Empty: one generated once and kept in the store (shared by replicas). */
      secret: z.union([z.literal(''), z.string().min(32, 'must be at least 32 characters')]).default(''),
      /** activation: how long a spoken code stays valid. */
      codeTtlS: z.number().int().min(30).max(86_400).default(600),
      /**
       * activation: pending codes one source address may hold; a new device from an address at its
       * budget replaces that address's oldest code, so one address cannot use up the codes of all.
       */
      pendingPerAddress: z.number().int().min(1).max(100).default(3),
      /**
       * activation: how the owner binds a code where this server runs, as OTA's activation message,
       * the browser page and the log name it; `{code}` stands for the code. The image sets its own
       * (env XIAOZHI_BIND_COMMAND): there the command is `devices bind CODE`.
       */
      bindCommand: z.string().min(1).max(300).default(SOURCES_BIND_COMMAND),
    })
    .prefault({}),
  /** Browser origins allowed to call OTA and open the WebSocket, besides the server's own page. Devices send no Origin. */
  allowedOrigins: z.array(z.url()).default([]),
  /**
   * Secret for admin access over the network (`Authorization: Bearer <secret>`), e.g. the details
   * of `/readyz`. Empty: admin details only from loopback (and not through a local proxy).
   */
  adminSecret: z.string().default(''),
  helloTimeoutMs: z.number().int().positive().default(10_000),
  /** No data from the device for this long closes the session (the firmware itself gives up after 120 s). */
  idleTimeoutMs: z.number().int().positive().default(120_000),
  /** Largest WebSocket message accepted from a device. The firmware never sends more than 65535 bytes. */
  maxMessageBytes: z.number().int().positive().default(65_536),
  /**
   * Bytes queued for a device that is not reading; beyond this the connection closes with 4007.
   * The downlink keeps only ~600 ms of Opus queued (a few KB), so 1 MiB is only reached by a
   * client that stopped reading.
   */
  maxOutputBufferBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** Control messages (listen, abort, hello, mcp) per connection: a token bucket; excess is dropped. */
  controlMessages: z
    .strictObject({
      perSecond: z.number().positive().default(20),
      burst: z.number().int().positive().default(100),
    })
    .prefault({}),
  /**
   * Concurrent device sessions accepted; more are refused with HTTP 503 before the upgrade. 0: no
   * limit. Default 1000 from BENCHMARKS.md (2 cores): with ~10 % of a fleet talking at its busiest
   * minute that is 100 talkers, which completed every turn (0.2 % gaps); 5,000 idle sessions took
   * 487 MB, so 1000 idle ones fit a 1 GB instance with room. Raise it on bigger machines.
   */
  maxSessions: z.number().int().min(0).default(1000),
  /**
   * Concurrent sessions from one IP address; 0: no limit. Behind a reverse proxy every device has
   * the proxy's address: raise it or set 0 there.
   */
  maxSessionsPerIp: z.number().int().min(0).default(64),
  /**
   * Reverse proxies (addresses or CIDRs, IPv4 or IPv6) whose `X-Forwarded-For` is believed: the
   * client is the rightmost entry that is not itself one of them. From any other peer the header
   * is ignored. Empty: every limit counts the socket's peer.
   */
  trustProxy: z
    .array(
      z
        .string()
        .refine((s) => parseRange(s) !== null, 'must be an IP address or CIDR, e.g. 10.0.0.0/8 or 2001:db8::/32'),
    )
    .default([]),
  /** IPv6 clients are counted by this prefix for every per-address limit (a home or phone gets a /64). */
  ipv6PrefixLength: z.number().int().min(32).max(128).default(64),
  /**
   * Names (and addresses) browsers reach this server by, besides loopback, the machine's own
   * addresses and the host of `publicWsUrl`. A browser request (one with an Origin) whose Host is
   * none of them is refused with 403: that is what a DNS rebinding page sends.
   */
  publicHosts: z
    .array(z.string().regex(/^[A-Za-z0-9.\-:[\]]+$/, 'must be a host name or address, e.g. voice.example.org'))
    .default([]),
  /**
   * WebSocket upgrades per IP address (token bucket); over it: 429. Upgrades presenting a valid
   * credential count against a budget of their own (the same rate, per device).
   */
  upgradeRate: z
    .strictObject({
      perSecond: z.number().positive().default(5),
      burst: z.number().int().positive().default(20),
    })
    .prefault({}),
  /** Whole HTTP request (headers and body) must arrive within this; a slow body is cut off with 408. */
  httpRequestTimeoutMs: z.number().int().positive().default(10_000),
  /** Request headers must arrive within this. */
  httpHeadersTimeoutMs: z.number().int().positive().default(5_000),
  /** Load-based refusal of new devices (503 + Retry-After before the upgrade; OTA and health keep answering). */
  admission: z
    .strictObject({
      /** Refuse new devices while the main thread's event-loop delay (p99 of ~1 s windows) exceeds this in two windows running; 0 disables. */
      maxEventLoopDelayMs: z.number().int().min(0).default(200),
      /** Refuse new devices while queued media jobs per worker exceed this; 0 disables. */
      maxMediaQueue: z.number().int().min(0).default(200),
      /** `Retry-After` seconds on 503 refusals (capacity and overload). */
      retryAfterS: z.number().int().min(1).max(3600).default(5),
    })
    .prefault({}),
  /** WebSocket pings to devices; 0 (default) sends none: some firmware drops the link on them. */
  pingIntervalMs: z.number().int().min(0).default(0),
  /** Minutes east of UTC sent in OTA server_time; null: the server's own zone. */
  timezoneOffsetMinutes: z.number().int().min(-720).max(840).nullable().default(null),
  /** Shutdown: how long turns in progress may finish before they are aborted. */
  drainTimeoutMs: z.number().int().min(0).default(4_000),
  /** Firmware offered by OTA; empty version: none offered. */
  firmware: z
    .strictObject({
      version: z
        .string()
        .regex(/^(\d+(\.\d+)*)?$/, 'must be a numeric dotted version like 2.4.2')
        .default(''),
      url: z.string().default(''),
      force: z.boolean().default(false),
    })
    .prefault({}),
});

export const AudioSchema = z.strictObject({
  /** Downlink sample rate announced in the server hello. */
  outputSampleRate: z
    .union([z.literal(8000), z.literal(12000), z.literal(16000), z.literal(24000), z.literal(48000)])
    .default(24000),
  /** Opus frame duration both ways; the firmware uses 60 ms. */
  frameDurationMs: z.literal(60).default(60),
  /** Downlink encoder complexity 0–10: 5 costs about half of libopus' default 9 (see npm run bench). */
  opusComplexity: z.number().int().min(0).max(10).default(5),
  /** Frames sent at once when an answer starts; the rest of `sendAheadMs` follows at twice real time. */
  preBufferFrames: z.number().int().min(0).max(20).default(3),
  /**
   * Audio kept queued on the device ahead of playback (its queue holds 2,400 ms). A lead of a few
   * hundred ms keeps playback gapless when the server is briefly busy; barge-in is unaffected
   * (the device drops its queue when it aborts). Built up after the pre-buffer, one frame per
   * half frame duration, so no send interval exceeds a frame.
   */
  sendAheadMs: z.number().int().min(0).max(2400).default(600),
  /**
   * Media worker threads (Opus decode/encode, VAD, embedded TTS), each session pinned to one:
   * `auto` is one per core; 0 runs media on the main thread (small setups, debugging).
   */
  workers: z.union([z.literal('auto'), z.number().int().min(0).max(64)]).default('auto'),
  /**
   * Scheduling niceness of the media worker threads (Linux; 0 = same as the main thread). The main
   * thread paces every frame and talks to ASR and the LLM; when a burst of synthesis keeps all
   * cores busy, a lower priority for the workers lets it keep its 60 ms beat. Lower it to 0 when
   * another CPU-heavy process (a local LLM) shares the machine and media falls behind.
   */
  workerNice: z.number().int().min(0).max(19).default(5),
  /**
   * Which espeak-ng speaks for the embedded TTS: `native`, the Debian library in one helper
   * process per media thread (built by scripts/setup.sh and in the image; ~5× cheaper than WASM);
   * `wasm`, the WebAssembly build inside the thread; `auto`, native when its helper is built.
   */
  espeakEngine: z.enum(['auto', 'native', 'wasm']).default('auto'),
  /** Extra wait after the last frame's play-out time before `tts stop`, so the device plays the tail. */
  ttsStopMarginMs: z.number().int().min(0).max(5000).default(300),
});

export const VadSchema = z.strictObject({
  provider: z.enum(['silero', 'webrtc']).default('silero'),
  threshold: z.number().min(0.05).max(0.99).default(0.5),
  /**
   * Silence that ends an utterance when the transcript so far cannot say whether it is over (no
   * words yet, or `completeSilenceMs: 0`).
   */
  minSilenceMs: z.number().int().min(100).max(10_000).default(700),
  /**
   * Silence that ends an utterance whose transcript so far looks complete (a streaming
   * recogniser's partial, or an early start's transcript; rules per language in
   * voice/turn-end/). 0: the transcript is not used and every utterance waits `minSilenceMs`.
   */
  completeSilenceMs: z.number().int().min(0).max(10_000).default(250),
  /**
   * Silence that ends an utterance whose transcript ends unfinished ("and", "to", "um", "因为",
   * "的", a number being read out): the user is still thinking. The longest an utterance waits.
   */
  unfinishedSilenceMs: z.number().int().min(100).max(10_000).default(1500),
  /**
   * Asks the agent's model whether a transcript no rule could judge is finished, once its silence
   * reaches `completeSilenceMs`; until it answers the utterance waits `minSilenceMs`. Costs one
   * short model request per such pause and the model's time to first token on the end of turn.
   */
  llmJudge: z
    .strictObject({
      enabled: z.boolean().default(false),
      /** Longest wait for its answer; past it the plain silence decides. */
      timeoutMs: z.number().int().min(100).max(10_000).default(1000),
    })
    .prefault({}),
  /** Speech shorter than this is treated as noise. */
  minSpeechMs: z.number().int().min(0).max(5000).default(250),
  /**
   * After this much silence inside speech the turn starts early (transcript, the model's answer,
   * its synthesis), while the end of turn waits for the rest of the silence it needs; nothing
   * reaches the device or the history and no tool runs until the end is confirmed, and if the
   * user speaks on, the work is dropped (each such pause costs one LLM request, one ASR request
   * with a batch recogniser, and with a remote TTS one synthesis; at most three per utterance,
   * then the turn waits for the end). With a streaming recogniser the early turn starts from the
   * partial transcript and is kept only if the final one says the same. 0: turns start only at
   * the end of the utterance.
   */
  earlyStartMs: z.number().int().min(0).max(10_000).default(200),
  /** Longest single utterance before it is cut and answered. */
  maxUtteranceMs: z.number().int().min(1000).max(120_000).default(30_000),
  /**
   * A realtime (speech-to-speech) agent whose `asr` can stream also runs that recogniser on each
   * utterance, only so its partial transcripts tell the end of turn when a sentence looks complete
   * (`completeSilenceMs` instead of `minSilenceMs`); the model's own transcript is still the one
   * shown and kept. Costs a second recogniser stream per utterance. Off by default: a recogniser
   * that does not know the user's language (the embedded English one for a Chinese speaker) gives
   * partials that end turns too early.
   */
  realtimeTranscript: z.boolean().default(false),
  /** Realtime mode: the user's speech interrupts the answer. Off: most devices have no echo cancellation. */
  bargeIn: z.boolean().default(false),
  /** Audio kept from before the detected start of speech, so the first syllable reaches ASR. */
  preRollMs: z.number().int().min(0).max(2000).default(300),
});

export const ConversationSchema = z.strictObject({
  /** `listen detect` texts that are only a wake word get the greeting; anything else is answered as speech. */
  wakeWords: z
    .array(z.string().min(1))
    .default(['你好小智', '小智', '你好小志', 'hi xiaozhi', 'hey xiaozhi', 'hello xiaozhi', 'xiaozhi']),
  greeting: z.string().min(1).default(EN.conversation.greeting),
  /** Spoken when a turn fails for a reason none of `apologies` names, so the device never goes silent. */
  apology: z.string().min(1).default(EN.conversation.apology),
  /** Spoken when that part failed (unreachable, key refused, model missing): the user hears which part to fix. */
  apologies: z
    .strictObject({
      llm: z.string().min(1).default(EN.conversation.apologies.llm),
      asr: z.string().min(1).default(EN.conversation.apologies.asr),
      tts: z.string().min(1).default(EN.conversation.apologies.tts),
    })
    .prefault({}),
  /** Spoken when a track or audio result cannot be played; `{name}` is what was to play. */
  playbackError: z.string().min(1).default(EN.conversation.playbackError),
  /** Spoken by the end-conversation tool. */
  goodbye: z.string().min(1).default(EN.conversation.goodbye),
  /**
   * Turns a session may start in any 60 s (typed text, wake word or speech; each one aborts the
   * last and costs a model request). Past it the new turn is not started and the device hears
   * `tooManyTurns`, once per window. 0: no limit.
   */
  maxTurnsPerMinute: z.number().int().min(0).max(1000).default(20),
  /** Spoken (once per 60 s) to a device over `maxTurnsPerMinute`. */
  tooManyTurns: z.string().min(1).default(EN.conversation.tooManyTurns),
  /** Characters of a typed text (`listen detect`) the model gets; the rest is cut. */
  maxTextChars: z.number().int().min(1).max(MAX_DEVICE_TEXT).default(500),
  /**
   * Characters of one answer that are spoken, i.e. sent to the voice (a paid TTS bills them; a
   * streaming voice gets them as the model writes). Past it the rest of the answer is not spoken
   * and a warning is logged; the whole answer still goes to the history.
   */
  maxAnswerChars: z.number().int().min(100).max(100_000).default(4000),
});

/** `asr` and `tts`: each provider's own options schema (`providers/<vendor>/options.ts`), chosen by `provider`. */
export { AsrSchema, TtsSchema };

/** The chat client's options (`providers/openai/options.ts`) and what the ReAct loop and history take. */
export const LlmSchema = OpenAiLlmSchema.extend({
  systemPrompt: z.string().default(DEFAULT_SYSTEM_PROMPT),
  maxToolRounds: z.number().int().min(0).max(20).default(5),
  /** User turns kept in the history (older turns are dropped whole). */
  historyTurns: z.number().int().min(0).max(200).default(10),
  /** Per tool call, in ms. */
  toolTimeoutMs: z.number().int().positive().default(30_000),
});

export const ToolsSchema = z.strictObject({
  /** Built-in music playback (the `play_music` tool). */
  music: z
    .strictObject({
      /** Folder of audio files the tool may play; empty: none. */
      folder: z.string().default(''),
      /**
       * Hosts from which the tool may stream http(s) URLs (`example.com`, `*.example.com`); empty: no
       * URLs. Only ports 80 and 443 unless an entry names its port (`music.lan:8080`).
       */
      allowedHosts: z.array(z.string().min(1)).default([]),
      /**
       * Also play from hosts that resolve to loopback, private, link-local or other non-public
       * addresses (a music server on your LAN). Off by default: an allowed name pointing inside
       * your network must not let a model fetch from it.
       */
      allowPrivateAddresses: z.boolean().default(false),
    })
    .prefault({}),
  /** IANA time zone for the date/time tool; empty: the server's zone. */
  timeZone: z.string().default(''),
});

/** The device's own MCP server (firmware ≥ 1.6.6 announces `features.mcp`). */
export const DeviceMcpSchema = z.strictObject({
  /** Ask devices for their tools and offer them to the model. */
  enabled: z.boolean().default(true),
  /** Per request; the camera tool can take many seconds. */
  timeoutMs: z.number().int().positive().default(30_000),
  /**
   * A camera "explain" endpoint someone else hosts, advertised in initialize (http URL + token);
   * empty: none, or the server's own when `vision.enabled`. Set, it wins over the server's own.
   */
  vision: z.strictObject({ url: z.string().default(''), token: z.string().default('') }).prefault({}),
  /**
   * Bytes of one device's tool specs (names, descriptions, input schemas) offered in every model
   * request. Past it descriptions are cut to 200 characters, then tools dropped from the last.
   */
  maxSchemaBytes: z.number().int().min(1024).max(1_048_576).default(8192),
});

/** Reading audio that MCP tools link to (ResourceLink), in pages. */
export const MediaSchema = z.strictObject({
  /** Bytes per `resources/read` page (McpReadResourcePageSize). */
  pageSize: z
    .number()
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(100 * 1024),
  /** Per page, in ms. */
  pageTimeoutMs: z.number().int().positive().default(30_000),
  /** Wait before retrying a failed page, in ms. */
  retryDelayMs: z.number().int().min(0).default(1_000),
  /** Tries per page before playback fails with a spoken error. */
  maxTries: z.number().int().min(1).max(10).default(3),
});

export const LoggingSchema = z.strictObject({
  level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** Log transcripts and tool arguments (under `pii`); off by default. */
  logContent: z.boolean().default(false),
});

export function createConfigSchema<M extends z.ZodType>(mcpServersSchema: M) {
  return z
    .strictObject({
      /**
       * Switches together the default system prompt, spoken texts, ASR language hint and embedded
       * TTS voice (`zh`: Mandarin, espeak-ng `cmn-latn-pinyin`). Keys set explicitly still win.
       */
      language: z.enum(LANGUAGES).default('en'),
      server: ServerSchema.prefault({}),
      store: StoreSchema.prefault({}),
      audio: AudioSchema.prefault({}),
      vad: VadSchema.prefault({}),
      asr: AsrSchema.prefault({ provider: 'pocketsphinx' }),
      tts: TtsSchema.prefault({ provider: 'espeak' }),
      llm: LlmSchema.prefault({}),
      /**
       * How the default agent talks: `cascade` (asr → llm → tts) or `realtime` (the `realtime`
       * block's speech-to-speech model hears and answers; asr, llm and tts still speak apologies
       * and pushed messages). Agents that leave `pipeline` unset take this one.
       */
      pipeline: z.enum(PIPELINES).default('cascade'),
      /**
       * The default speech-to-speech model (`provider: openai-realtime`, see docs/agents.md): used
       * by the default agent when `pipeline` is `realtime`, and by agents whose realtime pipeline
       * has no block of its own. Unset: none.
       */
      realtime: RealtimeSchema.optional(),
      conversation: ConversationSchema.prefault({}),
      mcpServers: mcpServersSchema,
      tools: ToolsSchema.prefault({}),
      media: MediaSchema.prefault({}),
      deviceMcp: DeviceMcpSchema.prefault({}),
      memory: MemorySchema.prefault({}),
      logging: LoggingSchema.prefault({}),
      admin: AdminSchema.prefault({}),
      mcpEndpoint: McpEndpointSchema.prefault({}),
      mqtt: MqttSchema.prefault({}),
      push: PushSchema.prefault({}),
      reminders: RemindersSchema.prefault({}),
      vision: VisionSchema.prefault({}),
      /**
       * Agents: each device's assistant (prompt, language, voice, models, tools). Created in the
       * store at start when missing; what an agent leaves unset comes from this configuration.
       */
      agents: z.array(ConfigAgentSchema).max(1000).prefault([]),
      /** The agent a device without one uses; unset: the first of `agents`, or this configuration itself. */
      defaultAgent: AgentNameSchema.optional(),
    })
    .superRefine((cfg, ctx) => {
      const names = new Set<string>();
      // `mcpServers` is the generic M here: its keys are the server names.
      const servers = new Set(
        Object.keys((cfg as unknown as { mcpServers?: Record<string, unknown> }).mcpServers ?? {}),
      );
      const topMissing = realtimeBlockMissing(cfg, false);
      if (topMissing !== null) ctx.addIssue({ code: 'custom', path: ['realtime'], message: topMissing });
      cfg.agents.forEach((agent, i) => {
        const missing = realtimeBlockMissing(agent, cfg.realtime !== undefined);
        if (missing !== null)
          ctx.addIssue({
            code: 'custom',
            path: ['agents', i, 'realtime'],
            message: `agent '${agent.name}': ${missing}`,
          });
        if (names.has(agent.name))
          ctx.addIssue({
            code: 'custom',
            path: ['agents', i, 'name'],
            message: `agent '${agent.name}' is declared twice`,
          });
        names.add(agent.name);
        (agent.tools?.mcpServers ?? []).forEach((server, j) => {
          if (!servers.has(server)) {
            ctx.addIssue({
              code: 'custom',
              path: ['agents', i, 'tools', 'mcpServers', j],
              message: `agent '${agent.name}' names MCP server '${server}', which is not in mcpServers`,
            });
          }
        });
      });
      if (cfg.defaultAgent !== undefined && !names.has(cfg.defaultAgent)) {
        ctx.addIssue({
          code: 'custom',
          path: ['defaultAgent'],
          message: `'${cfg.defaultAgent}' is not one of the agents declared in agents:`,
        });
      }
    });
}
