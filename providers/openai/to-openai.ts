/**
 * @module Converts our `ChatMessage` and `ToolSpec` shapes to the chat-completions request's
 * `messages` and `tools`. The only place that knows that wire shape, so history and the loop stay
 * free of it.
 */
import type { ChatCompletionFunctionTool, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ToolSpec } from '../../mcp/contract/tool-source.ts';
import type { ChatMessage } from '../../llm/types.ts';

/** Our messages → the wire's; an assistant message with tool calls keeps them as `function` calls. */
export function toOpenAiMessages(messages: readonly ChatMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m): ChatCompletionMessageParam => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content };
      case 'user':
        return { role: 'user', content: m.content };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
      case 'assistant':
        if (m.toolCalls && m.toolCalls.length > 0) {
          return {
            role: 'assistant',
            // Some servers reject an empty string next to tool_calls; null is what OpenAI itself returns.
            content: m.content === '' ? null : m.content,
            tool_calls: m.toolCalls.map((c) => ({
              id: c.id,
              type: 'function',
              function: { name: c.name, arguments: c.arguments },
            })),
          };
        }
        return { role: 'assistant', content: m.content };
    }
  });
}

/** Our tool specs → `tools` entries. A schema without `type` gets `type: object` (OpenAI requires it). */
export function toOpenAiTools(tools: readonly ToolSpec[]): ChatCompletionFunctionTool[] {
  return tools.map((t) => {
    const parameters = { ...t.inputSchema, type: t.inputSchema.type ?? 'object' };
    if (parameters.type === 'object' && parameters.properties === undefined) parameters.properties = {};
    return {
      type: 'function',
      function:
        t.description === undefined
          ? { name: t.name, parameters }
          : { name: t.name, description: t.description, parameters },
    };
  });
}
