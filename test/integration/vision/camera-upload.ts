/**
 * A raw HTTP sender of the camera's upload as `Esp32Camera::Explain` writes it (esp32_camera.cc):
 * POST with Device-Id, Client-Id, `Authorization: Bearer`, multipart/form-data with the boundary
 * `----ESP32_CAMERA_BOUNDARY` and `Transfer-Encoding: chunked`; the `question` part, then the
 * `file` part (camera.jpg, image/jpeg). It reads the answer while it still writes, so a server that
 * answers and closes early is seen as such.
 */
import { connect } from 'node:net';

export const CAMERA_BOUNDARY = '----ESP32_CAMERA_BOUNDARY';

export interface UploadOptions {
  /** `http://host:port/path` */
  url: string;
  token?: string;
  deviceId?: string;
  clientId?: string;
  question?: string;
  file: Buffer;
  /** Bytes per HTTP chunk of the file (default 1024). */
  chunkBytes?: number;
  /** Pause between chunks, ms (default 0). */
  chunkDelayMs?: number;
  /** Content-Type sent (default the firmware's). */
  contentType?: string;
  /** Aborting destroys the socket: the device went away (the answer is then status 0). */
  signal?: AbortSignal;
}

export interface UploadResult {
  status: number;
  body: Record<string, unknown> | undefined;
  /** Bytes of the body written before the socket closed (or all of them). */
  sent: number;
  /** Bytes the whole body holds. */
  total: number;
  /** The socket was closed before every byte of the body was written. */
  cutShort: boolean;
  ms: number;
}

function chunk(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
}

export function uploadPhoto(o: UploadOptions): Promise<UploadResult> {
  const u = new URL(o.url);
  const started = performance.now();
  const head =
    `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n` +
    (o.deviceId ? `Device-Id: ${o.deviceId}\r\n` : '') +
    (o.clientId ? `Client-Id: ${o.clientId}\r\n` : '') +
    (o.token ? `Authorization: Bearer ${o.token}\r\n` : '') +
    `Content-Type: ${o.contentType ?? `multipart/form-data; boundary=${CAMERA_BOUNDARY}`}\r\n` +
    'Transfer-Encoding: chunked\r\n\r\n';
  const pieces: Buffer[] = [
    Buffer.from(
      `--${CAMERA_BOUNDARY}\r\nContent-Disposition: form-data; name="question"\r\n\r\n${o.question ?? 'What do you see?'}\r\n`,
    ),
    Buffer.from(
      `--${CAMERA_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="camera.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    ),
  ];
  const size = o.chunkBytes ?? 1024;
  for (let i = 0; i < o.file.length; i += size) pieces.push(o.file.subarray(i, i + size));
  pieces.push(Buffer.from(`\r\n--${CAMERA_BOUNDARY}--\r\n`));
  const total = pieces.reduce((n, p) => n + p.length, 0);

  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname);
    let received = Buffer.alloc(0);
    let sent = 0;
    let closed = false;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      socket.destroy();
      const text = received.toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const at = text.indexOf('\r\n\r\n');
      let body: Record<string, unknown> | undefined;
      try {
        body =
          at >= 0 ? (JSON.parse(received.subarray(at + 4).toString('utf8')) as Record<string, unknown>) : undefined;
      } catch {
        body = undefined;
      }
      resolve({ status, body, sent, total, cutShort: sent < total, ms: performance.now() - started });
    };
    /** The answer is whole once its Content-Length is in. */
    const whole = (): boolean => {
      const text = received.toString('latin1');
      const at = text.indexOf('\r\n\r\n');
      if (at < 0) return false;
      const len = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, at))?.[1];
      return len !== undefined && received.length - at - 4 >= Number(len);
    };
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      if (whole() && sent >= total) finish();
    });
    socket.on('error', () => {});
    o.signal?.addEventListener('abort', () => socket.destroy(), { once: true });
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.once('connect', () => {
      void (async () => {
        const write = (b: Buffer): Promise<void> =>
          new Promise((res) => {
            if (closed || socket.destroyed) return res();
            socket.write(b, () => res());
          });
        await write(Buffer.from(head));
        for (const p of pieces) {
          if (closed || socket.destroyed) break;
          await write(chunk(p));
          if (!closed) sent += p.length;
          if (o.chunkDelayMs) await new Promise((r) => setTimeout(r, o.chunkDelayMs));
        }
        if (!closed) await write(Buffer.from('0\r\n\r\n'));
        if (whole()) finish();
      })().catch(reject);
    });
  });
}
