/**
 * @module What a tool that runs in this process is: its name, description, schema and handler.
 * Apart from `local-tools.ts` (which serves them as a ToolSource) so that the tools themselves,
 * in `local-tools/`, import a contract beside them and not the folder above.
 */
import type { Logger } from '../../core/logger.ts';
import type { JsonSchema, ToolResult } from './tool-source.ts';

export interface LocalToolContext {
  signal: AbortSignal;
  log: Logger;
}

export interface LocalTool {
  /** Must be a valid OpenAI function name: letters, digits, `_` and `-`, at most 64. */
  name: string;
  /** Read at each listing: a getter may describe something current (the device's local time). */
  description: string;
  inputSchema: JsonSchema;
  handler(args: Record<string, unknown>, ctx: LocalToolContext): Promise<ToolResult>;
}
