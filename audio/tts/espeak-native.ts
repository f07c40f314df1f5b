/**
 * @module espeak-ng through the Debian library, in one long-lived helper process per media thread
 * (`native/espeak-pcm.c`, built by `scripts/setup.sh` and in the image). A short sentence costs
 * 2-3 ms there against 10-15 ms of the thread's own CPU with the WebAssembly build, and the
 * synthesis work leaves the worker thread; the helper also resamples to the rate asked for
 * (2.6 ms of JavaScript per short sentence, a fraction of that in C). Nothing is spawned per
 * sentence: the helper is started when the thread loads and serves all of its sentences.
 *
 * Two halves, because a child belongs to the thread that spawned it (only that thread's event
 * loop reaps it), and a media worker that crashes must not leave a zombie behind:
 * - `spawnEspeakHelper` starts and stops helper processes; the main thread calls it (the worker
 *   pool, once per worker, and again when a worker asks for a new helper), or the media thread
 *   itself when media runs in-process (`localHelperSource`);
 * - `startNativeEspeak` is the engine the media thread synthesises with. The engine interface is
 *   synchronous (a worker synthesises a sentence in one step and hands out its first frames from
 *   inside the call), so requests and answers go over two FIFOs that this thread opened itself and
 *   reads with blocking `readSync`: Node has no blocking read on a child's stdio pipes. A helper
 *   that dies ends its FIFO (end of file), so a read never waits on a dead process; the failed
 *   sentence throws and a new helper is asked for in the background. A request that takes the
 *   helper more than 20 s (a hung library) kills it (`alarm`).
 */
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { EspeakEngine, EspeakVoice } from './espeak-wasm.ts';

/** Where `scripts/setup.sh` and the image put the helper: `build/` at the project root (from sources or from `dist/`). */
const HELPER_CANDIDATES = ['../../build/espeak-pcm', '../../../build/espeak-pcm'].map((rel) =>
  fileURLToPath(new URL(rel, import.meta.url)),
);
/** The helper's start (library load, FIFOs) takes ~10 ms; this bounds a broken one. */
const START_TIMEOUT_MS = 5000;
/** A new helper is asked for at most this often. */
const RESTART_INTERVAL_MS = 1000;
/** How long `stop` waits for the killed helper to be reaped. */
const REAP_WAIT_MS = 1000;
/** One answer chunk is at most this large (the helper sends a few thousand samples at a time). */
const MAX_CHUNK_BYTES = 1 << 20;

/** The helper's path when it has been built, else undefined. */
export function nativeEspeakHelper(): string | undefined {
  for (const p of HELPER_CANDIDATES) {
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not at this place
    }
  }
  return undefined;
}

export interface NativeEspeakEngine extends EspeakEngine {
  /** Disconnects and closes the helper source (its helper is stopped). */
  close(): Promise<void>;
  /** Resamples PCM with the helper's resampler (tests compare it with audio/pcm/resample.ts). */
  resample(pcm: Int16Array, fromRate: number, toRate: number): Int16Array;
}

/** A running helper, owned by the thread that spawned it. */
export interface EspeakHelperProcess {
  /** Where its FIFOs are (`req`, `resp`): what a media thread connects to. */
  readonly dir: string;
  readonly pid: number | undefined;
  /** Kills it; resolves once it has exited (and was reaped) or after a second. */
  stop(): Promise<void>;
}

/** Where a media thread gets a fresh helper's directory; `close` stops the last one it gave. */
export interface EspeakHelperSource {
  next(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts one helper and waits until it has created its FIFOs. Rejects with a ProviderUnavailable
 * VoiceError when the helper is not built or does not start.
 */
export async function spawnEspeakHelper(opts: { nice?: number; log: Logger }): Promise<EspeakHelperProcess> {
  const path = nativeEspeakHelper();
  if (!path) throw new VoiceError(ErrorCode.ProviderUnavailable, 'espeak-ng helper not built (run scripts/setup.sh)');
  const nice = Math.max(0, Math.min(19, Math.round(opts.nice ?? 0)));
  const { log } = opts;
  const dir = mkdtempSync(join(tmpdir(), 'xiaozhi-espeak-'));
  // Its own process group: Ctrl-C in a terminal (or a signal to the group) must not kill the TTS
  // while the server drains. It still never outlives its thread (PR_SET_PDEATHSIG in the helper).
  const proc = spawn(path, [dir, String(nice)], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (line: string) => log.warn({ helper: line.trim().slice(0, 500) }, 'espeak-ng helper said'));
  const exited = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, REAP_WAIT_MS)))]);
    clearTimeout(timer);
    releaseFifos(dir);
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      const done = (err?: Error): void => {
        clearTimeout(timer);
        proc.stdout?.removeAllListeners('data');
        proc.removeListener('exit', onExit);
        if (err) reject(err);
        else resolve();
      };
      const onExit = (code: number | null): void =>
        done(new Error(`exited with ${code ?? 'a signal'} before it was ready`));
      proc.once('error', (err) => done(err));
      proc.once('exit', onExit);
      proc.stdout?.once('data', (b: Buffer) =>
        b.toString().startsWith('ready') ? done() : done(new Error(`unexpected answer '${b.toString().trim()}'`)),
      );
    });
    proc.stdout?.resume();
  } catch (err) {
    await stop();
    throw new VoiceError(
      ErrorCode.ProviderUnavailable,
      `espeak-ng helper ${path} did not start: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  // A helper that dies before both ends are open would leave its connecting thread blocked in
  // open(): opening the other ends (without blocking) releases it, and the read then sees the end.
  proc.once('exit', () => releaseFifos(dir));
  return { dir, pid: proc.pid, stop };
}

/** Opens the FIFOs' other ends without blocking (releasing a blocked opener), then removes them. */
function releaseFifos(dir: string): void {
  for (const [name, flags] of [
    ['req', constants.O_RDONLY | constants.O_NONBLOCK],
    ['resp', constants.O_WRONLY | constants.O_NONBLOCK],
  ] as const) {
    try {
      closeSync(openSync(join(dir, name), flags));
    } catch {
      // gone already (the helper removes them once connected), or nobody waits on it
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Helpers spawned by the calling thread itself (media in-process, tests): one at a time. */
export function localHelperSource(opts: { nice?: number; log: Logger }): EspeakHelperSource {
  let current: EspeakHelperProcess | undefined;
  let closed = false;
  return {
    async next() {
      if (closed) throw new VoiceError(ErrorCode.ProviderUnavailable, 'espeak-ng engine closed');
      await current?.stop();
      current = await spawnEspeakHelper(opts);
      return current.dir;
    },
    async close() {
      closed = true;
      await current?.stop();
      current = undefined;
    },
  };
}

interface Connection {
  req: number;
  resp: number;
}

/** Opens a helper's FIFOs: it waits in open() on both, so these meet it at once. */
function connect(dir: string): Connection {
  const req = openSync(join(dir, 'req'), 'w');
  try {
    return { req, resp: openSync(join(dir, 'resp'), 'r') };
  } catch (err) {
    closeSync(req);
    throw err;
  }
}

function disconnect(c: Connection): void {
  for (const fd of [c.req, c.resp]) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }
}

/**
 * Starts the native engine on a helper from `helpers`, and reads the voices it knows. Rejects
 * with a ProviderUnavailable VoiceError when no helper can be had.
 */
export async function startNativeEspeak(opts: {
  helpers: EspeakHelperSource;
  log: Logger;
}): Promise<NativeEspeakEngine> {
  const { helpers, log } = opts;
  let conn: Connection | undefined = connect(await helpers.next());
  let restarting: Promise<void> | undefined;
  let closed = false;
  const head = Buffer.alloc(4);

  let lastRestartAt = -Infinity;
  let restartTimer: NodeJS.Timeout | undefined;
  /**
   * Asks for a new helper, at most once per `RESTART_INTERVAL_MS`: a helper that keeps dying
   * must not become a process per sentence. Also called when a sentence finds no helper (an
   * earlier restart failed), so the engine keeps trying instead of staying without one.
   */
  const restart = (why: string): void => {
    if (conn) disconnect(conn);
    conn = undefined;
    if (closed || restarting) return;
    const wait = Math.max(0, lastRestartAt + RESTART_INTERVAL_MS - performance.now());
    log.error({ why, inMs: Math.round(wait) }, 'espeak-ng helper failed; starting a new one');
    restarting = new Promise<void>((resolve) => {
      restartTimer = setTimeout(resolve, wait);
    })
      .then(() => {
        lastRestartAt = performance.now();
        return closed ? undefined : helpers.next();
      })
      .then(
        (dir) => {
          restarting = undefined;
          if (dir === undefined || closed) return;
          try {
            conn = connect(dir);
          } catch (err) {
            log.error({ err }, 'espeak-ng helper could not be connected');
          }
        },
        (err: unknown) => {
          restarting = undefined;
          log.error({ err }, 'espeak-ng helper did not restart');
        },
      );
  };

  const readExactly = (h: Connection, buf: Buffer, n: number): void => {
    let got = 0;
    while (got < n) {
      const r = readSync(h.resp, buf, got, n - got, null);
      if (r === 0) throw new Error('the helper ended');
      got += r;
    }
  };

  /** Sends one request; hands each answer chunk to `onChunk`. */
  const call = (
    kind: 'S' | 'V' | 'R',
    voice: EspeakVoice,
    text: string | Buffer,
    onChunk: (b: Buffer) => void,
    outRate = 0,
  ): void => {
    const h = conn;
    if (!h) {
      if (!closed) restart('no helper');
      throw new VoiceError(
        ErrorCode.ProviderUnavailable,
        closed ? 'espeak-ng engine closed' : 'espeak-ng helper is restarting',
      );
    }
    const v = Buffer.from(voice.voice, 'utf8');
    const t = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    if (v.length >= 256)
      throw new VoiceError(ErrorCode.ConfigInvalid, `espeak-ng voice name too long: ${voice.voice.slice(0, 40)}…`);
    const msg = Buffer.alloc(24 + v.length + t.length);
    msg.writeUInt32LE(kind.charCodeAt(0), 0);
    msg.writeUInt32LE(Math.round(voice.speed ?? 175), 4); // 'R': the input rate
    msg.writeUInt32LE(Math.round(voice.pitch ?? 50), 8);
    msg.writeUInt32LE(v.length, 12);
    msg.writeUInt32LE(t.length, 16);
    msg.writeUInt32LE(outRate, 20);
    v.copy(msg, 24);
    t.copy(msg, 24 + v.length);
    let status = 0;
    try {
      writeSync(h.req, msg);
      for (;;) {
        readExactly(h, head, 4);
        const n = head.readInt32LE(0);
        if (n <= 0) {
          status = n;
          break;
        }
        if (n > MAX_CHUNK_BYTES) throw new Error(`answer chunk of ${n} bytes`);
        const chunk = Buffer.allocUnsafe(n);
        readExactly(h, chunk, n);
        onChunk(chunk);
      }
    } catch (err) {
      restart(err instanceof Error ? err.message : String(err));
      throw new VoiceError(
        ErrorCode.ProviderFailed,
        `espeak-ng helper failed: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    if (status === -2)
      throw new VoiceError(
        ErrorCode.ConfigInvalid,
        `espeak-ng voice '${voice.voice}' does not exist (see \`espeak-ng --voices\`)`,
      );
    if (status === -3)
      throw new VoiceError(ErrorCode.ConfigInvalid, `espeak-ng helper cannot resample to ${outRate} Hz`);
    if (status < 0) throw new VoiceError(ErrorCode.ProviderFailed, 'espeak-ng could not synthesise the text');
  };

  const names: Buffer[] = [];
  try {
    call('V', { voice: '' }, '', (b) => names.push(b));
  } catch (err) {
    // The engine is never handed out: nothing may keep (or restart) its helper.
    closed = true;
    if (conn) disconnect(conn);
    await helpers.close();
    throw new VoiceError(
      ErrorCode.ProviderUnavailable,
      `espeak-ng helper does not answer: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const known = new Set(
    Buffer.concat(names)
      .toString('utf8')
      .split('\0')
      .filter((n) => n.length > 0)
      .map((n) => n.toLowerCase()),
  );

  const close = (): Promise<void> => {
    closed = true;
    clearTimeout(restartTimer);
    process.removeListener('exit', close);
    if (conn) disconnect(conn);
    conn = undefined;
    return helpers.close();
  };
  // A thread that ends without closing (a crash) must not keep the FIFOs open in the process.
  process.once('exit', close);

  return {
    sampleRate: 22050,
    resamples: true,
    knownVoices: () => known,
    synthesize(text, voice, onChunk, outRate) {
      const rate = outRate === undefined || outRate === 22050 ? 0 : outRate;
      if (!Number.isInteger(rate) || rate < 0 || rate > 192_000)
        throw new VoiceError(ErrorCode.ConfigInvalid, `espeak-ng: output rate ${outRate} Hz`);
      call(
        'S',
        voice,
        text,
        (b) => {
          // An odd byte count cannot happen (whole samples); keep the view aligned regardless.
          const samples = new Int16Array(b.buffer, b.byteOffset, b.byteLength >> 1);
          if (samples.length > 0) onChunk(b.byteOffset % 2 === 0 ? samples : samples.slice());
        },
        rate,
      );
    },
    resample(pcm, fromRate, toRate) {
      const out: Buffer[] = [];
      const bytes = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
      call('R', { voice: '', speed: fromRate }, bytes, (b) => out.push(b), toRate);
      const all = Buffer.concat(out);
      return new Int16Array(all.buffer, all.byteOffset, all.byteLength >> 1).slice();
    },
    close,
  };
}
