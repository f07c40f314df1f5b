/**
 * The photo's decode by ffmpeg (features/vision/image-decode.ts): real ffmpeg for intact and broken
 * images; a stand-in that never finishes (a shell script that answers `-version` and then sleeps)
 * for the time limit, the abort and the bound on decodes at once, each followed by a check that
 * the process is gone from the process table (reaped, not a zombie); a path with no ffmpeg for the
 * fallback to the header check.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ImageDecoder } from '../../../features/vision/image-decode.ts';
import { listDescendants } from '../../../features/metrics/child-processes.ts';
import { corruptIdat, JPEG, mangledScan, PNG, truncatedScan } from '../../fixtures/vision/broken-images.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { waitFor } from '../../helpers/wait.ts';

let dir = '';
/** Answers `-version`; any decode reads nothing and never ends. */
let sleeper = '';

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'vision-decode-'));
  sleeper = join(dir, 'ffmpeg-that-hangs');
  writeFileSync(
    sleeper,
    '#!/bin/sh\ncase "$2" in -version) echo "ffmpeg version stand-in"; exit 0;; esac\nexec sleep 300\n',
  );
  chmodSync(sleeper, 0o755);
});
after(() => rmSync(dir, { recursive: true, force: true }));

function decoder(o: { ffmpegPath?: string; maxConcurrent?: number; timeoutMs?: number } = {}) {
  const logs = createLogSink();
  const d = new ImageDecoder({
    maxConcurrent: o.maxConcurrent ?? 2,
    timeoutMs: o.timeoutMs ?? 5000,
    log: pino({ level: 'info' }, logs.stream),
    ...(o.ffmpegPath ? { ffmpegPath: o.ffmpegPath } : {}),
  });
  return { d, logs };
}

/** The running stand-in processes of this test process. */
const hanging = async (): Promise<number[]> =>
  (await listDescendants()).filter((p) => p.args.includes('sleep 300')).map((p) => p.pid);

/** The pid is gone from the process table: not running and not a zombie (`kill 0` finds neither). */
function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

test('intact JPEG and PNG decode; a mangled or cut JPEG scan and a corrupt PNG IDAT do not', async () => {
  const { d } = decoder();
  const never = new AbortController().signal;
  assert.deepEqual(await d.decode(JPEG, 'image/jpeg', never), { kind: 'decoded' });
  assert.deepEqual(await d.decode(PNG, 'image/png', never), { kind: 'decoded' });
  for (const [what, bytes, mime] of [
    ['mangled scan', mangledScan(), 'image/jpeg'],
    ['truncated scan', truncatedScan(), 'image/jpeg'],
    ['corrupt IDAT', corruptIdat(), 'image/png'],
    ['a JPEG said to be a PNG', JPEG, 'image/png'],
  ] as const) {
    const r = await d.decode(bytes, mime, never);
    assert.equal(r.kind, 'undecodable', what);
    assert.ok('detail' in r && r.detail.length > 0, `${what}: ffmpeg's complaint kept`);
  }
  assert.equal(d.running, 0);
});

test('past its time limit the decode is killed, answered timeout, and its process is gone (no zombie)', async () => {
  const { d } = decoder({ ffmpegPath: sleeper, timeoutMs: 600 });
  const before = await hanging();
  const pending = d.decode(JPEG, 'image/jpeg', new AbortController().signal);
  const pid = await waitFor(async () => (await hanging()).find((p) => !before.includes(p)) ?? 0, {
    what: 'the stand-in decode running',
  });
  assert.equal(d.running, 1);
  assert.deepEqual(await pending, { kind: 'timeout' });
  assert.ok(gone(pid), `process ${pid} is gone`);
  assert.equal(d.running, 0);
});

test('an abort (the device went away) kills the decode at once; its process is gone', async () => {
  const { d } = decoder({ ffmpegPath: sleeper, timeoutMs: 60_000 });
  const before = await hanging();
  const ac = new AbortController();
  const pending = d.decode(JPEG, 'image/jpeg', ac.signal);
  const pid = await waitFor(async () => (await hanging()).find((p) => !before.includes(p)) ?? 0, {
    what: 'the stand-in decode running',
  });
  ac.abort();
  assert.deepEqual(await pending, { kind: 'aborted' });
  assert.ok(gone(pid), `process ${pid} is gone`);
});

test('past maxConcurrent decodes at once another is refused busy, without starting a process', async () => {
  const { d } = decoder({ ffmpegPath: sleeper, maxConcurrent: 1, timeoutMs: 60_000 });
  const ac = new AbortController();
  const first = d.decode(JPEG, 'image/jpeg', ac.signal);
  await waitFor(() => d.running === 1, { what: 'the first decode running' });
  const running = (await hanging()).length;
  assert.deepEqual(await d.decode(PNG, 'image/png', new AbortController().signal), { kind: 'busy' });
  assert.equal((await hanging()).length, running, 'no second process');
  ac.abort();
  assert.deepEqual(await first, { kind: 'aborted' });
  assert.equal(d.running, 0);
});

test('without ffmpeg: said once, and photos pass on their header check alone', async () => {
  const { d, logs } = decoder({ ffmpegPath: join(dir, 'no-such-ffmpeg') });
  assert.equal(await d.ready(), false);
  const never = new AbortController().signal;
  assert.deepEqual(await d.decode(JPEG, 'image/jpeg', never), { kind: 'unchecked' });
  assert.deepEqual(await d.decode(mangledScan(), 'image/jpeg', never), { kind: 'unchecked' });
  const said = logs.lines.filter((l) => String(l.msg).includes('ffmpeg is not available'));
  assert.equal(said.length, 1, 'one warning');
  assert.equal(said[0]?.level, 40);
});
