/**
 * Hostile admin API requests, built as raw HTTP bytes: any route of the table (its params filled
 * with valid or hostile values) or a path nobody serves, any method, bodies shaped like the
 * routes' own or any JSON, bytes, over the body limit; and the credentials a stranger or the
 * operator would send: no token, a wrong one, the right one (placeholder `{token}`), malformed
 * Authorization headers, the console's session cookie (`{session}`), the known-client cookie
 * (`{known}`) or a forged one, a foreign or the server's own Origin. Requests come from one of a
 * few loopback addresses, so each has its own budget of guesses to check.
 */
import fc from 'fast-check';
import { ADMIN_ROUTES } from '../../features/admin/routes.ts';
import { hostileValue } from './json-arbitraries.ts';
import { validMac } from './ota-arbitraries.ts';

/** Replaced by the property: the admin token, the console session cookie, the known-client cookie. */
export const PLACEHOLDERS = { token: '{token}', session: '{session}', known: '{known}' } as const;

/** The loopback addresses requests come from (all of 127/8 reaches the server). */
export const ADMIN_FUZZ_ADDRESSES = ['127.0.6.1', '127.0.6.2', '127.0.6.3', '127.0.6.4', '127.0.6.9'] as const;
/** The operator's address: no wrong token comes from it, so its right-token requests reach the handlers. */
const OPERATOR = '127.0.6.9';

/** What credential the case presents, as the property's budget model reads it. */
export type Credential = 'none' | 'right' | 'wrong' | 'malformed';

export interface AdminCase {
  method: string;
  path: string;
  /** Header name → value, written as given (placeholders substituted first). */
  headers: Array<[string, string]>;
  body: Buffer;
  from: (typeof ADMIN_FUZZ_ADDRESSES)[number];
  /** The route of the table the path was made from (`none`: a path nobody serves). */
  routeId: string;
  /** The bearer token presented (`Authorization: Bearer <token>`, or the sign-in body's token). */
  credential: Credential;
  label: string;
}

/** A token a stranger guesses: printable, no whitespace (so the server reads it as a bearer token). */
const guess = fc
  .string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 120,
  })
  .filter((t) => t !== PLACEHOLDERS.token);

const authorization: fc.Arbitrary<{ header?: string; credential: Credential }> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ credential: 'none' as const }) },
  { weight: 3, arbitrary: fc.constant({ header: `Bearer ${PLACEHOLDERS.token}`, credential: 'right' as const }) },
  { weight: 5, arbitrary: guess.map((g) => ({ header: `Bearer ${g}`, credential: 'wrong' as const })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        'Basic dXNlcjpwYXNz',
        'Bearer',
        'Bearer a b',
        `Token ${PLACEHOLDERS.token}`,
        'bearer\ttoo many words here',
      )
      .map((header) => ({ header, credential: 'malformed' as const })),
  },
);

const cookie = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constant(`xiaozhi_admin=${PLACEHOLDERS.session}`) },
  { weight: 2, arbitrary: fc.constant(`xiaozhi_admin_client=${PLACEHOLDERS.known}`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'xiaozhi_admin=forged',
      'xiaozhi_admin_client=AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      'a=1; xiaozhi_admin=;',
      '=;;=',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
);

const origin = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constant('{own}') },
  { weight: 1, arbitrary: fc.constantFrom('https://evil.example', 'null', 'http://127.0.0.1:1', 'not a url') },
);

/** Values for a path parameter: well formed, nearly, or anything (percent-encoded on the wire). */
const paramValue = (name: string): fc.Arbitrary<string> =>
  fc.oneof(
    {
      weight: 3,
      arbitrary:
        name === 'deviceId'
          ? validMac
          : name === 'name'
            ? fc.constantFrom('kitchen', 'default', 'agent-1')
            : fc.constantFrom('1', '42', '0'),
    },
    { weight: 2, arbitrary: fc.string({ maxLength: 80 }) },
    { weight: 1, arbitrary: fc.constantFrom('..', '%00', '__proto__', 'a'.repeat(5000)) },
  );

const knownRoute = fc.constantFrom(...ADMIN_ROUTES).chain((r) => {
  const names = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
  return fc
    .tuple(
      fc.constant(r),
      fc.tuple(...names.map(paramValue)),
      fc.oneof(
        { weight: 8, arbitrary: fc.constant(r.method) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') },
      ),
    )
    .map(([route, values, method]) => {
      let path = route.path;
      names.forEach((n, i) => (path = path.replace(`{${n}}`, encodeURIComponent(values[i] ?? ''))));
      return { method, path: `/api/admin${path}`, routeId: route.id };
    });
});

const sessionRoute = fc
  .constantFrom('GET', 'POST', 'HEAD')
  .map((method) => ({ method, path: '/api/admin/session', routeId: method === 'POST' ? 'signIn' : 'whoAmI' }));

const unknownRoute = fc
  .record({ method: fc.constantFrom('GET', 'POST', 'DELETE', 'PROPFIND'), rest: fc.string({ maxLength: 60 }) })
  .map(({ method, rest }) => ({ method, path: `/api/admin/${encodeURIComponent(rest)}`, routeId: 'none' }));

/** Bodies the routes take (so the handlers run), or anything. */
const body = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      `{"token":"${PLACEHOLDERS.token}"}`,
      '{"code":"123456"}',
      '{"name":"fuzz-agent","settings":{"prompt":"hi"}}',
      '{"settings":{"language":"en"}}',
      '{"alias":"x"}',
      '{"text":"hello there"}',
      '{}',
    ),
  },
  { weight: 2, arbitrary: guess.map((g) => JSON.stringify({ token: g })) },
  { weight: 3, arbitrary: hostileValue },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b).toString('latin1')) },
  { weight: 1, arbitrary: fc.integer({ min: 260_000, max: 300_000 }).map((n) => `{"name":"${'a'.repeat(n)}"}`) },
  { weight: 2, arbitrary: fc.constant('') },
);

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/json; charset=utf-8',
    ),
  },
);

export const adminCase: fc.Arbitrary<AdminCase> = fc
  .record({
    // The session routes (the sign-in and whoAmI, which both look at a token) more often than the rest.
    route: fc.oneof(
      { weight: 9, arbitrary: knownRoute },
      { weight: 2, arbitrary: sessionRoute },
      { weight: 1, arbitrary: unknownRoute },
    ),
    auth: authorization,
    cookie,
    origin,
    contentType,
    body,
    strangerAddress: fc.constantFrom(...ADMIN_FUZZ_ADDRESSES.filter((a) => a !== OPERATOR)),
    fromOperator: fc.boolean(),
  })
  .map(({ route, auth, cookie: c, origin: o, contentType: ct, body: b, strangerAddress, fromOperator }) => {
    const headers: Array<[string, string]> = [];
    if (auth.header !== undefined) headers.push(['Authorization', auth.header]);
    if (c !== undefined) headers.push(['Cookie', c]);
    if (o !== undefined) headers.push(['Origin', o]);
    const hasBody = b !== '' && route.method !== 'GET' && route.method !== 'HEAD';
    if (hasBody && ct !== undefined) headers.push(['Content-Type', ct]);
    // The sign-in reads its token from the body only (a guess like a bearer one); any
    // Authorization header there is not looked at.
    let credential = auth.credential;
    if (route.routeId === 'signIn' && route.method === 'POST') {
      credential = !hasBody
        ? 'none'
        : b === `{"token":"${PLACEHOLDERS.token}"}`
          ? 'right'
          : /^\{"token":"[!-~]+"\}$/.test(b) && !b.includes('\\')
            ? 'wrong'
            : 'none';
    }
    // Strangers guess from their addresses; the operator's sends no wrong token.
    const from = fromOperator && credential !== 'wrong' && !/"token":/.test(b) ? OPERATOR : strangerAddress;
    return {
      method: route.method,
      path: route.path,
      headers,
      body: hasBody ? Buffer.from(b, 'latin1') : Buffer.alloc(0),
      from,
      routeId: route.routeId,
      credential,
      label: `${route.method} ${route.routeId}, ${credential} token${c ? ', cookie' : ''}${o ? `, Origin ${o}` : ''}`,
    };
  });
