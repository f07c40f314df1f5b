/**
 * @module What each voice turn reports when it ends (voice/'s `TurnObserver`): how it started and
 * ended, its stage latencies, the downlink's late frames and intervals, its tool calls by source
 * server; and turns started early or refused.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { TurnObserver, TurnTimings } from '../../voice/conversation/voice-deps.ts';
import { seconds } from './sources.ts';
import { toolServer } from './tool-server.ts';

/** Stage latencies of a voice turn, in seconds: 50 ms (fast local steps) to 10 s (slow cloud). */
export const STAGE_BUCKETS_S = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10] as const;
/** Whole turns include speaking the answer, so they run longer. */
export const TURN_BUCKETS_S = [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120] as const;

/**
 * Registers the turn metrics. `mcpNames`: the configured MCP servers, the only values the tool
 * `server` label takes besides local, device and unknown.
 */
export function turnMetrics(registers: Registry[], mcpNames: ReadonlySet<string>): Required<TurnObserver> {
  const turns = new Counter({
    name: 'xiaozhi_turns_total',
    help: "Conversation turns by how they started (voice, text, wake_word, or notice: a message of the server's own) and how they ended.",
    labelNames: ['source', 'outcome'] as const,
    registers,
  });
  const turnsRefused = new Counter({
    name: 'xiaozhi_turns_refused_total',
    help: 'Turns a device asked for (typed text, wake word, speech) and did not get: its session had started conversation.maxTurnsPerMinute turns in the last minute.',
    registers,
  });
  const stage = (name: string, help: string): Histogram =>
    new Histogram({ name, help, buckets: [...STAGE_BUCKETS_S], registers });
  const asr = stage('xiaozhi_asr_duration_seconds', 'Speech recognition: end of speech to recognised text.');
  const llmFirst = stage('xiaozhi_llm_first_token_seconds', 'LLM request to its first streamed token.');
  const firstSentence = stage(
    'xiaozhi_first_sentence_seconds',
    "End of speech (server decision) to the answer's first sentence, ready to be spoken.",
  );
  const firstAudio = stage(
    'xiaozhi_first_audio_seconds',
    'End of speech (server decision) to the first audio frame sent to the device.',
  );
  const turnTotal = new Histogram({
    name: 'xiaozhi_turn_duration_seconds',
    help: 'Whole turns, from their start to the last frame or their end.',
    buckets: [...TURN_BUCKETS_S],
    registers,
  });
  const earlyStarts = new Counter({
    name: 'xiaozhi_early_starts_total',
    help: 'Turns started before their transcript was final: at a pause (vad.earlyStartMs), or from a streaming partial at the end of the utterance; used, or dropped because the user spoke on or the final transcript said other words (their LLM request, a batch ASR request and the first sentence of a remote TTS were wasted).',
    labelNames: ['result'] as const,
    registers,
  });
  const lateFrames = new Counter({
    name: 'xiaozhi_late_frames_total',
    help: 'Downlink audio frames sent after their play-out time (the device may have stuttered).',
    registers,
  });
  const frameIntervals = new Counter({
    name: 'xiaozhi_downlink_intervals_total',
    help: 'Intervals between two downlink audio frames sent within a turn.',
    registers,
  });
  const lateIntervals = new Counter({
    name: 'xiaozhi_downlink_late_intervals_total',
    help: 'Of those, intervals over 65 ms (60 ms frames): the late-frame rate the Java xiaozhi server publishes, as sent by this server.',
    registers,
  });
  const toolCalls = new Counter({
    name: 'xiaozhi_tool_calls_total',
    help: 'Tool calls by source server (MCP server name, local, device) and outcome.',
    labelNames: ['server', 'outcome'] as const,
    registers,
  });
  const toolDuration = new Histogram({
    name: 'xiaozhi_tool_call_duration_seconds',
    help: 'Tool call latency by source server.',
    labelNames: ['server'] as const,
    buckets: [...STAGE_BUCKETS_S],
    registers,
  });

  const onTurn = (t: TurnTimings): void => {
    turns.inc({ source: t.source, outcome: t.outcome });
    if (t.asrMs !== undefined) asr.observe(seconds(t.asrMs));
    if (t.llmFirstTokenMs !== undefined) llmFirst.observe(seconds(t.llmFirstTokenMs));
    if (t.firstSentenceMs !== undefined) firstSentence.observe(seconds(t.firstSentenceMs));
    if (t.firstAudioMs !== undefined) firstAudio.observe(seconds(t.firstAudioMs));
    turnTotal.observe(seconds(t.totalMs));
    if (t.lateFrames > 0) lateFrames.inc(t.lateFrames);
    if (t.frameIntervals > 0) frameIntervals.inc(t.frameIntervals);
    if (t.lateIntervals > 0) lateIntervals.inc(t.lateIntervals);
    for (const call of t.tools) {
      const server = toolServer(call.name, mcpNames);
      toolCalls.inc({ server, outcome: call.isError ? 'error' : 'ok' });
      toolDuration.observe({ server }, seconds(call.ms));
    }
  };
  return { onTurn, onEarlyStart: (result) => earlyStarts.inc({ result }), onTurnRefused: () => turnsRefused.inc() };
}
