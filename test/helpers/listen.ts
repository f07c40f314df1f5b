/** Starts a built app on an ephemeral loopback port and returns its URLs. */
import type { AddressInfo } from 'node:net';
import type { App } from '../../server/app.ts';

export interface Listening {
  port: number;
  httpUrl: string;
  wsUrl: string;
}

export async function listenOnLoopback(app: App): Promise<Listening> {
  await app.fastify.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.fastify.server.address() as AddressInfo).port;
  return { port, httpUrl: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/xiaozhi/v1/` };
}
