/**
 * @module The fleet simulator's "instant" OpenAI-compatible LLM and ASR: one HTTP server on
 * 127.0.0.1 that answers every chat request with the same streamed text and every transcription
 * with the same JSON, spending as little CPU as it can.
 *
 * Why not the test fixtures (`test/fixtures/fake-openai*.ts`): those record every request, parse
 * each upload with the platform's multipart parser and pace chunks with timers, which is what
 * tests need. On the simulator's two cores that work was a queue of its own: a burst of 50 turns
 * cost their process 2–4 ms per turn, serially, in front of every device's first frame, and the
 * capacity goals in BENCHMARKS.md are stated for fakes that answer at once. What the server receives is unchanged:
 * the same chunk shapes, one `data:` event per 4-character piece, each written separately.
 *
 * Requests are still checked enough to catch a broken client: the chat body must be JSON with a
 * `messages` array and `stream: true`; the upload must be `multipart/form-data` with a `file` part.
 * Anything else gets a 400 with an OpenAI-style error body, which the server reports as a failed
 * turn and the simulator counts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LeanFakes {
  /** Chat base URL (…/v1). */
  llm: string;
  /** Transcription base URL (…/v1). */
  asr: string;
  close(): Promise<void>;
}

/** Larger bodies are refused: a minute of 16 kHz WAV is ~2 MB; chat bodies are a few KB. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const PIECE_CHARS = 4;

/** The SSE events of one streamed answer, as OpenAI sends them (role first, finish, [DONE]). */
function answerEvents(text: string): Buffer[] {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-sim', object: 'chat.completion.chunk', created, model: 'sim', system_fingerprint: null, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const events = [chunk({ role: 'assistant', content: '' }, null)];
  for (let i = 0; i < text.length; i += PIECE_CHARS)
    events.push(chunk({ content: text.slice(i, i + PIECE_CHARS) }, null));
  events.push(chunk({}, 'stop'), 'data: [DONE]\n\n');
  return events.map((e) => Buffer.from(e, 'utf8'));
}

function badRequest(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }));
}

/** Collects a body up to MAX_BODY_BYTES; null (and a 413 sent) when it is larger. */
function readBody(req: IncomingMessage, res: ServerResponse, done: (body: Buffer | null) => void): void {
  const parts: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (c: Buffer) => {
    if (over) return;
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      over = true;
      badRequest(res, 413, 'body too large');
      done(null);
      return;
    }
    parts.push(c);
  });
  req.on('end', () => {
    if (!over) done(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size));
  });
  req.on('error', () => {
    if (!over) done(null);
  });
}

export async function startLeanFakes(opts: { transcript: string; answer: string }): Promise<LeanFakes> {
  const events = answerEvents(opts.answer);
  const transcription = Buffer.from(JSON.stringify({ text: opts.transcript }), 'utf8');
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'POST') return badRequest(res, 405, 'only POST');
    if (path === '/v1/chat/completions') {
      readBody(req, res, (body) => {
        if (!body) return;
        let ok = false;
        try {
          const j = JSON.parse(body.toString('utf8')) as { messages?: unknown; stream?: unknown };
          ok = Array.isArray(j.messages) && j.stream === true;
        } catch {
          ok = false;
        }
        if (!ok) return badRequest(res, 400, 'expected a JSON chat request with messages and stream: true');
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        for (const e of events) res.write(e);
        res.end();
      });
      return;
    }
    if (path === '/v1/audio/transcriptions') {
      const type = req.headers['content-type'] ?? '';
      readBody(req, res, (body) => {
        if (!body) return;
        if (!/^multipart\/form-data;\s*boundary=/i.test(type) || body.indexOf('name="file"') < 0) {
          return badRequest(res, 400, 'expected multipart/form-data with a file part');
        }
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': transcription.length });
        res.end(transcription);
      });
      return;
    }
    badRequest(res, 404, `no route ${path}`);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}/v1`;
  return {
    llm: base,
    asr: base,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
