/**
 * What a hostile device answers to the server's MCP requests (initialize, tools/list, tools/call).
 * The request ids are known only when the server sends them, so replies are generated as data
 * and rendered against the id (`renderReply`). Each answer is a few decoys that must NOT settle
 * the request (another id, a string id, a method, no result, broken JSON, a payload that is not
 * an object), then the one final reply with the right id and a fuzzed result or error.
 */
import fc from 'fast-check';
import { hostileValue } from './json-arbitraries.ts';

export type Decoy =
  | { kind: 'otherId'; delta: number; body: 'result' | 'error' }
  | {
      kind:
        | 'stringId'
        | 'fractionalId'
        | 'nullId'
        | 'noId'
        | 'withMethod'
        | 'noResult'
        | 'brokenJson'
        | 'payloadNotObject';
    };

/**
 * The settling reply: `result` or `error` (raw JSON text), and whether `jsonrpc` is present; or
 * `brokenError`, an error message pasted unescaped as the firmware does (the frame is not JSON).
 */
export interface FinalReply {
  result?: string;
  error?: string;
  brokenError?: string;
  jsonrpc: boolean;
}

export interface ReplyPlan {
  decoys: Decoy[];
  final: FinalReply;
}

const decoy: fc.Arbitrary<Decoy> = fc.oneof(
  fc.record({
    kind: fc.constant('otherId' as const),
    delta: fc.integer({ min: -3, max: 1000 }).filter((d) => d !== 0),
    body: fc.constantFrom('result' as const, 'error' as const),
  }),
  fc.constantFrom<Decoy>(
    { kind: 'stringId' },
    { kind: 'fractionalId' },
    { kind: 'nullId' },
    { kind: 'noId' },
    { kind: 'withMethod' },
    { kind: 'noResult' },
    { kind: 'brokenJson' },
    { kind: 'payloadNotObject' },
  ),
);

const decoys = fc.array(decoy, { maxLength: 3 });

/** Errors as firmware sends them (sometimes without `code`), and as nobody should. */
const errorValue: fc.Arbitrary<string> = fc.oneof(
  fc
    .record(
      { code: fc.integer(), message: fc.string({ unit: 'grapheme', maxLength: 200 }) },
      { requiredKeys: ['message'] },
    )
    .map((e) => JSON.stringify(e)),
  hostileValue,
);

function plan(result: fc.Arbitrary<string>, weightError = 1): fc.Arbitrary<ReplyPlan> {
  return fc.record({
    decoys,
    final: fc.oneof(
      { weight: 4, arbitrary: fc.record({ result, jsonrpc: fc.boolean() }) },
      { weight: weightError, arbitrary: fc.record({ error: errorValue, jsonrpc: fc.boolean() }) },
      { weight: weightError, arbitrary: fc.record({ result, error: errorValue, jsonrpc: fc.boolean() }) },
      {
        weight: weightError,
        arbitrary: fc.record({
          brokenError: fc.string({ maxLength: 40 }).map((m) => `Unknown tool: "${m}"`),
          jsonrpc: fc.constant(true),
        }),
      },
    ),
  });
}

const initializeResult = fc.oneof(
  fc.constant('{"protocolVersion":"2024-11-05","capabilities":{"tools":{}}}'),
  hostileValue,
);

/** A schema nested `depth` levels (properties → x → properties → x …), as text. */
const deepSchema = fc
  // ~36 bytes a level: up to 1,500 levels fit a 64 KiB message; 30,000 (a depth that once overflowed the stack) does not.
  .oneof(
    { weight: 9, arbitrary: fc.integer({ min: 2, max: 1500 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1501, max: 30_000 }) },
  )
  .map((depth) => '{"type":"object","properties":{"x":'.repeat(depth) + '{}' + '}}'.repeat(depth));

const toolName = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => JSON.stringify(`fz${s}`)) },
  { weight: 1, arbitrary: fc.integer({ min: 100, max: 400 }).map((n) => JSON.stringify(`fz${'x'.repeat(n)}`)) },
  { weight: 1, arbitrary: fc.constantFrom('""', '5', 'null', '{}', '"fz.dup"') },
);

const tool: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record({
        name: toolName,
        description: fc.oneof(
          fc.string({ maxLength: 80 }).map((s) => JSON.stringify(s)),
          fc.integer({ min: 1001, max: 5000 }).map((n) => JSON.stringify('d'.repeat(n))),
          hostileValue,
        ),
        inputSchema: fc.oneof(fc.constant('{"type":"object","properties":{}}'), deepSchema, hostileValue),
      })
      .map(
        ({ name, description, inputSchema }) =>
          `{"name":${name},"description":${description},"inputSchema":${inputSchema}}`,
      ),
  },
  { weight: 1, arbitrary: hostileValue },
);

/** tools/list pages: a few tools, thousands, or none; cursors that continue, repeat or are junk. */
const toolsList = fc
  .record({
    tools: fc.oneof(
      { weight: 6, arbitrary: fc.array(tool, { maxLength: 8 }).map((ts) => `[${ts.join(',')}]`) },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: 300, max: 1400 })
          .map(
            (n) =>
              `[${Array.from({ length: n }, (_, i) => `{"name":"fz${i}","inputSchema":{"type":"object"}}`).join(',')}]`,
          ),
      },
      { weight: 1, arbitrary: hostileValue },
    ),
    nextCursor: fc.option(
      fc.oneof(
        fc.constantFrom('"fz1"', '"fz2"', '""', '5', 'null'),
        fc.string({ maxLength: 10 }).map((s) => JSON.stringify(s)),
      ),
      { nil: undefined },
    ),
  })
  .map(({ tools, nextCursor }) => `{"tools":${tools}${nextCursor !== undefined ? `,"nextCursor":${nextCursor}` : ''}}`);

const listResult = fc.oneof({ weight: 6, arbitrary: toolsList }, { weight: 1, arbitrary: hostileValue });

/** The content of a tools/call result: MCP content blocks, wrong shapes, huge text. */
const callResult = fc.oneof(
  fc
    .string({ unit: 'grapheme', maxLength: 200 })
    .map((text) => JSON.stringify({ content: [{ type: 'text', text }], isError: false })),
  fc.constant(JSON.stringify({ content: [{ type: 'image', data: 'not base64!', mimeType: 'image/jpeg' }] })),
  fc.constant(JSON.stringify({ content: [{ type: 'audio', data: '////', mimeType: 'audio/ogg' }] })),
  fc.constant(JSON.stringify({ content: [{ type: 'resource_link', uri: 'file:///etc/passwd', name: 'x' }] })),
  fc.constant(JSON.stringify({ content: 'not an array', isError: 'yes' })),
  fc
    .integer({ min: 1000, max: 20_000 })
    .map((n) => JSON.stringify({ content: Array.from({ length: n }, () => ({ type: 'text', text: 'x' })) })),
  hostileValue,
);

/** The probe tool: listed first when the test wants a tool call to follow. */
export const PROBE_TOOL = 'self.fuzz.probe';
/** Its name as the model sees it (dots are not allowed in OpenAI tool names). */
export const PROBE_EXPOSED = 'self_fuzz_probe';
const probeTool = `{"name":"${PROBE_TOOL}","description":"fuzz probe","inputSchema":{"type":"object","properties":{}}}`;

export interface McpScript {
  /** True: initialize and the first page succeed and list the probe first, and the model calls it. */
  probe: boolean;
  initialize: ReplyPlan;
  pages: ReplyPlan[];
  call: ReplyPlan;
}

const VALID_INIT = JSON.stringify({
  protocolVersion: '2024-11-05',
  capabilities: { tools: {} },
  serverInfo: { name: 'fuzz-board', version: '2.4.2' },
});

export const mcpScript: fc.Arbitrary<McpScript> = fc
  .record({
    probe: fc.boolean(),
    initialize: plan(initializeResult),
    pages: fc.array(plan(listResult), { minLength: 1, maxLength: 3 }),
    call: plan(callResult),
    probeCompanions: fc.array(tool, { maxLength: 6 }),
  })
  .map(({ probeCompanions, ...s }): McpScript => {
    if (!s.probe) return s;
    // The probe must be listed for the model to call it: initialize succeeds and the first page
    // lists it first (decoys and later pages stay hostile).
    const [first, ...rest] = s.pages as [ReplyPlan, ...ReplyPlan[]];
    const firstPage = `{"tools":[${[probeTool, ...probeCompanions].join(',')}]}`;
    return {
      ...s,
      initialize: { decoys: s.initialize.decoys, final: { result: VALID_INIT, jsonrpc: true } },
      pages: [{ decoys: first.decoys, final: { result: firstPage, jsonrpc: true } }, ...rest],
    };
  });

/** The text frame for a decoy aimed at request `id`. */
export function renderDecoy(d: Decoy, id: number): string {
  const wrap = (payload: string): string => `{"type":"mcp","payload":${payload}}`;
  switch (d.kind) {
    case 'otherId':
      return wrap(
        `{"jsonrpc":"2.0","id":${id + d.delta},${d.body === 'result' ? '"result":{}' : '"error":{"message":"decoy"}'}}`,
      );
    case 'stringId':
      return wrap(`{"jsonrpc":"2.0","id":"${id}","result":{}}`);
    case 'fractionalId':
      return wrap(`{"jsonrpc":"2.0","id":${id}.5,"result":{}}`);
    case 'nullId':
      return wrap('{"jsonrpc":"2.0","id":null,"result":{}}');
    case 'noId':
      return wrap('{"jsonrpc":"2.0","result":{}}');
    case 'withMethod':
      return wrap(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","result":{}}`);
    case 'noResult':
      return wrap(`{"jsonrpc":"2.0","id":${id}}`);
    case 'brokenJson':
      // The firmware pastes error text unescaped; the whole frame is then not JSON (salvaged, but for another id).
      return wrap(`{"jsonrpc":"2.0","id":${id + 1000},"error":{"message":"Failed "tool" x"}}`);
    case 'payloadNotObject':
      return `{"type":"mcp","payload":[{"jsonrpc":"2.0","id":${id},"result":{}}]}`;
  }
}

export function renderFinal(f: FinalReply, id: number): string {
  if (f.brokenError !== undefined)
    return `{"session_id":"s","type":"mcp","payload":{"jsonrpc":"2.0","id":${id},"error":{"message":"${f.brokenError}"}}}`;
  const parts = [
    ...(f.jsonrpc ? ['"jsonrpc":"2.0"'] : []),
    `"id":${id}`,
    ...(f.result !== undefined ? [`"result":${f.result}`] : []),
    ...(f.error !== undefined ? [`"error":${f.error}`] : []),
  ];
  return `{"type":"mcp","payload":{${parts.join(',')}}}`;
}

/** Whether the final reply settles the request as a success (the server checks `error` first). */
export function succeeds(f: FinalReply): boolean {
  return f.error === undefined && f.brokenError === undefined;
}
