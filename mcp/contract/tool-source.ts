/**
 * @module The tool and resource contracts. The ReAct loop (llm/) depends only on `ToolSource`;
 * local tools, MCP servers and the device's own MCP tools all implement it, and a composite joins
 * them per session. Tool results are MCP content blocks normalized into `ToolContent`.
 */

/** A JSON Schema object as MCP and OpenAI carry it (kept structural: we pass it through). */
export type JsonSchema = { type?: string; properties?: Record<string, unknown>; required?: string[] } & Record<
  string,
  unknown
>;

/** A tool as the LLM sees it. `name` is already safe for OpenAI function names. */
export interface ToolSpec {
  name: string;
  description?: string;
  inputSchema: JsonSchema;
}

export interface TextContent {
  type: 'text';
  text: string;
}

export interface AudioContent {
  type: 'audio';
  /** base64 */
  data: string;
  mimeType: string;
}

export interface ImageContent {
  type: 'image';
  /** base64 */
  data: string;
  mimeType: string;
}

/** A resource as `resources/list` describes it. */
export interface ResourceInfo {
  uri: string;
  name?: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
}

/** A link to a resource in a tool result: the same fields as a listed resource. */
export interface ResourceLinkContent extends ResourceInfo {
  type: 'resource_link';
}

/** An embedded resource: exactly one of `text` or `blob` (base64) is set. */
export interface EmbeddedResourceContent {
  type: 'resource';
  resource: { uri: string; mimeType?: string; text?: string; blob?: string };
}

export type ToolContent = TextContent | AudioContent | ImageContent | ResourceLinkContent | EmbeddedResourceContent;

/**
 * Flags a local tool may set to decide what happens after its result:
 * - `final`: this result ends the turn after it is delivered (e.g. goodbye, music).
 * - `noFurtherResponse`: no further LLM round; whatever text the result carries is spoken as is.
 * - `silenceLLM`: no further LLM round and nothing spoken from the result.
 * - `endSession`: close the session once the turn's audio has been played.
 */
export interface ToolAction {
  final?: boolean;
  noFurtherResponse?: boolean;
  silenceLLM?: boolean;
  endSession?: boolean;
}

/** A byte stream a local tool hands to the audio path (any container ffmpeg reads). */
export interface MediaStream {
  /** What the device shows while it plays. */
  label: string;
  mimeType?: string;
  open(signal: AbortSignal): AsyncIterable<Uint8Array>;
}

export interface ToolResult {
  content: ToolContent[];
  isError: boolean;
  /** MCP `structuredContent`, passed through untouched. */
  structuredContent?: Record<string, unknown>;
  action?: ToolAction;
  /**
   * Where the `resource_link`s of this result can be read: set by the MCP source to the server
   * that produced them, so the dispatcher streams each link from its own server.
   */
  resources?: ResourceSource;
  /** Audio a local tool wants played (e.g. the built-in music player). */
  media?: MediaStream;
}

export interface CallToolOptions {
  /** The turn's signal: barge-in aborts it and the call must stop. */
  signal: AbortSignal;
  /** Overrides the source's default timeout for this call, in ms. */
  timeoutMs?: number;
}

/** Something that can list tools and call them. Implementations never throw from callTool for tool-level failures: they return `isError` results. */
export interface ToolSource {
  listTools(signal?: AbortSignal): Promise<ToolSpec[]>;
  callTool(name: string, args: Record<string, unknown>, opts: CallToolOptions): Promise<ToolResult>;
}

/** One resource's contents as `resources/read` returns them. */
export interface ResourceContents {
  uri: string;
  mimeType?: string;
  text?: string;
  /** base64 */
  blob?: string;
}

export interface ResourceTemplateInfo {
  uriTemplate: string;
  name?: string;
  description?: string;
  mimeType?: string;
}

export interface ReadResourceOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Non-standard `arguments` param some servers (mcp-go based) read; SDK servers drop it. */
  arguments?: Record<string, unknown>;
}

export interface ResourceSource {
  listResources(signal?: AbortSignal): Promise<ResourceInfo[]>;
  listResourceTemplates(signal?: AbortSignal): Promise<ResourceTemplateInfo[]>;
  readResource(uri: string, opts?: ReadResourceOptions): Promise<ResourceContents[]>;
  subscribe?(uri: string, onUpdate: () => void): Promise<() => Promise<void>>;
}

/** Builds an error result for the LLM; used wherever a tool call fails. */
export function errorResult(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** Builds a plain text result. */
export function textResult(text: string, action?: ToolAction): ToolResult {
  return action
    ? { content: [{ type: 'text', text }], isError: false, action }
    : { content: [{ type: 'text', text }], isError: false };
}
