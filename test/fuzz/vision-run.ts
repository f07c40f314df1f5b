/**
 * The vision endpoint under fast-check (`POST /mcp/vision/explain`): hostile uploads, each written
 * byte for byte on a raw socket against the real server with real device sessions' tokens. The
 * headers (token, Device-Id, Content-Type) and the multipart body (parts, part headers, the
 * question, the image: a real JPEG or PNG, cut, mutated or random bytes; chunk sizes, a declared
 * length, a body cut short) are drawn. Checked per case: an answer with a declared status and the
 * JSON body the firmware passes on (or, for a body the client cut short, no answer at all), within
 * a bound, with no crash and no error-level log line; at the end the endpoint still answers a
 * clean photo.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import fc from 'fast-check';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startFuzzServer, type FuzzServer } from './fuzz-server.ts';

const JPEG = readFileSync(new URL('../fixtures/vision/photo.jpg', import.meta.url));
const PNG = readFileSync(new URL('../fixtures/vision/photo.png', import.meta.url));
const BOUNDARY = '----ESP32_CAMERA_BOUNDARY';
const MAX_IMAGE = 32 * 1024;
/** Bound on one exchange: far above loopback latency and the upload deadline. */
const STEP_MS = 15_000;
const DECLARED = new Set([200, 400, 401, 408, 413, 415, 429, 502, 503, 504]);

interface Grant {
  deviceId: string;
  token: string;
  path: string;
}

type Token = 'valid' | 'other' | 'wrong' | 'none' | 'garbage';
type Image = { kind: 'jpeg' | 'png' | 'random' | 'cut' | 'mutated' | 'huge'; seed: number };

interface VisionCase {
  token: Token;
  garbage: string;
  deviceHeader: 'right' | 'other' | 'none' | 'long';
  contentType: 'firmware' | 'quoted' | 'other-boundary' | 'json' | 'none' | 'random';
  randomType: string;
  question: string;
  image: Image;
  extraParts: Array<{ headers: string; body: string }>;
  partHeaderJunk: string;
  /** Where the file part goes among the parts. */
  fileFirst: boolean;
  framing: 'chunked' | 'length' | 'cut';
  chunk: number;
  cutAt: number;
}

const visionCase: fc.Arbitrary<VisionCase> = fc.record({
  token: fc.constantFrom<Token>(...Array<Token>(12).fill('valid'), 'other', 'wrong', 'none', 'garbage'),
  garbage: fc.string({ maxLength: 300 }),
  deviceHeader: fc.constantFrom(...Array<'right'>(12).fill('right'), 'other', 'none', 'long'),
  contentType: fc.constantFrom(
    ...Array<'firmware'>(8).fill('firmware'),
    'quoted',
    'other-boundary',
    'json',
    'none',
    'random',
  ),
  randomType: fc.string({ maxLength: 200 }),
  question: fc.oneof(fc.string({ maxLength: 100 }), fc.string({ minLength: 1, maxLength: 3000 }), fc.constant('')),
  image: fc.record({
    kind: fc.constantFrom('jpeg', 'jpeg', 'png', 'random', 'cut', 'mutated', 'huge'),
    seed: fc.nat(),
  }),
  extraParts: fc.oneof(
    { weight: 4, arbitrary: fc.constant([]) },
    {
      weight: 1,
      arbitrary: fc.array(fc.record({ headers: fc.string({ maxLength: 200 }), body: fc.string({ maxLength: 200 }) }), {
        maxLength: 5,
      }),
    },
  ),
  partHeaderJunk: fc.oneof(
    { weight: 4, arbitrary: fc.constant('') },
    { weight: 1, arbitrary: fc.string({ maxLength: 2000 }) },
  ),
  fileFirst: fc.boolean(),
  framing: fc.constantFrom('chunked', 'chunked', 'chunked', 'length', 'cut'),
  chunk: fc.integer({ min: 1, max: 8192 }),
  cutAt: fc.nat(),
}) as fc.Arbitrary<VisionCase>;

function imageOf(i: Image): Buffer {
  const rnd = (n: number): Buffer => {
    const b = Buffer.alloc(n);
    let x = i.seed | 1;
    for (let k = 0; k < n; k++) {
      x = (x * 1103515245 + 12345) >>> 0;
      b[k] = x >>> 24;
    }
    return b;
  };
  switch (i.kind) {
    case 'jpeg':
      return JPEG;
    case 'png':
      return PNG;
    case 'random':
      return rnd(1 + (i.seed % 5000));
    case 'cut':
      return JPEG.subarray(0, i.seed % JPEG.length);
    case 'mutated': {
      const b = Buffer.from(JPEG);
      const r = rnd(8);
      for (let k = 0; k < 4; k++) b[(r.readUInt16BE(k * 2) * 7) % b.length] = r[k] ?? 0;
      return b;
    }
    case 'huge':
      return Buffer.concat([JPEG, rnd(MAX_IMAGE)]);
  }
}

function bodyOf(c: VisionCase): Buffer {
  const q = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="question"${c.partHeaderJunk ? `\r\nX-Junk: ${c.partHeaderJunk}` : ''}\r\n\r\n${c.question}\r\n`,
  );
  const f = Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="camera.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
    imageOf(c.image),
    Buffer.from('\r\n'),
  ]);
  const extra = c.extraParts.map((p) => Buffer.from(`--${BOUNDARY}\r\n${p.headers}\r\n\r\n${p.body}\r\n`));
  return Buffer.concat([...(c.fileFirst ? [f, q] : [q, f]), ...extra, Buffer.from(`--${BOUNDARY}--\r\n`)]);
}

function requestOf(c: VisionCase, g: Grant, other: Grant, port: number): { bytes: Buffer; cut: boolean } {
  const token = { valid: g.token, other: other.token, wrong: 'w'.repeat(32), none: '', garbage: c.garbage }[c.token];
  const device = { right: g.deviceId, other: other.deviceId, none: '', long: 'x'.repeat(5000) }[c.deviceHeader];
  const type = {
    firmware: `multipart/form-data; boundary=${BOUNDARY}`,
    quoted: `multipart/form-data; boundary="${BOUNDARY}"`,
    'other-boundary': 'multipart/form-data; boundary=something-else',
    json: 'application/json',
    none: '',
    random: c.randomType,
  }[c.contentType];
  const clean = (v: string): string => v.replace(/[\r\n]/g, ' ');
  const body = bodyOf(c);
  let head =
    `POST ${g.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    (device ? `Device-Id: ${clean(device)}\r\n` : '') +
    `Client-Id: fuzz\r\n` +
    (token ? `Authorization: Bearer ${clean(token)}\r\n` : '') +
    (type ? `Content-Type: ${clean(type)}\r\n` : '');
  if (c.framing === 'length')
    return { bytes: Buffer.concat([Buffer.from(`${head}Content-Length: ${body.length}\r\n\r\n`), body]), cut: false };
  head += 'Transfer-Encoding: chunked\r\n\r\n';
  const chunks: Buffer[] = [Buffer.from(head)];
  for (let i = 0; i < body.length; i += c.chunk) {
    const part = body.subarray(i, i + c.chunk);
    chunks.push(Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from('0\r\n\r\n'));
  const whole = Buffer.concat(chunks);
  if (c.framing === 'cut')
    return { bytes: whole.subarray(0, Buffer.byteLength(head) + (c.cutAt % body.length)), cut: true };
  return { bytes: whole, cut: false };
}

/** Writes the request, half-closes when it was cut short, and reads until the server closes or a whole answer is in. */
function exchange(port: number, bytes: Buffer, cut: boolean): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${STEP_MS} ms`));
    }, STEP_MS);
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
      const text = got.toString('utf8');
      const at = text.indexOf('\r\n\r\n');
      if (at < 0) return resolve(null);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), body: text.slice(at + 4) });
    };
    const whole = (): boolean => {
      const text = got.toString('latin1');
      const at = text.indexOf('\r\n\r\n');
      const len = at >= 0 ? /\r\ncontent-length: (\d+)/i.exec(text.slice(0, at))?.[1] : undefined;
      return len !== undefined && got.length - at - 4 >= Number(len);
    };
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (whole()) done();
    });
    socket.on('error', () => {});
    socket.on('close', done);
    socket.write(bytes, () => {
      if (cut) socket.end();
    });
  });
}

export interface VisionFuzzOptions {
  seed: number;
  runs: number;
  timeLimitMs?: number;
}

export async function runVisionFuzz(opts: VisionFuzzOptions): Promise<string> {
  const f: FuzzServer = await startFuzzServer((llmUrl) => ({
    vision: {
      enabled: true,
      baseURL: llmUrl,
      model: 'fake-vision',
      maxImageBytes: MAX_IMAGE,
      imagesPerMinute: 600,
      uploadTimeoutMs: 2000,
    },
  }));
  const devices: DeviceSim[] = [];
  const statuses = new Map<string, number>();
  try {
    const grants: Grant[] = [];
    for (let i = 0; i < 2; i++) {
      const deviceId = f.nextDeviceId();
      const dev = new DeviceSim({ url: f.srv.wsUrl, deviceId, clientId: 'fuzz', mcpTools: [] });
      devices.push(dev);
      await dev.hello({ mcp: true });
      await dev.waitFor('initialize', () => dev.mcpRequests.some((r) => r.method === 'initialize'));
      const init = dev.mcpRequests.find((r) => r.method === 'initialize');
      const v = (init?.params as { capabilities: { vision: { url: string; token: string } } }).capabilities.vision;
      grants.push({ deviceId, token: v.token, path: new URL(v.url).pathname });
    }
    const [a, b] = grants as [Grant, Grant];
    const port = Number(new URL(f.srv.httpUrl).port);
    await fc.assert(
      fc.asyncProperty(visionCase, async (c) => {
        const { bytes, cut } = requestOf(c, a, b, port);
        const answer = await exchange(port, bytes, cut);
        f.stats.cases++;
        const key = answer ? String(answer.status) : 'none';
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        if (answer === null) {
          // Only a body the client cut short, or one refused and closed, may go unanswered.
          assert.ok(
            cut || c.image.kind === 'huge',
            `no answer to a whole request (${JSON.stringify({ ...c, garbage: undefined })})`,
          );
        } else if (cut) {
          // A body cut short is a broken HTTP request: the server's own client-error answer (or ours).
          assert.ok(answer.status >= 400 && answer.status < 500, `status ${answer.status} for a body cut short`);
        } else {
          assert.ok(DECLARED.has(answer.status), `undeclared status ${answer.status}`);
          const json = JSON.parse(answer.body) as Record<string, unknown>;
          if (answer.status === 200) assert.equal(json.success, true);
          else assert.deepEqual(Object.keys(json).sort(), ['message', 'success']);
        }
        f.assertHealthy('vision upload');
      }),
      {
        seed: opts.seed,
        numRuns: opts.runs,
        ...(opts.timeLimitMs ? { interruptAfterTimeLimit: opts.timeLimitMs } : {}),
      },
    );
    // Still serving: a clean photo is answered.
    const clean = requestOf(
      {
        token: 'valid',
        garbage: '',
        deviceHeader: 'right',
        contentType: 'firmware',
        randomType: '',
        question: 'ok?',
        image: { kind: 'jpeg', seed: 0 },
        extraParts: [],
        partHeaderJunk: '',
        fileFirst: false,
        framing: 'chunked',
        chunk: 1024,
        cutAt: 0,
      },
      a,
      b,
      port,
    );
    const last = await exchange(port, clean.bytes, false);
    assert.equal(last?.status, 200, 'a clean photo after the run');
    return `${f.stats.cases} uploads; answers ${[...statuses].map(([k, n]) => `${k}:${n}`).join(' ')}`;
  } finally {
    for (const d of devices) d.close();
    await f.close();
  }
}
