/**
 * @module How slow the simulator's fake providers are: named profiles (`--profile
 * instant|cloud|local-gpu`) and the flags that override one figure each. The fakes
 * (lean-fakes.ts) wait these delays; the report subtracts them to show the part of the
 * voice-to-voice time that is the server's own. docs/simulate.md says where the figures come from.
 */
import { VOLCENGINE_SENTENCE_END } from '../../fixtures/fake-volcengine-tts.ts';

export type ProfileName = 'instant' | 'cloud' | 'local-gpu';
export const PROFILE_NAMES: readonly ProfileName[] = ['instant', 'cloud', 'local-gpu'];

/**
 * The fakes' latencies. `asr` and `tts` choose which fake the server talks to; the numbers say how
 * slowly it answers. The streaming stand-ins are one more value each: `asr: streaming` (with
 * `asrFinalMs`) and `tts: streaming` (with `ttsStreamFirstAudioMs`).
 */
export interface ProviderLatency {
  /**
   * `batch`: the OpenAI-compatible `/v1/audio/transcriptions` fake. `streaming`: the FunASR
   * runtime stand-in (test/fixtures/fake-funasr.ts), partials while the device speaks and the
   * final `asrFinalMs` after the end of the audio.
   */
  asr: 'batch' | 'streaming';
  /** Batch ASR: fixed time from the whole upload to the transcript, ms. */
  asrMs: number;
  /** Batch ASR: extra time per time of audio uploaded (0.05: 50 ms per second of audio). */
  asrPerAudio: number;
  /** Streaming ASR: the final transcript this long after the end of the audio (with `asr: streaming`). */
  asrFinalMs: number;
  /** LLM: request → first token, ms. */
  llmTtftMs: number;
  /** LLM: tokens a second after the first (a token is 4 characters of the answer); 0 = the rest at once. */
  llmTokensPerS: number;
  /**
   * `embedded`: the server's own espeak-ng (no fake); `remote`: the fake OpenAI-compatible
   * `/v1/audio/speech` (the per-sentence path); `streaming`: the Volcengine bidirectional stand-in
   * (test/fixtures/fake-volcengine-tts.ts), the model's text pushed to it as it is written.
   */
  tts: 'embedded' | 'remote' | 'streaming';
  /** Remote TTS: request → first audio byte, ms. */
  ttsFirstAudioMs: number;
  /** Remote and streaming TTS: the audio after the first chunk comes this many times faster than real time; 0 = at once. */
  ttsSpeed: number;
  /** Streaming TTS: a sentence's first audio this long after its text is complete (see `ttsWaitStreamMs`). */
  ttsStreamFirstAudioMs: number;
  /**
   * `cascade`: ASR → LLM → TTS (the fakes above). `realtime`: the agent talks through a
   * speech-to-speech model, the OpenAI Realtime stand-in (test/fixtures/fake-realtime-model.ts);
   * the ASR, LLM and TTS figures then do not apply.
   */
  pipeline: 'cascade' | 'realtime';
  /** Realtime: the model's first audio this long after the turn's audio is committed (its `response.create`), ms. */
  realtimeFirstAudioMs: number;
}

/** Characters of the answer per streamed token (also the fake LLM's piece size). */
export const CHARS_PER_TOKEN = 4;

export const PROFILES: Readonly<Record<ProfileName, Readonly<ProviderLatency>>> = {
  // What the simulator always did: every fake answers at once, the server speaks with espeak-ng.
  instant: {
    asr: 'batch',
    asrMs: 0,
    asrPerAudio: 0,
    asrFinalMs: 0,
    llmTtftMs: 0,
    llmTokensPerS: 0,
    tts: 'embedded',
    ttsFirstAudioMs: 0,
    ttsSpeed: 0,
    ttsStreamFirstAudioMs: 0,
    pipeline: 'cascade',
    realtimeFirstAudioMs: 0,
  },
  // Issue 43's cloud figures; TTS audio after the first chunk at twice real time (docs/simulate.md).
  cloud: {
    asr: 'batch',
    asrMs: 350,
    asrPerAudio: 0.05,
    asrFinalMs: 80,
    llmTtftMs: 450,
    llmTokensPerS: 40,
    tts: 'remote',
    ttsFirstAudioMs: 250,
    ttsSpeed: 2,
    ttsStreamFirstAudioMs: 150,
    pipeline: 'cascade',
    // Issue 45's figure for a cloud speech-to-speech model's first audio after the commit.
    realtimeFirstAudioMs: 300,
  },
  // A self-hosted GPU stack (faster-whisper / FunASR, a 7–8B 4-bit model, CosyVoice 2):
  // the sources are in docs/simulate.md#provider-latency-profiles.
  'local-gpu': {
    asr: 'batch',
    asrMs: 150,
    asrPerAudio: 0.03,
    asrFinalMs: 100,
    llmTtftMs: 150,
    llmTokensPerS: 100,
    tts: 'remote',
    ttsFirstAudioMs: 200,
    ttsSpeed: 2.5,
    ttsStreamFirstAudioMs: 150,
    pipeline: 'cascade',
    realtimeFirstAudioMs: 300,
  },
};

/** One numeric flag: its field and the range it accepts. */
interface NumericFlag {
  key: Exclude<keyof ProviderLatency, 'asr' | 'tts' | 'pipeline'>;
  max: number;
  integer: boolean;
}

/** The flags that set one figure each (`--profile` sets them all). Upper bounds keep a typo from stalling a run. */
export const LATENCY_FLAGS: Readonly<Record<string, NumericFlag>> = {
  '--asr-ms': { key: 'asrMs', max: 60_000, integer: true },
  '--asr-per-audio': { key: 'asrPerAudio', max: 10, integer: false },
  '--asr-final-ms': { key: 'asrFinalMs', max: 60_000, integer: true },
  '--llm-ttft-ms': { key: 'llmTtftMs', max: 60_000, integer: true },
  '--llm-tokens-per-s': { key: 'llmTokensPerS', max: 10_000, integer: false },
  '--tts-first-audio-ms': { key: 'ttsFirstAudioMs', max: 60_000, integer: true },
  '--tts-speed': { key: 'ttsSpeed', max: 100, integer: false },
  '--tts-stream-first-audio-ms': { key: 'ttsStreamFirstAudioMs', max: 60_000, integer: true },
  '--realtime-first-audio-ms': { key: 'realtimeFirstAudioMs', max: 60_000, integer: true },
};

/** The TTS fakes a figure means something for, and the words a refusal names them with. */
const TTS_ONLY: Partial<Record<keyof ProviderLatency, { tts: ReadonlyArray<ProviderLatency['tts']>; fake: string }>> = {
  ttsFirstAudioMs: { tts: ['remote'], fake: 'the remote TTS fake' },
  ttsSpeed: { tts: ['remote', 'streaming'], fake: 'the remote and streaming TTS fakes' },
  ttsStreamFirstAudioMs: { tts: ['streaming'], fake: 'the streaming TTS fake' },
};

const TTS_IN_USE: Readonly<Record<ProviderLatency['tts'], string>> = {
  embedded: 'speaks with the embedded espeak-ng',
  remote: 'speaks through the remote (per-sentence) TTS fake',
  streaming: 'speaks through the streaming TTS fake',
};

/** Parses one latency flag's value; throws a readable error when it is out of range. */
export function parseLatencyValue(flag: string, raw: string): { key: NumericFlag['key']; value: number } {
  const spec = LATENCY_FLAGS[flag];
  if (!spec) throw new Error(`unknown latency flag ${flag}`);
  const n = Number(raw);
  const ok =
    raw.trim() !== '' && Number.isFinite(n) && n >= 0 && n <= spec.max && (!spec.integer || Number.isInteger(n));
  if (!ok)
    throw new Error(
      `${flag} needs ${spec.integer ? 'an integer' : 'a number'} from 0 to ${spec.max}, got ${JSON.stringify(raw)}`,
    );
  return { key: spec.key, value: n };
}

/**
 * The figures of a run: the profile's, then every explicit flag over them (whatever the order on
 * the command line). A TTS figure given for a TTS the run does not use would be ignored silently,
 * so it is refused instead (the profile's own figures for the other TTS are no flags: kept).
 */
export function effectiveLatency(profile: ProfileName, overrides: Partial<ProviderLatency>): ProviderLatency {
  const out: ProviderLatency = { ...PROFILES[profile], ...overrides };
  if ('realtimeFirstAudioMs' in overrides && out.pipeline !== 'realtime')
    throw new Error('--realtime-first-audio-ms only applies to the realtime stand-in: add --pipeline realtime');
  for (const [flag, spec] of Object.entries(LATENCY_FLAGS)) {
    const only = TTS_ONLY[spec.key];
    if (!only || !(spec.key in overrides) || only.tts.includes(out.tts)) continue;
    throw new Error(
      `${flag} only applies to ${only.fake}, and this run ${TTS_IN_USE[out.tts]}: add --tts ${only.tts.join(' or --tts ')}`,
    );
  }
  return out;
}

/** True when every fake answers at once (today's lean path, no pacing at all). */
export function isInstant(p: ProviderLatency): boolean {
  if (p.pipeline === 'realtime') return p.realtimeFirstAudioMs === 0;
  return (
    p.asrMs === 0 &&
    p.asrPerAudio === 0 &&
    p.llmTtftMs === 0 &&
    p.llmTokensPerS === 0 &&
    (p.tts === 'embedded' ||
      (p.ttsSpeed === 0 && (p.tts === 'remote' ? p.ttsFirstAudioMs : p.ttsStreamFirstAudioMs) === 0))
  );
}

/** The fake LLM's pacing time until the first sentence of `answer` is complete, after its first token. */
export function firstSentenceStreamMs(answer: string, p: ProviderLatency): number {
  if (p.llmTokensPerS <= 0) return 0;
  // The sentence is cut once its end mark and the character after it have arrived.
  const end = answer.search(/[.!?。！？]/u);
  const chars = end < 0 ? answer.length : Math.min(answer.length, end + 2);
  const tokens = Math.max(1, Math.ceil(chars / CHARS_PER_TOKEN));
  return ((tokens - 1) / p.llmTokensPerS) * 1000;
}

/** The fake LLM's pacing from its first token until `answer` holds a match of `end` (all of it when none). */
function pacingUntil(answer: string, end: RegExp, p: ProviderLatency): number {
  if (p.llmTokensPerS <= 0) return 0;
  const pieces = Math.max(1, Math.ceil(answer.length / CHARS_PER_TOKEN));
  let tokens = pieces;
  // The text so far is tested after each piece, as a receiver that cuts on arrival does.
  for (let k = 1; k <= pieces; k++) {
    if (end.test(answer.slice(0, k * CHARS_PER_TOKEN))) {
      tokens = k;
      break;
    }
  }
  return ((tokens - 1) / p.llmTokensPerS) * 1000;
}

/**
 * The fake LLM's pacing, after its first token, until the streaming TTS stand-in has its first
 * sentence whole. Assumed here (and true of the stand-in, test/fixtures/fake-volcengine-tts.ts, as
 * the simulator starts it, `firstAudioFrom: 'first-text'`): the server pushes the model's text as
 * it is written, with no cut of its own in between; the stand-in groups it into sentences at its
 * own marks (`VOLCENGINE_SENTENCE_END`), and its first audio comes `ttsStreamFirstAudioMs` after
 * the first text, or when that first sentence is complete if later. `providerDelay` counts the
 * part of this wait beyond `ttsStreamFirstAudioMs`.
 */
export function ttsWaitStreamMs(answer: string, p: ProviderLatency): number {
  return pacingUntil(answer, VOLCENGINE_SENTENCE_END, p);
}

/** The printed form of the effective figures (one line per provider). */
export function describeLatency(profile: ProfileName, p: ProviderLatency): string[] {
  const per = p.asrPerAudio > 0 ? ` + ${p.asrPerAudio} × audio length` : '';
  const tokens =
    p.llmTokensPerS > 0
      ? `then ${p.llmTokensPerS} tokens/s (a token = ${CHARS_PER_TOKEN} characters)`
      : 'then the rest at once';
  const rest = p.ttsSpeed > 0 ? `${p.ttsSpeed}× real time` : 'the rest at once';
  const tts =
    p.tts === 'embedded'
      ? "the server's embedded espeak-ng (no fake)"
      : p.tts === 'remote'
        ? `the fake OpenAI-compatible /v1/audio/speech, one request per sentence (pcm, 24 kHz): first audio after ${p.ttsFirstAudioMs} ms, then ${rest}`
        : `streaming, the Volcengine bidirectional stand-in (text pushed as the model writes it; pcm, 24 kHz, a tone per sentence): first audio ${p.ttsStreamFirstAudioMs} ms after its first text (or when its first sentence is complete at the stand-in's marks, if later), then ${rest}`;
  const asr =
    p.asr === 'streaming'
      ? `ASR streaming (the FunASR stand-in): the final transcript ${p.asrFinalMs} ms after the last audio`
      : `ASR batch: ${p.asrMs} ms${per} after the upload`;
  if (p.pipeline === 'realtime')
    return [
      `providers (--profile ${profile}, flags override):`,
      `  realtime: the OpenAI Realtime stand-in (speech-to-speech; our VAD commits the turn): first audio ${p.realtimeFirstAudioMs} ms after the commit, espeak-ng speech at 24 kHz, 4× real time`,
    ];
  return [
    `providers (--profile ${profile}, flags override):`,
    `  ${asr}`,
    `  LLM: first token after ${p.llmTtftMs} ms, ${tokens}`,
    `  TTS: ${tts}`,
  ];
}
