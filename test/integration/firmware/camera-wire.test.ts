/**
 * The simulated firmware's camera (test/fixtures/firmware/camera.ts) against a plain node:http
 * server that also taps the raw bytes of each connection: the upload is the one
 * Esp32Camera::Explain sends through the device's HTTP client (request line, header order, the
 * boundary, one HTTP chunk per write, field order, a JPEG that decodes), and the tool's answers
 * are the firmware's (the body verbatim; its error texts on a refusal, no URL, no server).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CAMERA_BOUNDARY, CAMERA_ERRORS, FirmwareCamera, TAKE_PHOTO_TOOL } from '../../fixtures/firmware/camera.ts';
import { answerMcp, STOCK_TOOLS, withCamera } from '../../fixtures/firmware/mcp-server.ts';
import { CAMERA_PHOTO, decodeJpegPixels, jpegDimensions, paddedJpeg } from '../../fixtures/firmware/photos.ts';

const ID = { deviceId: 'a4:cf:12:00:00:01', clientId: '0f9e8d7c-6b5a-4c3d-8e2f-1a0b9c8d7e6f' };
const ANSWER = '{"success":true,"action":"RESPONSE","response":"A test pattern with coloured bars."}';

interface Seen {
  raw: Buffer;
  method: string;
  url: string;
  rawHeaders: string[];
  body: Buffer;
}

/** Splits a chunked body into its chunks; throws on bad framing. The last entry is the empty chunk. */
function chunksOf(raw: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at);
    assert.ok(lineEnd > at, `a chunk-size line at ${at}`);
    const sizeText = raw.subarray(at, lineEnd).toString('latin1');
    assert.match(sizeText, /^[0-9a-f]+$/, 'chunk size in lower-case hex, no extensions');
    const size = Number.parseInt(sizeText, 16);
    const data = raw.subarray(lineEnd + 2, lineEnd + 2 + size);
    assert.equal(data.length, size, 'the whole chunk arrived');
    assert.equal(
      raw.subarray(lineEnd + 2 + size, lineEnd + 4 + size).toString('latin1'),
      '\r\n',
      'CRLF after the chunk',
    );
    out.push(data);
    at = lineEnd + 4 + size;
    if (size === 0) {
      assert.equal(at, raw.length, 'nothing after the last chunk');
      return out;
    }
  }
}

describe('the simulated camera uploads as Esp32Camera::Explain does', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  let answer: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(ANSWER);
  };
  /** Set for a test that answers before reading the body. */
  let early: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;

  before(async () => {
    const raws = new WeakMap<object, Buffer[]>();
    server = createServer((req, res) => {
      if (early) {
        early(req, res);
        return;
      }
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        const body = Buffer.concat(parts);
        seen.push({
          raw: Buffer.concat(raws.get(req.socket) ?? []),
          method: req.method ?? '',
          url: req.url ?? '',
          rawHeaders: req.rawHeaders,
          body,
        });
        answer(req, res, body);
      });
    });
    server.on('connection', (socket) => {
      const list: Buffer[] = [];
      raws.set(socket, list);
      socket.on('data', (d: Buffer) => list.push(d));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  test('request line, headers in the client order, one chunk per write, question then file, a JPEG that decodes; the body comes back verbatim', async () => {
    const camera = new FirmwareCamera(ID, { chunkBytes: 1000 });
    camera.parseCapabilities({ vision: { url: `${base}/mcp/vision/explain?x=1`, token: 'tok-123' } });
    const from = seen.length;
    const text = await camera.explain('What do you see?');
    assert.equal(text, ANSWER, 'the tool result is the body as it came');
    const s = seen[from] as Seen;
    assert.equal(s.method, 'POST');
    assert.equal(s.url, '/mcp/vision/explain?x=1');

    const headEnd = s.raw.indexOf('\r\n\r\n');
    const head = s.raw.subarray(0, headEnd).toString('latin1').split('\r\n');
    assert.deepEqual(head, [
      'POST /mcp/vision/explain?x=1 HTTP/1.1',
      `Host: 127.0.0.1:${new URL(base).port}`,
      'Authorization: Bearer tok-123',
      `Client-Id: ${ID.clientId}`,
      `Content-Type: multipart/form-data; boundary=${CAMERA_BOUNDARY}`,
      `Device-Id: ${ID.deviceId}`,
      'Transfer-Encoding: chunked',
      'Connection: close',
    ]);
    assert.equal(CAMERA_BOUNDARY, '----ESP32_CAMERA_BOUNDARY');

    const chunks = chunksOf(s.raw.subarray(headEnd + 4));
    assert.equal(
      chunks[0]?.toString(),
      `--${CAMERA_BOUNDARY}\r\nContent-Disposition: form-data; name="question"\r\n\r\nWhat do you see?\r\n`,
      'first write: the question field',
    );
    assert.equal(
      chunks[1]?.toString(),
      `--${CAMERA_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="camera.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
      'second write: the file field head',
    );
    const jpegChunks = chunks.slice(2, -2);
    assert.equal(jpegChunks.length, Math.ceil(CAMERA_PHOTO.length / 1000), 'the JPEG in encoder-sized pieces');
    assert.ok(jpegChunks.every((c) => c.length <= 1000));
    const jpeg = Buffer.concat(jpegChunks);
    assert.deepEqual(jpeg, CAMERA_PHOTO);
    assert.equal(chunks.at(-2)?.toString(), `\r\n--${CAMERA_BOUNDARY}--\r\n`, 'the closing boundary');
    assert.equal(chunks.at(-1)?.length, 0, 'then the last chunk');
    assert.deepEqual(s.body, Buffer.concat(chunks), 'what node:http de-chunked is the same body');

    assert.deepEqual(jpegDimensions(jpeg), { width: 160, height: 120 });
    assert.equal(await decodeJpegPixels(jpeg), 160 * 120, 'ffmpeg decodes the uploaded photo');
    assert.deepEqual(camera.uploads.at(-1), {
      url: `${base}/mcp/vision/explain?x=1`,
      question: 'What do you see?',
      status: 200,
      body: ANSWER,
      photoBytes: CAMERA_PHOTO.length,
      writeError: null,
    });
  });

  test('a token that is not a string is kept as empty, and an empty token sends no Authorization header', async () => {
    const camera = new FirmwareCamera(ID);
    camera.parseCapabilities({ vision: { url: `${base}/explain`, token: 42 } });
    assert.equal(camera.explainToken, '', 'a token that is not a string is kept as empty');
    const from = seen.length;
    await camera.explain('q');
    const names = (seen[from] as Seen).rawHeaders.filter((_, i) => i % 2 === 0);
    assert.deepEqual(names, ['Host', 'Client-Id', 'Content-Type', 'Device-Id', 'Transfer-Encoding', 'Connection']);
  });

  test('the MCP tool: listed only on a camera board, after the stock tools; initialize sets the URL; the result is the body; refusals are the firmware errors', async () => {
    const camera = new FirmwareCamera(ID);
    const board = withCamera(
      [
        ...STOCK_TOOLS,
        {
          name: 'self.board.own',
          description: 'A tool of this board',
          inputSchema: { type: 'object', properties: {} },
          call: () => 'true',
        },
      ],
      camera,
    );
    assert.deepEqual(
      board.map((t) => t.name),
      ['self.get_device_status', 'self.audio_speaker.set_volume', TAKE_PHOTO_TOOL, 'self.board.own'],
    );
    assert.deepEqual(
      withCamera(STOCK_TOOLS, null).map((t) => t.name),
      STOCK_TOOLS.map((t) => t.name),
      'no camera, no tool',
    );
    const replies: Array<Record<string, unknown>> = [];
    let waiting: (() => void) | null = null;
    const send = (id: number, method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>> => {
      const n = replies.length;
      const got = new Promise<void>((resolve) => (waiting = resolve));
      answerMcp(
        { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) },
        board,
        'esp32s3-camera',
        '2.4.2',
        (p) => {
          replies.push(p);
          waiting?.();
        },
        (caps) => camera.parseCapabilities(caps),
      );
      return got.then(() => replies[n] as Record<string, unknown>);
    };
    const call = (id: number, args: Record<string, unknown>) =>
      send(id, 'tools/call', { name: TAKE_PHOTO_TOOL, arguments: args });

    assert.deepEqual(await call(1, { question: 'what?' }), {
      jsonrpc: '2.0',
      id: 1,
      error: { message: CAMERA_ERRORS.noUrl },
    });
    await send(2, 'initialize', { capabilities: { vision: { url: `${base}/mcp/vision/explain`, token: 't' } } });
    assert.equal(camera.explainUrl, `${base}/mcp/vision/explain`);
    assert.equal(camera.explainToken, 't');
    const listed = (await send(3, 'tools/list', { cursor: '' })).result as { tools: Array<{ name: string }> };
    assert.ok(listed.tools.some((t) => t.name === TAKE_PHOTO_TOOL));

    assert.deepEqual(await call(4, { question: 'what?' }), {
      jsonrpc: '2.0',
      id: 4,
      result: { content: [{ type: 'text', text: ANSWER }], isError: false },
    });
    assert.deepEqual((await call(5, {})).error, { message: CAMERA_ERRORS.argument }, 'question is required');

    answer = (_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"success":false,"message":"invalid token"}');
    };
    try {
      assert.deepEqual((await call(6, { question: 'what?' })).error, { message: CAMERA_ERRORS.upload });
      assert.equal(camera.uploads.at(-1)?.status, 401);
      assert.equal(camera.uploads.at(-1)?.body, '{"success":false,"message":"invalid token"}');
    } finally {
      answer = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(ANSWER);
      };
    }

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    camera.setExplainUrl(`http://127.0.0.1:${deadPort}/explain`, 't');
    assert.deepEqual((await call(7, { question: 'what?' })).error, { message: CAMERA_ERRORS.connect });
  });

  test('an answer sent before the body is read (a size limit) is the status the device sees; the upload ends, nothing hangs', async () => {
    const camera = new FirmwareCamera(ID, { chunkBytes: 4096 });
    camera.photo = paddedJpeg(3 * 1024 * 1024);
    camera.setExplainUrl(`${base}/explain`, 't');
    early = (_req, res) => {
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      res.end('{"success":false,"message":"image too large"}');
      res.socket?.destroySoon();
    };
    try {
      await assert.rejects(camera.explain('big'), { message: CAMERA_ERRORS.upload });
    } finally {
      early = null;
    }
    const up = camera.uploads.at(-1);
    assert.equal(up?.status, 413);
    assert.equal(up?.body, '{"success":false,"message":"image too large"}');
    assert.deepEqual(jpegDimensions(camera.photo), { width: 160, height: 120 }, 'the padded photo is still a JPEG');
    assert.ok(camera.photo.length >= 3 * 1024 * 1024);
  });
});
