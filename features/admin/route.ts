/**
 * @module One admin API route as data: method, path, the zod schemas of its params and body (which
 * validate the request and are what the OpenAPI document shows), the schema of its answer, and
 * its handler. plugin.ts registers the table and openapi.ts describes it, so the two cannot differ.
 */
import type { Vision } from '../vision/index.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Logger } from '../../core/logger.ts';
import type { AdminStore } from './admin-store.ts';
import type { AdminSessions } from './admin-sessions.ts';
import type { AdminTokenGuard } from './admin-token.ts';
import type { BridgeHub } from '../mcp-endpoint/index.ts';
import type { Push } from '../push/index.ts';

export type AdminMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A request the handler refuses: its status and message, and the request field at fault. */
export class AdminError extends Error {
  readonly status: number;
  readonly field: string | undefined;
  constructor(status: number, message: string, field?: string) {
    super(message);
    this.name = 'AdminError';
    this.status = status;
    this.field = field;
  }
}

/** What every handler may use. */
export interface AdminContext {
  store: AdminStore;
  token: string;
  sessions: AdminSessions;
  /** Every presented admin token is checked here (guesses counted). */
  tokenGuard: AdminTokenGuard;
  /** Device-Ids with a session open in this process (the store's list covers every replica). */
  localOnline(): Iterable<string>;
  /** Registers a secret value for log redaction (an agent's API key). */
  onSecret(value: string): void;
  log: Logger;
  /** The MCP endpoint's bridges in this process and the URL base handed out; absent: not served. */
  mcpEndpoint?: { hub: BridgeHub; publicUrl: string };
  /** Server-initiated speech; absent: not served. */
  push?: Push;
  /** The camera endpoint (its models, the kept photos); absent: not served. */
  vision?: Vision;
}

type Parsed<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface AdminRoute<
  P extends z.ZodType | null = z.ZodType | null,
  B extends z.ZodType | null = z.ZodType | null,
> {
  /** OpenAPI operationId. */
  id: string;
  method: AdminMethod;
  /** Below `/api/admin`, OpenAPI style: `/devices/{deviceId}`. */
  path: string;
  summary: string;
  /** false: reachable without signing in (the sign-in itself). */
  auth: boolean;
  params: P;
  body: B;
  /** Status of a successful answer, and the schema of its body (null: no body). */
  status: 200 | 201 | 204;
  response: z.ZodType | null;
  /**
   * A route whose answer's status depends on the answer (the same body schema): the status for
   * `result`. Each status it may give is listed in `answers` (OpenAPI).
   */
  statusOf?: (result: unknown) => number;
  /** Other statuses answered with the `response` schema, with what they mean. */
  answers?: Partial<Record<202 | 404 | 409 | 429, string>>;
  /** Statuses besides 400/401/403 this route may answer, with what they mean. */
  errors?: Partial<Record<404 | 409 | 429 | 503, string>>;
  handle(
    input: { params: Parsed<P>; body: Parsed<B> },
    ctx: AdminContext,
    http: { request: FastifyRequest; reply: FastifyReply },
  ): Promise<unknown>;
}

/** Declares a route with its params and body types inferred from the schemas. */
export function adminRoute<P extends z.ZodType | null, B extends z.ZodType | null>(r: AdminRoute<P, B>): AdminRoute {
  return r as unknown as AdminRoute;
}

/** `/devices/{deviceId}` → `/devices/:deviceId` (Fastify's form). */
export function fastifyPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
