/**
 * @module Entry of one media worker thread: loads the VAD model and the espeak engine, then
 * serves the sessions pinned to it. Requests of one session run in the order they arrive (the
 * uplink chain is per session); a synthesis is synchronous and briefly holds up this worker's
 * other sessions, which is why frames are sent ahead of the device's playback.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from './thread-priority.ts';
import { toVoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { createThreadLogger } from '../../core/thread-logger.ts';
import { MediaCore, type CoreSession } from './media-core.ts';
import { packPackets, type FromWorker, type ToWorker, type WorkerData } from './worker-protocol.ts';

const port = parentPort;
if (!port) throw new Error('media-worker.ts must run as a worker thread');
const data = workerData as WorkerData;

function post(msg: FromWorker, transfer: ArrayBuffer[] = []): void {
  port?.postMessage(msg, transfer);
}

/** A Logger whose records go to the main thread's pino, under the session's logger when `sid` is bound. */
function workerLogger(bindings: Record<string, unknown>): Logger {
  return createThreadLogger(({ level, obj, msg, bindings: b }) => {
    const sid = typeof b['sid'] === 'number' ? b['sid'] : undefined;
    post({ op: 'log', ...(sid !== undefined ? { sid } : {}), level, obj, msg });
  }, bindings);
}

const core = new MediaCore(data.config, workerLogger({}));
if (data.nice > 0) {
  const applied = lowerThreadPriority(data.nice);
  if (!applied.ok) workerLogger({}).warn({ nice: data.nice, reason: applied.reason }, 'media worker priority not lowered');
}
const sessions = new Map<number, CoreSession>();
/** Per-session chain: uplink packets go through the (asynchronous) VAD strictly in order. */
const chains = new Map<number, Promise<unknown>>();

function fail(rid: number, err: unknown): void {
  const e = toVoiceError(err);
  post({ op: 'error', rid, message: e.message, code: e.code });
}

function session(sid: number): CoreSession {
  const s = sessions.get(sid);
  if (!s) throw new Error(`media session ${sid} is not open on this worker`);
  return s;
}

/**
 * Syntheses wait here and run one per macrotask, so uplink and encode requests (short) are served
 * between them, and first sentences (`urgent`) go before look-ahead ones: when fifty turns start at
 * once, each gets its first audio after fifty short syntheses, not behind others' later sentences.
 */
const speaks: Array<Extract<ToWorker, { op: 'speak' }>> = [];
let speakScheduled = false;

function scheduleSpeak(): void {
  if (speakScheduled || speaks.length === 0) return;
  speakScheduled = true;
  setImmediate(runSpeak);
}

function runSpeak(): void {
  speakScheduled = false;
  let i = speaks.findIndex((q) => q.urgent);
  if (i < 0) i = 0;
  const [m] = speaks.splice(i, 1);
  if (m) {
    try {
      session(m.sid).speak(m.text, (p) => {
        const packets = packPackets(p);
        post({ op: 'packets', rid: m.rid, packets, last: false }, [packets.bytes.buffer as ArrayBuffer]);
      });
      post({ op: 'done', rid: m.rid });
    } catch (err) {
      fail(m.rid, err);
    }
  }
  scheduleSpeak();
}

function handle(m: ToWorker): void {
  switch (m.op) {
    case 'open':
      core.openSession(m.opts).then(
        (s) => {
          sessions.set(m.sid, s);
          chains.set(m.sid, Promise.resolve());
          post({ op: 'done', rid: m.rid });
        },
        (err: unknown) => fail(m.rid, err),
      );
      return;
    case 'uplink': {
      const prev = chains.get(m.sid) ?? Promise.resolve();
      const next = prev.then(async () => {
        try {
          const r = await session(m.sid).uplink(m.packet);
          // The decoder's output may be a view of a larger buffer: transfer a tight copy.
          const pcm = r.pcm.byteOffset === 0 && r.pcm.byteLength === r.pcm.buffer.byteLength ? r.pcm : r.pcm.slice();
          post({ op: 'uplink', rid: m.rid, pcm, events: r.events, corrupt: r.corrupt }, [pcm.buffer as ArrayBuffer]);
        } catch (err) {
          fail(m.rid, err);
        }
      });
      chains.set(m.sid, next);
      return;
    }
    case 'resetVad': {
      // Ordered behind the uplink packets already queued for this session.
      const prev = chains.get(m.sid) ?? Promise.resolve();
      chains.set(m.sid, prev.then(() => sessions.get(m.sid)?.resetVad()));
      return;
    }
    case 'encode':
      try {
        const packets = packPackets(session(m.sid).encodeChunk(m.stream, m.pcm, m.final));
        post({ op: 'packets', rid: m.rid, packets, last: true }, [packets.bytes.buffer as ArrayBuffer]);
      } catch (err) {
        fail(m.rid, err);
      }
      return;
    case 'speak':
      speaks.push(m);
      scheduleSpeak();
      return;
    case 'cancel': {
      const i = speaks.findIndex((q) => q.rid === m.rid);
      if (i >= 0) {
        speaks.splice(i, 1);
        post({ op: 'done', rid: m.rid });
      }
      return;
    }
    case 'close': {
      // Syntheses still waiting for a closed session are dropped, and answered so the main
      // thread forgets them.
      for (let i = speaks.length - 1; i >= 0; i--) {
        const q = speaks[i];
        if (q?.sid !== m.sid) continue;
        speaks.splice(i, 1);
        post({ op: 'done', rid: q.rid });
      }
      const prev = chains.get(m.sid) ?? Promise.resolve();
      chains.delete(m.sid);
      void prev.then(() => {
        sessions.get(m.sid)?.close();
        sessions.delete(m.sid);
      });
      return;
    }
    case 'exit':
      // Between two macrotasks: never inside the Opus encoder or a synthesis.
      process.exit(0);
      return;
    case 'crash':
      throw new Error('media worker crash requested (test)');
  }
}

core
  .load()
  .then(() => core.warmUp())
  .then(
    () => {
      port.on('message', handle);
      post({ op: 'ready' });
    },
    (err: unknown) => {
      const e = toVoiceError(err);
      post({ op: 'loadFailed', message: e.message, code: e.code });
    },
  );
