/**
 * Options of the fleet simulator and their command-line form (`npm run simulate -- --help`).
 */
import { parse as parseYaml } from 'yaml';
import { setPath } from '../../../server/config.ts';
import {
  LATENCY_FLAGS,
  PROFILE_NAMES,
  PROFILES,
  effectiveLatency,
  parseLatencyValue,
  type ProfileName,
  type ProviderLatency,
} from './provider-profiles.ts';

export type SimTransport = 'websocket' | 'mqtt';

export interface SimulationOptions {
  /** Steps: each runs this many devices at once (fresh connections). Empty: no turn steps. */
  devices: number[];
  /** How the devices reach the server: WebSocket, or the firmware's MQTT (control) + UDP (audio). */
  transport: SimTransport;
  /** Spoken turns per device per step. */
  turns: number;
  /** ws:// URL of a running server; unset: the simulator starts its own (child process + fakes). */
  url?: string;
  /** OTA URL for `url` (default: http(s)://<same host>/xiaozhi/ota/). */
  otaUrl?: string;
  /** POST OTA before connecting (as the firmware does at boot). */
  ota: boolean;
  /** Token when OTA is skipped or hands out none. */
  token?: string;
  /** Every other turn (alternating across devices) sends `abort` mid-answer. */
  bargeIn: boolean;
  /** Frames of the answer to wait for before the barge-in abort. */
  bargeInAfterFrames: number;
  /** Idle devices for the memory measurement; 0: none. */
  idle: number;
  /** How long the idle devices stay connected after the measurement (e.g. for a heap snapshot); 0: not at all. */
  idleHoldMs: number;
  /** Write the raw results here. */
  jsonFile?: string;
  /** What each device says (synthesized with flite). */
  utterance: string;
  /** What the fake ASR answers (self-started server only). */
  transcript: string;
  /** What the fake LLM streams (self-started server only). */
  answer: string;
  /** The latency profile the fakes' figures came from (self-started server only). */
  profile: ProfileName;
  /** How slowly the fakes answer, and which TTS the server uses (self-started server only). */
  providers: ProviderLatency;
  /** First utterances of a step start within this many ms of each other (random). */
  staggerMs: number;
  /** Quiet time after a step once the server has no sessions left. */
  settleMs: number;
  /** Devices connected at once. */
  batch: number;
  /** Pause between connect batches. */
  batchPauseMs: number;
  /** One unreported turn first (loads espeak-ng, the codecs, JIT). */
  warmup: boolean;
  sttTimeoutMs: number;
  answerTimeoutMs: number;
  connectTimeoutMs: number;
  /** How long a device retries upgrades refused with 503 (after each Retry-After). */
  connectRetryMs: number;
  /** The whole run stops after this long. */
  maxRunMs: number;
  /** Config overrides for the self-started server (nested object). */
  serverConfig: Record<string, unknown>;
  /** Extra environment for the self-started server. */
  serverEnv: Record<string, string>;
  /** Extra node arguments for the self-started server (e.g. --cpu-prof). */
  serverArgs: string[];
  /**
   * The node binary that runs the self-started server; unset: the simulator's own (under
   * `npm run` that is the project's, node_modules/.bin/node). Another lets one compare Node versions on the same code.
   */
  serverNode?: string;
  /** File that receives the self-started server's whole output (its JSON log, --trace-gc lines …). */
  serverLog?: string;
  /** vad.minSilenceMs of a server given by `url`, for the report (the simulator cannot read it). */
  vadSilenceMs?: number;
  /** Stops the run early (SIGINT). */
  signal?: AbortSignal;
  /** Where report lines go. */
  print: (line: string) => void;
}

export function defaultOptions(): SimulationOptions {
  return {
    devices: [],
    transport: 'websocket',
    turns: 2,
    ota: true,
    bargeIn: false,
    bargeInAfterFrames: 8,
    idle: 0,
    idleHoldMs: 0,
    utterance: 'what is the weather like today',
    transcript: 'what is the weather like today',
    answer: 'It is sunny today. The high is twenty two degrees. Enjoy your day!',
    profile: 'instant',
    providers: { ...PROFILES.instant },
    staggerMs: 100,
    settleMs: 1500,
    batch: 100,
    batchPauseMs: 1000,
    warmup: true,
    sttTimeoutMs: 15_000,
    answerTimeoutMs: 60_000,
    connectTimeoutMs: 20_000,
    connectRetryMs: 60_000,
    maxRunMs: 30 * 60_000,
    serverConfig: {},
    serverEnv: {},
    serverArgs: [],
    print: (line) => console.log(line),
  };
}

export const USAGE = `Fleet simulator: many xiaozhi devices talking to the server at once.

  npm run simulate -- --devices 1,10,25 --turns 2
  npm run simulate -- --idle 1000
  npm run simulate -- --transport mqtt --devices 1,50 --idle 5000
  npm run simulate -- --devices 10 --url ws://127.0.0.1:8000/xiaozhi/v1/
  npm run simulate -- --devices 1,10 --profile cloud --llm-ttft-ms 300
  npm run simulate -- --devices 1,10 --profile cloud --tts streaming
  npm run simulate -- --devices 1,10 --profile cloud --pipeline realtime

Options
  --devices N[,N...]   steps: N devices at once each (fresh connections); default 1 unless --idle
  --transport T        websocket (default) or mqtt: MQTT control + UDP audio, as the firmware when
                       OTA offers mqtt (the self-started server turns its broker on)
  --turns K            spoken turns per device per step (default 2)
  --barge-in           every other turn sends abort mid-answer, then listen start
  --idle N             N devices connect (OTA + hello; over mqtt OTA + broker only) and stay silent:
                       server RSS per device
  --idle-hold-s N      keep the idle devices connected N s after measuring (e.g. to take a heap snapshot)
  --url WS_URL         use a running server instead of starting one (probes via its /metrics)
  --ota-url URL        OTA endpoint for --url (default http://<same host>/xiaozhi/ota/)
  --no-ota             skip the OTA POST (connect to the WebSocket URL directly)
  --token T            bearer token when OTA hands out none
  --vad-silence-ms N   vad.minSilenceMs of the --url server, for the report
  --json FILE          write the raw results (every turn) as JSON
  --utterance TEXT     what each device says (flite speech); default "what is the weather like today"
  --answer TEXT        what the fake LLM streams (self-started server)

Provider latency (self-started server only; --profile sets every figure, a flag overrides one)
  --profile P          instant (default: fakes answer at once, embedded espeak-ng TTS), cloud or
                       local-gpu (docs/simulate.md has the figures and their sources)
  --asr batch|streaming  the recogniser fake: batch /v1/audio/transcriptions, or a streaming FunASR stand-in
  --asr-ms N           batch ASR: ms from the upload to the transcript
  --asr-per-audio X    batch ASR: extra time per time of audio (0.05 = 50 ms per second)
  --asr-final-ms N     streaming ASR: final transcript N ms after the end of the audio (--asr streaming)
  --llm-ttft-ms N      LLM: ms from the request to the first token
  --llm-tokens-per-s X LLM: tokens a second after the first (a token = 4 characters); 0 = at once
  --tts T              embedded (the server's espeak-ng), remote (a fake /v1/audio/speech, one request
                       per sentence) or streaming (a Volcengine bidirectional stand-in, text pushed
                       as the model writes it)
  --tts-first-audio-ms N  remote TTS: ms from the request to the first audio
  --tts-speed X        remote and streaming TTS: the rest of the audio at X times real time; 0 = at once
  --tts-stream-first-audio-ms N  streaming TTS: a sentence's first audio N ms after its text is complete
  --pipeline P         cascade (ASR → LLM → TTS, the fakes above) or realtime (the agent talks through a
                       speech-to-speech model: the OpenAI Realtime stand-in)
  --realtime-first-audio-ms N  realtime: the model's first audio N ms after the turn is committed
  --set KEY=VALUE      config override for the self-started server, e.g. --set vad.provider=webrtc
  --server-env K=V     extra environment for the self-started server
  --server-arg ARG     extra node argument for the self-started server, e.g. --server-arg=--cpu-prof
  --server-node PATH   node binary for the self-started server (default: the simulator's own)
  --server-log FILE    write the self-started server's whole output to FILE (e.g. with --server-arg=--trace-gc)
  --stagger-ms N       first utterances start within N ms of each other (default 100)
  --settle-ms N        quiet time between steps (default 1500)
  --batch N            devices connected at once (default 100)
  --batch-pause-ms N   pause between connect batches (default 1000)
  --no-warmup          skip the unreported warm-up turn
  --max-minutes N      stop the whole run after N minutes (default 30)
`;

function positiveInt(flag: string, v: string | undefined, min = 1): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} needs an integer >= ${min}, got ${JSON.stringify(v)}`);
  return n;
}

/** Parses the command line; throws with a readable message on anything unknown. */
export function parseArgs(argv: readonly string[]): SimulationOptions | 'help' {
  const o = defaultOptions();
  let devicesGiven = false;
  /** Latency flags given explicitly: they win over --profile wherever it stands on the line. */
  const latency: Partial<ProviderLatency> = {};
  const latencyFlags: string[] = [];
  const args = [...argv];
  for (let i = 0; i < args.length; i++) {
    // --flag=value is the same as --flag value; a value itself is never split, so
    // `--server-arg --max-semi-space-size=64` passes the node flag whole.
    const raw = args[i] as string;
    const eq = raw.startsWith('--') ? raw.indexOf('=') : -1;
    const flag = eq > 0 ? raw.slice(0, eq) : raw;
    let inline = eq > 0 ? raw.slice(eq + 1) : undefined;
    const value = (): string => {
      if (inline !== undefined) {
        const v = inline;
        inline = undefined;
        return v;
      }
      const v = args[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--help':
      case '-h':
        return 'help';
      case '--devices':
        o.devices = value()
          .split(',')
          .map((s) => positiveInt('--devices', s.trim()));
        devicesGiven = true;
        break;
      case '--transport': {
        const t = value();
        if (t === 'ws' || t === 'websocket') o.transport = 'websocket';
        else if (t === 'mqtt') o.transport = 'mqtt';
        else throw new Error(`--transport is websocket or mqtt, got ${JSON.stringify(t)}`);
        break;
      }
      case '--turns':
        o.turns = positiveInt(flag, value());
        break;
      case '--barge-in':
        o.bargeIn = true;
        break;
      case '--idle':
        o.idle = positiveInt(flag, value());
        break;
      case '--idle-hold-s':
        o.idleHoldMs = positiveInt(flag, value(), 0) * 1000;
        break;
      case '--url':
        o.url = value();
        if (!/^wss?:\/\//.test(o.url)) throw new Error('--url must be a ws:// or wss:// URL');
        break;
      case '--ota-url':
        o.otaUrl = value();
        break;
      case '--no-ota':
        o.ota = false;
        break;
      case '--token':
        o.token = value();
        break;
      case '--vad-silence-ms':
        o.vadSilenceMs = positiveInt(flag, value());
        break;
      case '--json':
        o.jsonFile = value();
        break;
      case '--utterance':
        o.utterance = value();
        break;
      case '--answer':
        o.answer = value();
        break;
      case '--set': {
        const kv = value();
        const at = kv.indexOf('=');
        if (at <= 0) throw new Error('--set needs KEY=VALUE, e.g. --set vad.provider=webrtc');
        setPath(o.serverConfig, kv.slice(0, at).split('.'), parseYaml(kv.slice(at + 1)) as unknown);
        break;
      }
      case '--server-env': {
        const kv = value();
        const at = kv.indexOf('=');
        if (at <= 0) throw new Error('--server-env needs K=V');
        o.serverEnv[kv.slice(0, at)] = kv.slice(at + 1);
        break;
      }
      case '--server-arg':
        o.serverArgs.push(value());
        break;
      case '--server-node':
        o.serverNode = value();
        break;
      case '--server-log':
        o.serverLog = value();
        break;
      case '--stagger-ms':
        o.staggerMs = positiveInt(flag, value(), 0);
        break;
      case '--settle-ms':
        o.settleMs = positiveInt(flag, value(), 0);
        break;
      case '--batch':
        o.batch = positiveInt(flag, value());
        break;
      case '--batch-pause-ms':
        o.batchPauseMs = positiveInt(flag, value(), 0);
        break;
      case '--no-warmup':
        o.warmup = false;
        break;
      case '--max-minutes':
        o.maxRunMs = positiveInt(flag, value()) * 60_000;
        break;
      case '--profile': {
        const p = value();
        if (!(PROFILE_NAMES as readonly string[]).includes(p))
          throw new Error(`--profile is ${PROFILE_NAMES.join(', ')}; got ${JSON.stringify(p)}`);
        o.profile = p as ProfileName;
        latencyFlags.push(flag);
        break;
      }
      case '--asr': {
        const a = value();
        if (a !== 'batch' && a !== 'streaming')
          throw new Error(`--asr is batch or streaming; got ${JSON.stringify(a)}`);
        latency.asr = a;
        latencyFlags.push(flag);
        break;
      }
      case '--pipeline': {
        const v = value();
        if (v !== 'cascade' && v !== 'realtime')
          throw new Error(`--pipeline is cascade or realtime; got ${JSON.stringify(v)}`);
        latency.pipeline = v;
        latencyFlags.push(flag);
        break;
      }
      case '--tts': {
        const t = value();
        if (t !== 'embedded' && t !== 'remote' && t !== 'streaming')
          throw new Error(`--tts is embedded, remote or streaming, got ${JSON.stringify(t)}`);
        latency.tts = t;
        latencyFlags.push(flag);
        break;
      }
      default: {
        if (flag in LATENCY_FLAGS) {
          const { key, value: n } = parseLatencyValue(flag, value());
          latency[key] = n;
          latencyFlags.push(flag);
          break;
        }
        throw new Error(`unknown argument ${flag} (see --help)`);
      }
    }
    if (inline !== undefined) throw new Error(`${flag} takes no value`);
  }
  if (!devicesGiven && o.idle === 0) o.devices = [1];
  if (o.url && latencyFlags.length > 0)
    throw new Error(
      `${latencyFlags[0]} sets the simulator's own fakes; a server given by --url uses its own providers`,
    );
  o.providers = effectiveLatency(o.profile, latency);
  if (o.url && o.serverNode) throw new Error('--server-node is for the self-started server: drop it with --url');
  if (o.transport === 'mqtt' && !o.ota)
    throw new Error('--transport mqtt needs OTA (the broker credentials come from it): drop --no-ota');
  return o;
}
