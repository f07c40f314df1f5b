/**
 * @module The functions a realtime model asked for in one response, called through the session's
 * tools as the cascade's ReAct loop calls them: arguments parsed (bad JSON is an error result the
 * model reads, not a failure of the turn), each call bounded by the tool timeout, a failing or
 * timed-out tool an error result. What the results mean for the turn is the dispatcher's (or the
 * flags') decision, taken by the caller.
 */
import { runScoped } from '../../core/abort.ts';
import { ErrorCode, toVoiceError, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { ToolCallResult } from '../../llm/round-decision.ts';
import { parseToolArguments } from '../../llm/tool-results.ts';
import type { ToolResult, ToolSource } from '../../mcp/contract/tool-source.ts';

export interface FunctionCall {
  callId: string;
  name: string;
  /** The model's raw JSON text. */
  arguments: string;
}

export interface FunctionCallOptions {
  tools: ToolSource;
  signal: AbortSignal;
  log: Logger;
  timeoutMs?: number;
  onResult?: (name: string, result: ToolResult, ms: number) => void;
}

function errorResult(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** Calls `calls` one after another, in the model's order. Throws only when `signal` aborts. */
export async function callFunctions(calls: readonly FunctionCall[], o: FunctionCallOptions): Promise<ToolCallResult[]> {
  const results: ToolCallResult[] = [];
  for (const call of calls) {
    if (o.signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: o.signal.reason });
    const t0 = performance.now();
    const parsed = parseToolArguments(call.arguments);
    let result: ToolResult;
    if (!parsed.ok) {
      o.log.warn({ tool: call.name, err: parsed.error }, 'realtime function call with bad arguments');
      result = errorResult(
        `Invalid arguments for tool "${call.name}": ${parsed.error}. Call it again with a JSON object that matches its schema.`,
      );
    } else {
      o.log.info({ tool: call.name, pii: { args: call.arguments } }, 'tool call');
      try {
        const timeoutMs = o.timeoutMs;
        result =
          timeoutMs === undefined
            ? await o.tools.callTool(call.name, parsed.args, { signal: o.signal })
            : await runScoped(o.signal, (s) => o.tools.callTool(call.name, parsed.args, { signal: s, timeoutMs }), {
                timeoutMs,
                what: `tool ${call.name}`,
              });
      } catch (err) {
        if (o.signal.aborted) throw new VoiceError(ErrorCode.Aborted, 'aborted', { cause: err });
        const e = toVoiceError(err, ErrorCode.ToolFailed);
        result = errorResult(
          e.code === ErrorCode.Timeout ? `Tool "${call.name}" timed out.` : `Tool "${call.name}" failed: ${e.message}`,
        );
      }
    }
    const ms = performance.now() - t0;
    o.onResult?.(call.name, result, ms);
    results.push({ call: { id: call.callId, name: call.name, arguments: call.arguments }, result });
  }
  return results;
}
