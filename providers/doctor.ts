/**
 * @module Tells the user what to fix when a remote provider cannot work: the LLM (or an
 * OpenAI-compatible ASR/TTS) is unreachable, refuses the key, or lacks the model. One `GET
 * /models` per provider (no tokens spent) classifies it; the start-up log gets one line per problem
 * naming the config keys and environment variables to set, and `/readyz` shows the same fix
 * (config key names only: no URL, host or remote error text) for the browser page's banner.
 */
import type { Logger } from '../core/logger.ts';
import { redactUrl, redactUrlsInText } from '../core/redact-url.ts';
import { asrProvider, ttsProvider, type AsrOptions, type TtsOptions } from './index.ts';
import type { OpenAiLlmOptions } from './openai/options.ts';

/** What the doctor checks: the configuration's model blocks (the server's `Config` is one). */
export interface ProviderBlocks {
  llm: Pick<OpenAiLlmOptions, 'baseURL' | 'apiKey' | 'model'>;
  asr: AsrOptions;
  tts: TtsOptions;
}

export type ProviderPart = 'llm' | 'asr' | 'tts';
export type ProviderProblemKind = 'unreachable' | 'key_refused' | 'model_missing' | 'voice_missing';

/**
 * A provider's own start-up check, for a vendor with no `/models` to ask (a WebSocket API): it
 * reaches the vendor with the configured key and voice the cheapest way the vendor allows (no
 * text sent, nothing billed), within `timeoutMs`, and says what is wrong, or null.
 */
export type ProviderProbe = (timeoutMs: number) => Promise<{ problem: ProviderProblemKind; detail: string } | null>;

/** What `/readyz` shows publicly: which part, what is wrong, and what to set. */
export interface ProviderProblem {
  component: ProviderPart;
  problem: ProviderProblemKind;
  fix: string;
}

interface Target {
  part: ProviderPart;
  baseURL: string;
  apiKey: string;
  /** The provider's own check instead of `GET /models`. */
  probe?: ProviderProbe;
  /** Checked against the `/models` list; absent: the list is not checked (transcription/speech models are often unlisted). */
  model?: string;
}

/** What to set, per part and problem. Names config keys and env variables only. */
export function fixFor(part: ProviderPart, problem: ProviderProblemKind): string {
  if (part === 'llm') {
    if (problem === 'unreachable') {
      return 'No LLM answers at llm.baseURL. Start one (Ollama: `ollama serve` and `ollama pull qwen2.5:3b`; LM Studio or a llama.cpp server also work), or point llm.baseURL (env OPENAI_BASE_URL), llm.apiKey (env OPENAI_API_KEY) and llm.model (env LLM_MODEL) at an OpenAI-compatible service.';
    }
    if (problem === 'key_refused')
      return 'The LLM refused the API key: set llm.apiKey (env OPENAI_API_KEY) to a valid key for llm.baseURL (env OPENAI_BASE_URL).';
    return 'The LLM does not have the model named in llm.model: pull it (Ollama: `ollama pull <model>`) or set llm.model (env LLM_MODEL) to a model the service lists.';
  }
  const label = part === 'asr' ? 'speech recognition (ASR)' : 'speech synthesis (TTS)';
  if (problem === 'unreachable')
    return `The remote ${label} does not answer at ${part}.baseURL (${part}.url for a WebSocket vendor): start it, fix that URL, or set ${part}.provider to the embedded one (${part === 'asr' ? 'pocketsphinx' : 'espeak'}).`;
  if (problem === 'key_refused')
    return `The remote ${label} refused the API key: set ${part}.apiKey (or the vendor's own credential keys in the ${part} block).`;
  if (problem === 'voice_missing')
    return `The remote ${label} does not have the voice named in ${part}.voice for its ${part}.model or resource: set ${part}.voice.`;
  return `The remote ${label} does not have the model named in ${part}.model: set ${part}.model.`;
}

function targets(config: ProviderBlocks): Target[] {
  const out: Target[] = [
    { part: 'llm', baseURL: config.llm.baseURL, apiKey: config.llm.apiKey, model: config.llm.model },
  ];
  const asr = asrProvider(config.asr).endpoint(config.asr);
  const ttsEntry = ttsProvider(config.tts);
  const tts = ttsEntry.endpoint(config.tts);
  if (asr) out.push({ part: 'asr', ...asr });
  if (tts) out.push({ part: 'tts', ...tts });
  else if (ttsEntry.probe) {
    const probe = ttsEntry.probe;
    const url = 'url' in config.tts && typeof config.tts.url === 'string' ? config.tts.url : '';
    out.push({ part: 'tts', baseURL: url, apiKey: '', probe: (timeoutMs) => probe(config.tts, timeoutMs) });
  }
  return out;
}

/**
 * How long a provider's own check is trusted. It opens a vendor session (no text, nothing billed,
 * but an open connection counts against a vendor's concurrency): `/readyz` polled every few
 * seconds must not open one each time.
 */
const PROBE_CACHE_MS = 300_000;
/**
 * How long a problem a provider's check found is kept: much shorter, so a vendor that was down
 * for a moment at start-up stops showing in `/readyz` soon after it is back.
 */
const PROBE_PROBLEM_CACHE_MS = 30_000;

/** Largest `/models` answer read; a bigger one is not a model list we can judge. */
const MAX_LIST_BYTES = 1024 * 1024;

/**
 * `GET <baseURL>/models`: the path is appended before any query, and `user:pass@` in the URL
 * (which fetch refuses to send) becomes Basic authorization when no API key is set.
 */
function modelsRequest(t: Target): { url: URL; headers: Record<string, string> } {
  const url = new URL(t.baseURL);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/models`;
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  if (t.apiKey) return { url, headers: { authorization: `Bearer ${t.apiKey}` } };
  if (user || pass)
    return { url, headers: { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` } };
  return { url, headers: {} };
}

/** Classifies one provider; null when nothing is known to be wrong (including answers we cannot judge). */
async function diagnose(
  t: Target,
  timeoutMs: number,
): Promise<{ problem: ProviderProblemKind; detail: string } | null> {
  if (t.probe)
    return t.probe(timeoutMs).catch((err: unknown) => ({ problem: 'unreachable' as const, detail: String(err) }));
  let res: Response;
  try {
    const { url, headers } = modelsRequest(t);
    res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    const cause =
      err instanceof Error && err.cause instanceof Error
        ? err.cause.message
        : err instanceof Error
          ? err.message
          : String(err);
    return { problem: 'unreachable', detail: cause };
  }
  try {
    if (res.status === 401 || res.status === 403) return { problem: 'key_refused', detail: `HTTP ${res.status}` };
    if (!res.ok || t.model === undefined) return null;
    const text = await res.text();
    if (text.length > MAX_LIST_BYTES) return null;
    const body = JSON.parse(text) as { data?: Array<{ id?: unknown }> };
    if (!Array.isArray(body.data)) return null;
    const ids = body.data.map((m) => String(m.id));
    // Ollama lists `name:tag`; a model given without a tag means `:latest`.
    const wanted = [t.model, t.model.includes(':') ? t.model : `${t.model}:latest`];
    return ids.some((id) => wanted.includes(id))
      ? null
      : { problem: 'model_missing', detail: `not among ${ids.length} listed models` };
  } catch {
    return null;
  } finally {
    await res.body?.cancel().catch(() => undefined);
  }
}

export interface ProviderDoctor {
  /** Current problems (cached for `cacheMs`; concurrent callers share one run). */
  problems(): Promise<ProviderProblem[]>;
  /** Runs the checks once and logs one error line per problem, naming what to set. */
  reportAtStartup(log: Logger): Promise<ProviderProblem[]>;
}

export interface ProviderDoctorOptions {
  /** Per request, ms. Default 3 000. */
  timeoutMs?: number;
  /** How long a result is reused, ms. Default 10 000. */
  cacheMs?: number;
  /** How long a provider's own check that found nothing wrong is reused, ms. Default 300 000. */
  probeCacheMs?: number;
  /** How long a provider's own check that found a problem is reused, ms. Default 30 000. */
  probeProblemCacheMs?: number;
}

/**
 * A provider's own check, reused for `okMs` when it found nothing wrong and for `problemMs` when it
 * found a problem; concurrent callers share one run.
 */
function cachedProbe(probe: ProviderProbe, okMs: number, problemMs: number): ProviderProbe {
  let last: { at: number; result: Awaited<ReturnType<ProviderProbe>> } | undefined;
  let running: ReturnType<ProviderProbe> | undefined;
  return (timeoutMs) => {
    if (last && Date.now() - last.at < (last.result === null ? okMs : problemMs)) return Promise.resolve(last.result);
    running ??= probe(timeoutMs)
      .then((result) => {
        last = { at: Date.now(), result };
        return result;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}

export function createProviderDoctor(config: ProviderBlocks, opts: ProviderDoctorOptions = {}): ProviderDoctor {
  const okMs = opts.probeCacheMs ?? PROBE_CACHE_MS;
  const problemMs = opts.probeProblemCacheMs ?? PROBE_PROBLEM_CACHE_MS;
  const list = targets(config).map((t) => (t.probe ? { ...t, probe: cachedProbe(t.probe, okMs, problemMs) } : t));
  const timeoutMs = opts.timeoutMs ?? 3_000;
  const cacheMs = opts.cacheMs ?? 10_000;
  let cached: { at: number; found: Array<{ t: Target; problem: ProviderProblemKind; detail: string }> } | undefined;
  let running: Promise<NonNullable<typeof cached>> | undefined;
  const run = (): Promise<NonNullable<typeof cached>> => {
    if (cached && Date.now() - cached.at < cacheMs) return Promise.resolve(cached);
    running ??= Promise.all(list.map(async (t) => ({ t, r: await diagnose(t, timeoutMs) })))
      .then((rs) => {
        cached = { at: Date.now(), found: rs.flatMap(({ t, r }) => (r ? [{ t, ...r }] : [])) };
        return cached;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const pub = (f: { t: Target; problem: ProviderProblemKind }): ProviderProblem => ({
    component: f.t.part,
    problem: f.problem,
    fix: fixFor(f.t.part, f.problem),
  });
  return {
    problems: async () => (await run()).found.map(pub),
    reportAtStartup: async (log) => {
      const { found } = await run();
      for (const f of found) {
        // The log is the operator's: it may name the URL (without its credentials) and the model; the fix text names the keys.
        log.error(
          {
            component: f.t.part,
            problem: f.problem,
            baseURL: redactUrl(f.t.baseURL),
            ...(f.t.model ? { model: f.t.model } : {}),
            detail: redactUrlsInText(f.detail),
          },
          fixFor(f.t.part, f.problem),
        );
      }
      return found.map(pub);
    },
  };
}
