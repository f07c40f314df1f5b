/**
 * @module The key a request's source address is budgeted under (pending activation codes): one
 * place decides what counts as "the same address".
 */
import type { FastifyRequest } from 'fastify';

export function addressKey(request: FastifyRequest): string {
  return request.ip;
}
