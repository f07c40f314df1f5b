/**
 * @module How Fastify's per-request lines are logged: routes marked quiet (the page's static files,
 * a dozen per page load) are logged at debug; every other request keeps the usual info lines, and
 * errors keep their level everywhere.
 */
import { LogController, type FastifyReply, type FastifyRequest, type RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route's request lines are logged at debug. */
    quietRequestLog?: boolean;
  }
}

/** Marks a route (from an `onRoute` hook) so its request lines go to debug. */
export function markQuiet(route: RouteOptions): void {
  route.config = { ...route.config, quietRequestLog: true };
}

function quiet(request: FastifyRequest): boolean {
  return request.routeOptions.config.quietRequestLog === true;
}

export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (!quiet(request)) return super.incomingRequest(request, reply);
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error || !quiet(request)) return super.requestCompleted(error, request, reply);
    if (!this.isLogDisabled(request))
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
