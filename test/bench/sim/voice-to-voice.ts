/**
 * @module Voice-to-voice: what the user feels, from the end of their voice (the last voiced sample
 * of the utterance the device sent) to the first answer frame the device receives, and the
 * stages inside it from the server's `turn timings` log lines, each as a time after that end of
 * voice. The server's stages count from its own end-of-speech decision; the decision's time on
 * the simulator's clock (`endedAt`, sim/server.ts) ties the two together.
 */
import type { TurnRecord } from './device.ts';
import type { AsrWork } from './lean-fakes.ts';
import type { ServerTurnTiming } from './server.ts';
import { firstSentenceStreamMs, ttsWaitStreamMs, type ProviderLatency } from './provider-profiles.ts';
import { p50p95, type P50P95 } from './stats.ts';

/** The stages of one turn, ms after the end of the user's voice (absent: not known for that turn). */
export interface VoiceTurn {
  device: number;
  deviceId: string;
  turn: number;
  /** End of voice → first answer frame at the device. */
  voiceToVoiceMs: number;
  /** The server's end-of-turn decision (device clock vs the log's time, to about 1 ms). */
  endOfTurnMs?: number;
  /** The silence the server heard before deciding (its log's optional `endOfTurnMs`). */
  heardSilenceMs?: number;
  finalTranscriptMs?: number;
  /** The log's `firstTokenMs` when present; else transcript + the model's request → first token, never after the first sentence. */
  firstTokenMs?: number;
  firstSentenceMs?: number;
  /** The TTS's first audio byte (only from the log's optional `ttsFirstAudioMs`). */
  firstAudioByteMs?: number;
  firstFrameOutMs?: number;
  /**
   * The first frame at the device after the model's first token, this turn's own
   * (`voiceToVoiceMs − firstTokenMs`): what the speech path adds once the model has begun.
   */
  firstFrameAfterFirstTokenMs?: number;
  /** The first frame at the device after the voice's (or realtime model's) first audio byte reached the server, this turn's own. */
  firstFrameAfterFirstAudioMs?: number;
}

export const STAGES = [
  ['endOfTurnMs', 'end-of-turn decision'],
  ['finalTranscriptMs', 'final transcript'],
  ['firstTokenMs', 'first token'],
  ['firstSentenceMs', 'first sentence to TTS'],
  ['firstAudioByteMs', 'first audio byte (TTS)'],
  ['firstFrameOutMs', 'first frame out (server)'],
  ['voiceToVoiceMs', 'first frame at the device'],
] as const;
export type StageKey = (typeof STAGES)[number][0];

/**
 * The server's turn for one device turn: the log line of the same device whose end-of-speech
 * decision lies between the turn's first packet and its first answer frame (the last such, should
 * an early start have been dropped and begun again).
 */
export function matchServerTurn(
  rec: TurnRecord,
  timings: ReadonlyArray<ServerTurnTiming>,
): ServerTurnTiming | undefined {
  if (rec.speechStartAt === undefined || rec.firstFrameAt === undefined) return undefined;
  let best: ServerTurnTiming | undefined;
  for (const t of timings) {
    if (t.deviceId !== rec.deviceId || t.source !== 'voice' || t.endedAt === undefined) continue;
    if (t.endedAt < rec.speechStartAt || t.endedAt > rec.firstFrameAt) continue;
    if (!best || (best.endedAt as number) < t.endedAt) best = t;
  }
  return best;
}

/** One turn's stages; null when the device has no end of voice or no first frame for it. */
export function voiceTurn(rec: TurnRecord, t: ServerTurnTiming | undefined): VoiceTurn | null {
  if (rec.voiceEndAt === undefined || rec.firstFrameAt === undefined) return null;
  const out: VoiceTurn = {
    device: rec.device,
    deviceId: rec.deviceId,
    turn: rec.turn,
    voiceToVoiceMs: rec.firstFrameAt - rec.voiceEndAt,
  };
  if (!t || t.endedAt === undefined) return out;
  const decision = t.endedAt - rec.voiceEndAt;
  const after = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : decision + ms);
  out.endOfTurnMs = decision;
  if (t.endOfTurnMs !== undefined) out.heardSilenceMs = t.endOfTurnMs;
  const set = <K extends keyof VoiceTurn>(k: K, v: VoiceTurn[K] | undefined): void => {
    if (v !== undefined) out[k] = v;
  };
  set('finalTranscriptMs', after(t.asrMs));
  set('firstSentenceMs', after(t.firstSentenceMs));
  set('firstAudioByteMs', after(t.ttsFirstAudioMs));
  set('firstFrameOutMs', after(t.firstAudioMs));
  if (t.firstTokenMs !== undefined) out.firstTokenMs = decision + t.firstTokenMs;
  else if (t.asrMs !== undefined && t.llmFirstTokenMs !== undefined)
    // The request goes out with the transcript; the first token comes before the first sentence is cut.
    out.firstTokenMs = decision + Math.min(t.asrMs + t.llmFirstTokenMs, t.firstSentenceMs ?? Number.POSITIVE_INFINITY);
  if (out.firstTokenMs !== undefined) out.firstFrameAfterFirstTokenMs = out.voiceToVoiceMs - out.firstTokenMs;
  if (out.firstAudioByteMs !== undefined) out.firstFrameAfterFirstAudioMs = out.voiceToVoiceMs - out.firstAudioByteMs;
  return out;
}

/** What the fakes were configured to spend on the path to the first frame, ms (see `providerDelay`). */
export interface ProviderDelay {
  /** `per-sentence`: the TTS gets the server's cut sentences (embedded, remote); `streaming`: the text as it is written. */
  path: 'per-sentence' | 'streaming' | 'realtime';
  /** The fake ASR's mean delay over the step's uploads (null: not known). */
  asrMs: number | null;
  /** The mean length of those uploads, ms of audio. */
  asrAudioMs: number | null;
  llmFirstTokenMs: number;
  /**
   * The fake LLM's pacing from its first token until the TTS has the text it needs: the server's
   * first sentence on the per-sentence path, the stand-in's first sentence on the streaming one.
   */
  firstSentenceStreamMs: number;
  /** The TTS fake's first audio once it has that text (0 with the embedded TTS). */
  ttsFirstAudioMs: number;
  totalMs: number | null;
}

/**
 * The delays the fakes were set to put on the path from the end of the user's voice to the first
 * frame, added up as issue 43 counts them: the ASR's (its mean over the step's uploads), the
 * model's first token, its pacing until the TTS has the text it needs, the TTS's first audio.
 * Per sentence that text is the server's first sentence; streaming, it is the stand-in's first
 * sentence (`ttsWaitStreamMs` says what is assumed), so neither path is charged the other's wait.
 */
export function providerDelay(p: ProviderLatency, answer: string, asr: AsrWork | null): ProviderDelay {
  // A speech-to-speech model's one delay: its first audio after the commit (counted as the TTS's).
  if (p.pipeline === 'realtime')
    return {
      path: 'realtime',
      asrMs: 0,
      asrAudioMs: null,
      llmFirstTokenMs: 0,
      firstSentenceStreamMs: 0,
      ttsFirstAudioMs: p.realtimeFirstAudioMs,
      totalMs: p.realtimeFirstAudioMs,
    };
  // A streaming recogniser's only delay on the path is its final after the end of the audio.
  const asrMs = p.asr === 'streaming' ? p.asrFinalMs : asr && asr.requests > 0 ? asr.delayMs / asr.requests : null;
  const streaming = p.tts === 'streaming';
  // Streaming: the first audio comes ttsStreamFirstAudioMs after the first text, or when the
  // stand-in's first sentence is whole if that is later: only the excess is the text's wait.
  const textMs = streaming
    ? Math.max(0, ttsWaitStreamMs(answer, p) - p.ttsStreamFirstAudioMs)
    : firstSentenceStreamMs(answer, p);
  const ttsMs = streaming ? p.ttsStreamFirstAudioMs : p.tts === 'remote' ? p.ttsFirstAudioMs : 0;
  return {
    path: streaming ? 'streaming' : 'per-sentence',
    asrMs,
    asrAudioMs: asr && asr.requests > 0 ? asr.audioMs / asr.requests : null,
    llmFirstTokenMs: p.llmTtftMs,
    firstSentenceStreamMs: textMs,
    ttsFirstAudioMs: ttsMs,
    totalMs: asrMs === null ? null : asrMs + p.llmTtftMs + textMs + ttsMs,
  };
}

export interface VoiceToVoice {
  turns: number;
  /** Stage → p50/p95 over the turns that have it. */
  stages: Record<StageKey, P50P95>;
  heardSilenceMs: P50P95;
  /** The first frame at the device after the model's first token: p50/p95 of the turns' own differences. */
  firstFrameAfterFirstTokenMs: P50P95;
  /** The first frame at the device after the first audio byte reached the server: p50/p95 of the turns' own differences. */
  firstFrameAfterFirstAudioMs: P50P95;
  providerDelay: ProviderDelay | null;
  /** Voice-to-voice p50 less the providers' configured delays: the part that is ours. */
  oursP50Ms: number | null;
  perTurn: VoiceTurn[];
}

export function summarizeVoiceToVoice(perTurn: VoiceTurn[], providerDelay: ProviderDelay | null): VoiceToVoice {
  const stages = {} as Record<StageKey, P50P95>;
  for (const [k] of STAGES) stages[k] = p50p95(perTurn.flatMap((t) => (t[k] === undefined ? [] : [t[k] as number])));
  const total = providerDelay?.totalMs ?? null;
  return {
    turns: perTurn.length,
    stages,
    heardSilenceMs: p50p95(perTurn.flatMap((t) => (t.heardSilenceMs === undefined ? [] : [t.heardSilenceMs]))),
    // Per turn, then the percentiles: a difference of two percentiles would pair different turns.
    firstFrameAfterFirstTokenMs: p50p95(
      perTurn.flatMap((t) => (t.firstFrameAfterFirstTokenMs === undefined ? [] : [t.firstFrameAfterFirstTokenMs])),
    ),
    firstFrameAfterFirstAudioMs: p50p95(
      perTurn.flatMap((t) => (t.firstFrameAfterFirstAudioMs === undefined ? [] : [t.firstFrameAfterFirstAudioMs])),
    ),
    providerDelay,
    oursP50Ms: total === null || stages.voiceToVoiceMs.n === 0 ? null : stages.voiceToVoiceMs.p50 - total,
    perTurn,
  };
}
