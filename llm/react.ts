/**
 * @module The ReAct loop for one user turn: Think (stream the model's text and tool calls) → Act
 * (call every requested tool through the `ToolSource`, in parallel) → Observe (append the results)
 * → Think again, for at most `maxRounds` tool rounds; then one last call without tools so the model
 * answers with what it has. The loop knows only the `ToolSource` interface, never a concrete tool.
 *
 * Text is handed to `onText` as it streams (so TTS starts before the model finishes), with any
 * `<think>` block removed and a leading emotion cue (emoji or `[tag]`) turned into `onEmotion`.
 * Tool-level failures (unknown tool, malformed arguments, a throwing source, a timeout) become error
 * results the model sees; only model failures throw (as `VoiceError`). An abort ends the turn at
 * once with reason `aborted` (it does not throw): the stream's HTTP request is closed and pending
 * tool calls get the aborted signal.
 */
import { runScoped } from '../core/abort.ts';
import { ErrorCode, VoiceError, isAbortError, toVoiceError } from '../core/errors.ts';
import type { Emotion } from '../core/emotions.ts';
import type { Logger } from '../core/logger.ts';
import type { ToolResult, ToolSource, ToolSpec } from '../mcp/contract/tool-source.ts';
import { createEmotionExtractor } from './emotion.ts';
import type { History } from './history.ts';
import { createThinkFilter } from './think-filter.ts';
import { decideByFlags, type FlagEndReason, type RoundDecision, type ToolCallResult } from './round-decision.ts';
import { parseToolArguments, toolResultText } from './tool-results.ts';
import type { LlmClient, ToolCall } from './types.ts';

/** Tool calls run in one Act phase; more in one model answer get an error result instead. */
export const MAX_CALLS_PER_ROUND = 8;

/** Why a round of tool results stopped the loop: a result's flags, or media that played. */
export type DispatchStopReason = FlagEndReason | 'played_audio';

export interface ToolCallTiming {
  id: string;
  name: string;
  /** Wall time of the call, ms. */
  ms: number;
  isError: boolean;
}

export type ReactEndReason = 'answered' | 'tool_ended' | 'max_rounds' | 'aborted';

export interface ReactOutcome {
  reason: ReactEndReason;
  /** Set when `reason` is `tool_ended`. */
  stopReason?: DispatchStopReason;
  /** Model calls made. */
  rounds: number;
  /** Everything handed to `onText`, joined. */
  text: string;
  toolCalls: ToolCallTiming[];
  /** ms from the start of the turn to the first text handed to `onText`. */
  firstTokenMs?: number;
  /** ms from the start of the turn to the first event of the first model call. */
  firstEventMs?: number;
  totalMs: number;
  emotion?: Emotion;
  /** A tool result asked to close the session after this turn's audio (e.g. end of conversation). */
  endSession: boolean;
}

export interface ReactOptions {
  llm: LlmClient;
  tools: ToolSource;
  history: History;
  userText: string;
  /** Tool rounds allowed; after that one more model call without tools. 0 offers no tools. */
  maxRounds: number;
  signal: AbortSignal;
  log: Logger;
  /** Per tool call, ms. Default: none beyond the source's own. */
  toolTimeoutMs?: number;
  /** A tool result longer than this is cut before the model reads it. Default 8000. */
  maxToolResultChars?: number;
  onText: (delta: string) => void;
  onEmotion?: (emotion: Emotion) => void;
  onToolStart?: (call: ToolCall) => void;
  onToolResult?: (call: ToolCall, result: ToolResult, ms: number) => void;
  /**
   * Routes the results of one Act phase (plays their media) and returns what the round means for
   * the turn. Default: `decideByFlags`. The loop acts on the answer, whoever gave it: `observe`
   * thinks again; `end` speaks its text through `onText`, records it and stops; `played` records
   * what was said while playing and stops.
   */
  dispatch?: (results: ToolCallResult[]) => Promise<RoundDecision>;
  /**
   * Awaited before each Act phase: tools change the world, so a turn started before the end of
   * speech was confirmed calls none until it is (a rejection ends the loop as aborted).
   */
  beforeAct?: () => Promise<void>;
}

/** Runs one user turn. Throws only for model failures (`VoiceError`); aborts resolve with reason `aborted`. */
export async function runReact(opts: ReactOptions): Promise<ReactOutcome> {
  const { llm, tools, history, signal, log } = opts;
  const started = performance.now();
  const since = (): number => Math.round(performance.now() - started);
  const outcome: ReactOutcome = {
    reason: 'answered',
    rounds: 0,
    text: '',
    toolCalls: [],
    totalMs: 0,
    endSession: false,
  };
  // Text from a new round (or a tool's spoken result) must not run into the previous round's last
  // sentence ("Let me check.It is noon." would not be cut): a line break goes in between.
  let breakBeforeNext = false;
  const speak = (text: string): void => {
    if (text === '') return;
    if (breakBeforeNext) {
      breakBeforeNext = false;
      if (outcome.text !== '' && !/\s$/.test(outcome.text)) {
        outcome.text += '\n';
        opts.onText('\n');
      }
    }
    outcome.firstTokenMs ??= since();
    outcome.text += text;
    opts.onText(text);
  };
  const emotion = createEmotionExtractor((e) => {
    outcome.emotion ??= e;
    opts.onEmotion?.(e);
  });

  const finish = (reason: ReactEndReason, stopReason?: DispatchStopReason): ReactOutcome => {
    // Text held back while the emotion cue was undecided ("[hap" at the very end) is still spoken.
    if (reason !== 'aborted') speak(emotion.flush());
    outcome.reason = reason;
    if (stopReason) outcome.stopReason = stopReason;
    outcome.totalMs = since();
    log.info(
      {
        reason,
        stopReason,
        rounds: outcome.rounds,
        firstTokenMs: outcome.firstTokenMs,
        totalMs: outcome.totalMs,
        tools: outcome.toolCalls.map((t) => ({ name: t.name, ms: t.ms, isError: t.isError })),
      },
      'llm turn finished',
    );
    return outcome;
  };

  history.addUser(opts.userText);

  let specs: ToolSpec[] = [];
  if (opts.maxRounds > 0) {
    try {
      specs = await runScoped(signal, (s) => tools.listTools(s));
    } catch (err) {
      if (signal.aborted || isAbortError(err)) return finish('aborted');
      log.warn({ err: toVoiceError(err).message }, 'tool listing failed, answering without tools');
    }
  }
  const known = new Set(specs.map((s) => s.name));

  async function callOne(call: ToolCall): Promise<ToolCallResult> {
    opts.onToolStart?.(call);
    const t0 = performance.now();
    let result: ToolResult;
    const parsed = parseToolArguments(call.arguments);
    if (!known.has(call.name)) {
      result = errorFor(`Unknown tool "${call.name}". Available tools: ${[...known].join(', ') || 'none'}.`);
    } else if (!parsed.ok) {
      result = errorFor(
        `Invalid arguments for tool "${call.name}": ${parsed.error}. Call it again with a JSON object that matches its schema.`,
      );
    } else {
      try {
        const timeoutMs = opts.toolTimeoutMs;
        result =
          timeoutMs === undefined
            ? await tools.callTool(call.name, parsed.args, { signal })
            : // The scope makes the limit hold even for a source that ignores its signal.
              await runScoped(signal, (s) => tools.callTool(call.name, parsed.args, { signal: s, timeoutMs }), {
                timeoutMs,
                what: `tool ${call.name}`,
              });
      } catch (err) {
        if (signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
        const e = toVoiceError(err, ErrorCode.ToolFailed);
        result = errorFor(
          e.code === ErrorCode.Timeout ? `Tool "${call.name}" timed out.` : `Tool "${call.name}" failed: ${e.message}`,
        );
      }
    }
    const ms = Math.round(performance.now() - t0);
    outcome.toolCalls.push({ id: call.id, name: call.name, ms, isError: result.isError });
    if (result.action?.endSession) outcome.endSession = true;
    log.info({ tool: call.name, ms, isError: result.isError }, 'tool call finished');
    opts.onToolResult?.(call, result, ms);
    return { call, result };
  }

  for (let toolRounds = 0; ; ) {
    const offerTools = toolRounds < opts.maxRounds && specs.length > 0;
    outcome.rounds++;
    breakBeforeNext = true;
    const think = createThinkFilter();
    let roundText = '';
    let calls: ToolCall[] = [];
    const emit = (raw: string): void => {
      const clean = emotion.push(think.push(raw));
      roundText += clean;
      speak(clean);
    };
    try {
      for await (const ev of llm.stream({ messages: history.messages(), tools: offerTools ? specs : [], signal })) {
        outcome.firstEventMs ??= since();
        if (ev.type === 'text_delta') emit(ev.text);
        else if (ev.type === 'tool_calls') calls = ev.calls;
      }
      const rest = emotion.push(think.flush());
      roundText += rest;
      speak(rest);
    } catch (err) {
      if (roundText !== '') history.append({ role: 'assistant', content: roundText });
      if (signal.aborted || isAbortError(err)) return finish('aborted');
      throw toVoiceError(err, ErrorCode.ProviderFailed);
    }

    if (calls.length === 0 || !offerTools) {
      if (calls.length > 0)
        log.warn({ calls: calls.map((c) => c.name) }, 'model asked for tools after the last tool round; ignored');
      history.append({ role: 'assistant', content: roundText });
      return finish(toolRounds >= opts.maxRounds && toolRounds > 0 ? 'max_rounds' : 'answered');
    }

    // Act: every call at once; the turn's signal reaches each of them.
    toolRounds++;
    let results: ToolCallResult[];
    try {
      if (opts.beforeAct) await opts.beforeAct();
      // A model asking for dozens of calls at once would fan out without bound: the first few run,
      // the rest get an error result the model can read.
      results = await runScoped(signal, () =>
        Promise.all(
          calls.map((c, i) =>
            i < MAX_CALLS_PER_ROUND
              ? callOne(c)
              : Promise.resolve({
                  call: c,
                  result: errorFor(
                    `Not run: at most ${MAX_CALLS_PER_ROUND} tool calls per round. Call it again in the next round if it is still needed.`,
                  ),
                }),
          ),
        ),
      );
    } catch (err) {
      if (roundText !== '') history.append({ role: 'assistant', content: roundText });
      if (signal.aborted || isAbortError(err)) return finish('aborted');
      throw err;
    }

    // Observe: the call and its results enter history together.
    const maxChars = opts.maxToolResultChars ?? 8000;
    history.append(
      { role: 'assistant', content: roundText, toolCalls: calls },
      ...results.map((r) => ({
        role: 'tool' as const,
        toolCallId: r.call.id,
        content: toolResultText(r.result, maxChars),
      })),
    );

    let decision: RoundDecision;
    try {
      const dispatch = opts.dispatch;
      decision = dispatch ? await runScoped(signal, () => dispatch(results)) : decideByFlags(results);
    } catch (err) {
      if (signal.aborted || isAbortError(err)) return finish('aborted');
      log.warn({ err: toVoiceError(err).message }, 'tool result dispatch failed; continuing');
      decision = { next: 'observe' };
    }
    // The one place a round's decision is acted on: think again, or end the turn. What the turn
    // says at its end is spoken and recorded here, the same way on every path.
    if (decision.next === 'observe') continue;
    if (decision.next === 'played') {
      for (const said of decision.said) history.append({ role: 'assistant', content: said });
      return finish('tool_ended', 'played_audio');
    }
    if (decision.say !== '') {
      breakBeforeNext = true;
      speak(decision.say);
      history.append({ role: 'assistant', content: decision.say });
    }
    return finish('tool_ended', decision.reason);
  }
}

function errorFor(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
