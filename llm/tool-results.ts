/**
 * @module Observe-side helpers: parsing the model's tool arguments and turning a `ToolResult` into
 * the text the model reads back. The model cannot hear or see, so non-text content is described
 * in words.
 */
import type { ToolContent, ToolResult } from '../mcp/contract/tool-source.ts';

export type ParsedArguments = { ok: true; args: Record<string, unknown> } | { ok: false; error: string };

/** Parses the model's argument JSON. Empty means `{}`; a JSON string holding an object (double encoding) is unwrapped. */
export function parseToolArguments(raw: string): ParsedArguments {
  if (raw.trim() === '') return { ok: true, args: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
    if (typeof value === 'string' && value.trim().startsWith('{')) value = JSON.parse(value);
  } catch (err) {
    return { ok: false, error: `arguments are not valid JSON (${(err as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: 'arguments must be a JSON object' };
  }
  return { ok: true, args: value as Record<string, unknown> };
}

function describe(c: ToolContent): string {
  switch (c.type) {
    case 'text':
      return c.text;
    case 'audio':
      return `[audio content (${c.mimeType}, about ${Math.round((c.data.length * 3) / 4 / 1024)} KB)]`;
    case 'image':
      return `[image (${c.mimeType})]`;
    case 'resource_link': {
      // The URI is what the model passes to a `resources_read` tool (a link is a stub the model
      // reads on demand), so it is always shown, with the label when there is one.
      const label = c.title ?? c.name;
      const named = label && label !== c.uri ? ` "${label}"` : '';
      return `[resource link${named}: ${c.uri}${c.mimeType ? ` (${c.mimeType})` : ''}${c.description ? ` – ${c.description}` : ''}]`;
    }
    case 'resource':
      if (c.resource.text !== undefined) return c.resource.text;
      return `[binary resource ${c.resource.uri}${c.resource.mimeType ? ` (${c.resource.mimeType})` : ''}]`;
  }
}

/**
 * The tool message content for a result: text blocks joined by newlines, other blocks described,
 * `structuredContent` as JSON when there is no text, an `Error:` prefix for error results, cut to
 * `maxChars` (a tool may return far more than a voice answer needs).
 */
export function toolResultText(result: ToolResult, maxChars = 8000): string {
  let text = result.content
    .map(describe)
    .filter((s) => s !== '')
    .join('\n');
  if (text === '' && result.structuredContent) text = JSON.stringify(result.structuredContent);
  if (text === '') text = result.isError ? 'the tool failed without a message' : '(no output)';
  if (result.isError) text = `Error: ${text}`;
  if (text.length > maxChars)
    text = `${text.slice(0, maxChars)}\n[truncated: ${text.length - maxChars} more characters]`;
  return text;
}

/** The text blocks of a result joined, for speaking as is (no descriptions of other content). */
export function spokenResultText(result: ToolResult): string {
  return result.content
    .flatMap((c) =>
      c.type === 'text' ? [c.text] : c.type === 'resource' && c.resource.text !== undefined ? [c.resource.text] : [],
    )
    .join('\n')
    .trim();
}
