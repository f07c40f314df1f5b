/**
 * @module What a failed MCP request means. `rpc` (a JSON-RPC error), `timeout` and `malformed` (a
 * reply that failed the result schema) concern that one request: the link still works. `closed`
 * (the SDK saw the connection close) and `transport` (fetch failed, EPIPE, …) mean it does not;
 * only `transport` needs the caller to drop the client and reconnect (on `closed` the SDK's
 * onclose already started that).
 */
import { ErrorCode as McpErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

export type McpFailure = 'rpc' | 'timeout' | 'malformed' | 'closed' | 'transport';

export function classifyFailure(err: unknown): McpFailure {
  if (err instanceof McpError) {
    if (err.code === McpErrorCode.RequestTimeout) return 'timeout';
    return err.code === McpErrorCode.ConnectionClosed ? 'closed' : 'rpc';
  }
  if (isSchemaError(err)) return 'malformed';
  return 'transport';
}

/** The SDK validates results with zod's core parser, whose errors are not our zod's ZodError class. */
function isSchemaError(err: unknown): err is { issues: Array<{ path: PropertyKey[]; message: string }> } {
  return (
    err instanceof Error &&
    (err.name === 'ZodError' || err.name === '$ZodError') &&
    Array.isArray((err as { issues?: unknown }).issues)
  );
}

/** The first schema issues of a malformed reply, short enough for a log line or the model. */
export function malformedSummary(err: unknown): string {
  if (!isSchemaError(err)) return errMessage(err);
  return err.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : 'result'}: ${i.message}`)
    .join('; ');
}

export function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
