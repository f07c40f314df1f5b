/**
 * @module Turns whatever an MCP server (or the device) returned for `tools/call` into the project's
 * `ToolResult`. Lenient on purpose: the SDK's own schema throws on one unknown block and loses the
 * whole result, so here an unknown or malformed block becomes a short text note instead.
 */
import type { ToolContent, ToolResult } from './contract/tool-source.ts';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function note(text: string): ToolContent {
  return { type: 'text', text };
}

/** Copies the optional string/number fields of a resource link that are present and well typed. */
function linkFields(b: Record<string, unknown>, uri: string): ToolContent {
  const out: ToolContent = { type: 'resource_link', uri };
  for (const k of ['name', 'title', 'description', 'mimeType'] as const) {
    const v = str(b[k]);
    if (v !== undefined) out[k] = v;
  }
  if (typeof b.size === 'number' && Number.isFinite(b.size)) out.size = b.size;
  return out;
}

/** Normalizes one content block; never throws. */
export function normalizeContentBlock(block: unknown): ToolContent {
  if (typeof block === 'string') return note(block);
  if (!isRecord(block)) return note('[malformed content block omitted]');
  const type = str(block.type);
  switch (type) {
    case 'text':
      return note(typeof block.text === 'string' ? block.text : JSON.stringify(block.text ?? ''));
    case 'image':
    case 'audio': {
      let data = str(block.data);
      let mimeType = str(block.mimeType);
      // xiaozhi firmware nests a stringified {"type":"image","mimeType","data"} under `image`.
      if (data === undefined && typeof block.image === 'string') {
        try {
          const inner: unknown = JSON.parse(block.image);
          if (isRecord(inner)) {
            data = str(inner.data);
            mimeType = mimeType ?? str(inner.mimeType);
          }
        } catch {
          // fall through to the malformed note
        }
      }
      if (data === undefined) return note(`[malformed ${type} block omitted]`);
      return { type, data, mimeType: mimeType ?? (type === 'image' ? 'image/png' : 'audio/wav') };
    }
    case 'resource_link': {
      const uri = str(block.uri);
      return uri === undefined ? note('[resource link without uri omitted]') : linkFields(block, uri);
    }
    case 'resource': {
      const r = block.resource;
      if (!isRecord(r) || str(r.uri) === undefined) return note('[embedded resource without uri omitted]');
      const resource: { uri: string; mimeType?: string; text?: string; blob?: string } = { uri: r.uri as string };
      const mimeType = str(r.mimeType);
      if (mimeType !== undefined) resource.mimeType = mimeType;
      if (typeof r.text === 'string') resource.text = r.text;
      else if (typeof r.blob === 'string') resource.blob = r.blob;
      else return note(`[embedded resource ${resource.uri} without text or blob omitted]`);
      return { type: 'resource', resource };
    }
    default:
      return note(`[unsupported content block type "${type ?? 'unknown'}" omitted]`);
  }
}

/**
 * Normalizes a raw `tools/call` result. `structuredContent` passes through; when a result has it
 * but no text block, its JSON is added as text so a model that reads only text still sees it.
 */
export function normalizeToolResult(raw: unknown): ToolResult {
  if (!isRecord(raw)) return { content: [note('[malformed tool result]')], isError: true };
  if (raw.content !== undefined && !Array.isArray(raw.content)) {
    // Not a list of blocks: say so (an error the model can read) rather than "no output".
    return {
      content: [note(`[malformed tool result: "content" is a ${typeof raw.content}, not a list of content blocks]`)],
      isError: true,
    };
  }
  const blocks = Array.isArray(raw.content) ? raw.content : [];
  const content = blocks.map(normalizeContentBlock);
  const result: ToolResult = { content, isError: raw.isError === true };
  if (isRecord(raw.structuredContent)) {
    result.structuredContent = raw.structuredContent;
    if (!content.some((c) => c.type === 'text')) content.push(note(JSON.stringify(raw.structuredContent)));
  }
  // 2024-10-07 servers answer `{ toolResult }` instead of content blocks.
  if (blocks.length === 0 && 'toolResult' in raw && raw.toolResult !== undefined && content.length === 0) {
    content.push(note(typeof raw.toolResult === 'string' ? raw.toolResult : JSON.stringify(raw.toolResult)));
  }
  return result;
}

/** Collects the URIs a result links or embeds (for the per-session resources_read allowlist). */
export function linkedUris(result: ToolResult): string[] {
  const out: string[] = [];
  for (const c of result.content) {
    if (c.type === 'resource_link') out.push(c.uri);
    else if (c.type === 'resource') out.push(c.resource.uri);
  }
  return out;
}
