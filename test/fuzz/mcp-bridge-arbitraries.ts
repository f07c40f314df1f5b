/**
 * What a hostile bridge does at the MCP endpoint (the access point, `/mcp/`): the token it dials
 * with (none, malformed, huge, unknown, or the agent's), how it answers initialize, tools/list
 * (floods of pages, pages of many or fat or hostile tools, a cursor repeated or never ending) and
 * tools/call, and the frames it sends unasked before and after it has joined: garbage, bad
 * JSON-RPC, binary and huge frames, floods of list_changed, requests of its own. Frames are built
 * as text, so a value 20,000 levels deep needs no recursion here.
 */
import fc from 'fast-check';
import { hostileValue } from './json-arbitraries.ts';

export type TokenPlan =
  | { kind: 'valid'; via: 'query' | 'header' }
  /** A token that is not the agent's: the upgrade must be refused (401, or 429 once the budget is spent). */
  | { kind: 'bad'; token: string; via: 'query' | 'header' };

export type Answer = 'valid' | 'error' | 'silent' | { hostile: string };

export type ToolShape = 'small' | 'fat' | 'hostile';

export interface ListPlan {
  /** Pages the bridge would serve (the endpoint follows at most maxListPages). */
  pages: number;
  toolsPerPage: number;
  shape: ToolShape;
  /** `fresh`: a new cursor each page; `same`: the same cursor again; `none`: one page only. */
  cursor: 'fresh' | 'same' | 'none';
  /** Tool names and values from these when the shape is hostile. */
  hostileNames: string[];
  hostileSchemas: string[];
}

export type Frame =
  | { kind: 'text'; text: string }
  | { kind: 'binary'; bytes: number }
  /** A text frame of about `bytes` bytes (some over mcpEndpoint.maxMessageBytes, some over server.maxMessageBytes). */
  | { kind: 'huge'; bytes: number }
  | { kind: 'listChangedFlood'; count: number }
  | { kind: 'request'; method: string; id: string };

export interface BridgeCase {
  token: TokenPlan;
  /** `?bridge=` (sometimes the name of the well-behaved bridge that stays connected), or none. */
  name: string | undefined;
  initialize: Answer;
  list: Answer;
  listPlan: ListPlan;
  call: Answer;
  /** Sent as soon as the socket is open, while the endpoint initializes the bridge. */
  early: Frame[];
  /** Sent once the bridge has joined (if it does). */
  late: Frame[];
}

export const SENTINEL_NAME = 'sentinel';

const answer: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Answer>('valid') },
  { weight: 1, arbitrary: fc.constant<Answer>('error') },
  { weight: 1, arbitrary: fc.constant<Answer>('silent') },
  { weight: 2, arbitrary: hostileValue.map((hostile): Answer => ({ hostile })) },
);

/** Tokens that are not the agent's: empty, short, unknown but well-shaped, huge, odd characters. */
const badToken: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', ' ', 'null', 'undefined', 'Bearer', '%00', '../../admin'),
  fc.stringMatching(/^[A-Za-z0-9_-]{43}$/),
  fc.string({ maxLength: 64 }),
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.integer({ min: 1000, max: 6000 }).map((n) => 'a'.repeat(n)),
);

const tokenPlan: fc.Arbitrary<TokenPlan> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom<'query' | 'header'>('query', 'header').map((via): TokenPlan => ({ kind: 'valid', via })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ token: badToken, via: fc.constantFrom<'query' | 'header'>('query', 'header') })
      .map((r): TokenPlan => ({ kind: 'bad', ...r })),
  },
);

const listPlan: fc.Arbitrary<ListPlan> = fc.record({
  pages: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 3 }) },
    { weight: 1, arbitrary: fc.integer({ min: 15, max: 60 }) },
  ),
  toolsPerPage: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 8 }) },
    { weight: 1, arbitrary: fc.integer({ min: 30, max: 140 }) },
  ),
  shape: fc.constantFrom<ToolShape>('small', 'small', 'fat', 'hostile'),
  cursor: fc.constantFrom<ListPlan['cursor']>('fresh', 'fresh', 'same', 'none'),
  hostileNames: fc.array(
    fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constantFrom('__proto__', 'constructor', '', 'self.audio_speaker.set_volume', 'sentinel_echo'),
      fc.integer({ min: 100, max: 2000 }).map((n) => 'n'.repeat(n)),
    ),
    { minLength: 1, maxLength: 4 },
  ),
  hostileSchemas: fc.array(hostileValue, { minLength: 1, maxLength: 3 }),
});

const frame: fc.Arbitrary<Frame> = fc.oneof(
  { weight: 4, arbitrary: hostileValue.map((text): Frame => ({ kind: 'text', text })) },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        '{"jsonrpc":"1.0","id":1,"result":{}}',
        '{"jsonrpc":"2.0","id":{"a":1},"result":{}}',
        '{"jsonrpc":"2.0","id":987654321,"result":{"tools":[]}}',
        '{"jsonrpc":"2.0","id":1,"error":"not an object"}',
        '[{"jsonrpc":"2.0","method":"ping","id":1},{"jsonrpc":"2.0","method":"ping","id":2}]',
        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
        '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}',
        '{"jsonrpc":"2.0"}',
        '{"jsonrpc":"2.0","result":{}}',
        '{not json',
        '',
      )
      .map((text): Frame => ({ kind: 'text', text })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5000 }).map((bytes): Frame => ({ kind: 'binary', bytes })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.integer({ min: 60_000, max: 70_000 }), fc.integer({ min: 100_000, max: 300_000 }))
      .map((bytes): Frame => ({ kind: 'huge', bytes })),
  },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 1, max: 300 }).map((count): Frame => ({ kind: 'listChangedFlood', count })),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({
        method: fc.constantFrom(
          'ping',
          'tools/list',
          'tools/call',
          'sampling/createMessage',
          'roots/list',
          'elicitation/create',
          'initialize',
          'x'.repeat(500),
        ),
        id: fc.string({ maxLength: 10 }),
      })
      .map((r): Frame => ({ kind: 'request', ...r })),
  },
);

export const bridgeCase: fc.Arbitrary<BridgeCase> = fc.record({
  token: tokenPlan,
  name: fc.option(
    fc.oneof(fc.constant(SENTINEL_NAME), fc.stringMatching(/^[\w .:-]{1,20}$/), fc.string({ maxLength: 80 })),
    { nil: undefined },
  ),
  initialize: fc.oneof({ weight: 5, arbitrary: fc.constant<Answer>('valid') }, { weight: 1, arbitrary: answer }),
  list: fc.oneof({ weight: 3, arbitrary: fc.constant<Answer>('valid') }, { weight: 1, arbitrary: answer }),
  listPlan,
  call: answer,
  early: fc.array(frame, { maxLength: 3 }),
  late: fc.array(frame, { maxLength: 4 }),
});

/** The tools of page `page` as JSON text (names unique per page and page number). */
export function toolsText(plan: ListPlan, page: number): string {
  const tools: string[] = [];
  for (let i = 0; i < plan.toolsPerPage; i++) {
    const name = `fz_${page}_${i}`;
    if (plan.shape === 'small') tools.push(`{"name":"${name}","inputSchema":{"type":"object"}}`);
    else if (plan.shape === 'fat') {
      const props = Array.from(
        { length: 12 },
        (_, p) => `"p${p}":{"type":"string","description":"${'parameter '.repeat(20)}"}`,
      ).join(',');
      tools.push(
        `{"name":"${name}","description":"${'what it does '.repeat(70)}","inputSchema":{"type":"object","properties":{${props}}}}`,
      );
    } else {
      const hostileName = plan.hostileNames[i % plan.hostileNames.length] ?? name;
      const schema = plan.hostileSchemas[i % plan.hostileSchemas.length] ?? '{}';
      tools.push(
        `{"name":${JSON.stringify(i % 2 === 0 ? hostileName : name)},"description":${schema},"inputSchema":${schema}}`,
      );
    }
  }
  return `[${tools.join(',')}]`;
}
