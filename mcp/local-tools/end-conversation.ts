/**
 * @module Built-in tool: end the conversation. The result carries the goodbye to speak and the
 * flags that stop the turn without another model round and close the session once it has played.
 */
import type { LocalTool } from '../contract/local-tool.ts';
import { textResult } from '../contract/tool-source.ts';

export interface EndConversationToolOptions {
  /** Spoken when the model gives no farewell of its own. Default "Goodbye!". */
  goodbye?: string;
  /** Tool name; default `end_conversation`. */
  name?: string;
}

export function endConversationTool(opts: EndConversationToolOptions = {}): LocalTool {
  const fallback = opts.goodbye ?? 'Goodbye!';
  return {
    name: opts.name ?? 'end_conversation',
    description:
      "End the conversation when the user says goodbye or asks to stop talking. Pass a short farewell in the user's language; it is spoken, then the device goes to sleep.",
    inputSchema: {
      type: 'object',
      properties: {
        farewell: { type: 'string', description: 'A short goodbye to say, in the language of the conversation.' },
      },
    },
    async handler(args) {
      const said = typeof args.farewell === 'string' && args.farewell.trim() !== '' ? args.farewell.trim() : fallback;
      return textResult(said, { final: true, noFurtherResponse: true, endSession: true });
    },
  };
}
