/**
 * @module The admin API's OpenAPI 3.1 document, generated from the route table: each route's path
 * parameters, request body and answer are the JSON Schema of the very zod schemas that validate
 * them (`z.toJSONSchema`; OpenAPI 3.1 schemas are JSON Schema 2020-12).
 */
import { z } from 'zod';
import type { AdminRoute } from './route.ts';
import { ErrorView } from './schemas.ts';
import { ADMIN_COOKIE } from './admin-sessions.ts';

export const ADMIN_PREFIX = '/api/admin';

type Json = Record<string, unknown>;

/** A schema as it appears inside the document (no `$schema` of its own). */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  return rest;
}

const STANDARD_ERRORS: Record<number, string> = {
  400: 'invalid request: the message names the field',
  401: 'no valid admin token or session cookie',
  403: 'a request from a foreign origin, or a cookie-authenticated change without the same-origin check',
};

function operation(r: AdminRoute): Json {
  const errorBody = { content: { 'application/json': { schema: jsonSchema(ErrorView, 'output') } } };
  const responses: Json = {
    [r.status]: r.response
      ? { description: 'OK', content: { 'application/json': { schema: jsonSchema(r.response, 'output') } } }
      : { description: 'Done, no content' },
  };
  for (const [status, description] of Object.entries({ ...STANDARD_ERRORS, ...(r.errors ?? {}) })) {
    if (!r.auth && status === '401' && r.id !== 'signIn') continue;
    responses[status] = { description, ...errorBody };
  }
  // Statuses answered with the route's own body (an outcome rather than an error).
  for (const [status, description] of Object.entries(r.answers ?? {})) {
    if (r.response)
      responses[status] = {
        description,
        content: { 'application/json': { schema: jsonSchema(r.response, 'output') } },
      };
  }
  if (r.auth)
    responses['429'] ??= {
      description: 'too many wrong admin tokens from this address: wait Retry-After seconds',
      ...errorBody,
    };
  const op: Json = { operationId: r.id, summary: r.summary, responses };
  if (r.params) {
    const s = jsonSchema(r.params, 'input');
    const props = (s.properties ?? {}) as Record<string, Json>;
    op.parameters = Object.entries(props).map(([name, schema]) => ({ name, in: 'path', required: true, schema }));
  }
  if (r.body)
    op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } };
  op.security = r.auth ? [{ bearer: [] }, { cookie: [] }] : [];
  return op;
}

export function openApiDocument(routes: readonly AdminRoute[]): Json {
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const p = `${ADMIN_PREFIX}${r.path}`;
    paths[p] = { ...(paths[p] ?? {}), [r.method.toLowerCase()]: operation(r) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'xiaozhi server admin API',
      version: '1',
      description:
        'Devices, agents and live sessions. Authenticate with `Authorization: Bearer <admin.token>`, or sign in (POST /api/admin/session) for the console cookie; requests from foreign origins are refused.',
    },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The configured admin.token (env ADMIN_TOKEN).' },
        cookie: {
          type: 'apiKey',
          in: 'cookie',
          name: ADMIN_COOKIE,
          description: 'Set by POST /api/admin/session; changes also need a same-origin request.',
        },
      },
    },
  };
}
