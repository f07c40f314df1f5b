/**
 * A hand-written bridge for the endpoint's tests: a WebSocket client that answers each JSON-RPC
 * message with whatever `answer` returns (nothing: no answer), so a test can play the real
 * bridges' quirks and misbehaviours exactly.
 */
import { WebSocket } from 'ws';

export type RpcMessage = {
  jsonrpc?: string;
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: unknown;
};

export interface RawBridge {
  ws: WebSocket;
  /** Every message the server sent, in order. */
  received: RpcMessage[];
  closed: Promise<{ code: number; reason: string }>;
  send(value: unknown): void;
  close(): Promise<void>;
}

/** What the quirky bridges answer to `initialize`: always 2024-11-05. */
export function initializeResult(name = 'raw-bridge'): Record<string, unknown> {
  return {
    protocolVersion: '2024-11-05',
    capabilities: { tools: { listChanged: true } },
    serverInfo: { name, version: '0.1.0' },
  };
}

export function tool(name: string, inputSchema: unknown = { type: 'object', properties: {} }): Record<string, unknown> {
  return { name, description: `the ${name} tool`, inputSchema };
}

export async function connectRawBridge(
  url: string,
  answer: (m: RpcMessage, b: RawBridge) => unknown,
): Promise<RawBridge> {
  const ws = new WebSocket(url);
  const received: RpcMessage[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  const bridge: RawBridge = {
    ws,
    received,
    closed,
    send: (value) => ws.send(typeof value === 'string' ? value : JSON.stringify(value)),
    close: async () => {
      ws.close();
      await closed;
    },
  };
  ws.on('message', (data) => {
    const m = JSON.parse(String(data)) as RpcMessage;
    received.push(m);
    const reply = answer(m, bridge);
    if (reply === undefined) return;
    bridge.send(m.id === undefined ? reply : { jsonrpc: '2.0', id: m.id, result: reply });
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  return bridge;
}
