/**
 * @module Entry of one media worker thread: loads the VAD model and the espeak engine, then
 * serves the sessions pinned to it. Requests of one session run in the order they arrive (the
 * uplink chain is per session); syntheses are cut into slices of a few frames, served by
 * deadline, so no session's sentence holds up the others' for long.
 */
import { workerData } from 'node:worker_threads';
import { nameThisThread } from '../../core/thread-name.ts';
import { lowerThreadPriority } from './thread-priority.ts';
import { workerRpcThread } from '../../core/worker-rpc-thread.ts';
import { Moved, type RpcCall, type RpcHandlers } from '../../core/worker-rpc-peer.ts';
import { MediaCore, type CoreSession, type SpeechJob } from './media-core.ts';
import type { EspeakHelperSource } from '../tts/espeak-native.ts';
import type { EspeakVoice } from '../tts/espeak-wasm.ts';
import { FRAME_MS } from './media.ts';
import { rampSendTime } from '../pacer/pacer.ts';
import {
  packPackets,
  SESSION_LOG_BINDING,
  type MediaMainApi,
  type MediaWorkerApi,
  type PackedPackets,
  type WorkerData,
} from './worker-protocol.ts';

const rpc = workerRpcThread<MediaWorkerApi, MediaMainApi>();
const data = workerData as WorkerData;

/** Helper processes come from the main thread, which owns them (see `espeak-native.ts`). */
const espeakHelpers: EspeakHelperSource = {
  next: () => rpc.request('espeakHelper', {}),
  // The main thread stops this worker's helper when the worker exits.
  close: async () => {},
};
const core = new MediaCore(data.config, rpc.log, { espeakHelpers });
nameThisThread(`xz-media-${data.index}`);
if (data.nice > 0) {
  const applied = lowerThreadPriority(data.nice);
  if (!applied.ok) rpc.log.warn({ nice: data.nice, reason: applied.reason }, 'media worker priority not lowered');
}
const sessions = new Map<number, CoreSession>();
/** Per-session chain: uplink packets go through the (asynchronous) VAD strictly in order. */
const chains = new Map<number, Promise<unknown>>();

function session(sid: number): CoreSession {
  const s = sessions.get(sid);
  if (!s) throw new Error(`media session ${sid} is not open on this worker`);
  return s;
}

/**
 * Syntheses are served by deadline, a few frames at a time, one slice per macrotask (uplink and
 * encode requests, which are short, run between slices). A sentence's text becomes PCM in its
 * first slice (espeak and resampling, most of its cost); its Opus frames are then encoded a
 * little before the pacer will send them (earliest deadline first):
 * - the first sentence of a turn (`urgent`) is due NEW_ANSWER_HEAD_START_MS before it arrives,
 *   and its first slice is the whole send-ahead;
 * - after that, frame n of the turn is due ENCODE_AHEAD_MS before the pacer may send it, on the
 *   pacer's schedule (`rampSendTime`: the pre-buffer at once, then the lead built up at twice
 *   real time, then real time).
 * So when fifty turns start together every device gets its first audio after fifty short slices,
 * not behind others' whole sentences or frames nobody needs yet, and no started answer runs dry
 * while others start. Measured (BENCHMARKS.md): with the lead sent at once, a 600 ms margin and
 * a 200 ms grace for new answers, the last first sentence of a 50-device burst waited ~400 ms in
 * its worker. A 200 ms margin halved that but let a competing CPU burst (a compile) dry devices
 * out at 50 and doubled late intervals at 100; 400 keeps most of the gain without either.
 */
interface SpeakTask {
  sid: number;
  text: string;
  urgent: boolean;
  /** The voice asked for; default the thread's. */
  voice: EspeakVoice | undefined;
  /** Sends packets to the caller. */
  call: RpcCall<PackedPackets>;
  /** Ends the call: done (no error), or failed. */
  end(err?: unknown): void;
  job?: SpeechJob;
  due: number;
  /** Arrival order: ties go to the older request. */
  seq: number;
}
/** The downlink of a session's current turn: when its first frames left and how many since. */
interface TurnClock {
  startedAt: number;
  frames: number;
}
const SLICE_FRAMES = 5;
/**
 * Frames are ready this long before the pacer may send them: covers the trip to the main thread,
 * the next sentence's request (sent when this one is done) and moments when other processes
 * take the cores.
 */
const ENCODE_AHEAD_MS = 400;
/**
 * A device waiting for a new answer has nothing to play, while a started answer whose next frame
 * the pacer sends in more than ENCODE_AHEAD_MS − this (200 ms) still has time: so a new answer's
 * first slice goes ahead of such frames. Measured at 50 devices in three interleaved rounds
 * (BENCHMARKS.md): late intervals 1.3–1.6 → 0.8–0.9 % in the first burst and 0.9–1.2 → 0.3–0.8 %
 * once warm, p95 first frame 50–140 ms lower; at 100 devices without admission control late rose
 * 2.7–3.5 → 4.7–5.1 % (still no gap), which is where `server.maxSessions` belongs.
 */
const NEW_ANSWER_HEAD_START_MS = 200;
const preMs = Math.max(1, data.config.preBufferFrames ?? 3) * FRAME_MS;
const leadMs = Math.max(preMs, data.config.sendAheadMs ?? 600);
const leadFrames = Math.max(1, Math.round(leadMs / FRAME_MS));
const speaks: SpeakTask[] = [];
const clocks = new Map<number, TurnClock>();
/** Sessions whose answer is held (an early start): nothing beyond a first slice is due yet. */
const held = new Set<number>();
let speakSeq = 0;
let speakScheduled = false;

function dueOf(sid: number, now: number): number {
  const c = clocks.get(sid);
  if (!c) return now;
  if (held.has(sid)) return Infinity;
  return c.startedAt + rampSendTime(c.frames, preMs, leadMs, FRAME_MS) - ENCODE_AHEAD_MS;
}

function scheduleSpeak(): void {
  if (speakScheduled || speaks.length === 0) return;
  speakScheduled = true;
  setImmediate(runSpeak);
}

function nextTask(): SpeakTask | undefined {
  let best = -1;
  for (let i = 0; i < speaks.length; i++) {
    const t = speaks[i] as SpeakTask;
    const b = speaks[best];
    if (!b || t.due < b.due || (t.due === b.due && t.seq < b.seq)) best = i;
  }
  return speaks[best];
}

function removeTask(task: SpeakTask): void {
  const i = speaks.indexOf(task);
  if (i >= 0) speaks.splice(i, 1);
}

function finishTask(task: SpeakTask): void {
  removeTask(task);
  task.end();
}

function runSpeak(): void {
  speakScheduled = false;
  const task = nextTask();
  if (task) {
    const { sid } = task;
    try {
      const postSlice = (p: Buffer[]): void => {
        const now = performance.now();
        const clock = clocks.get(sid);
        if (clock) clock.frames += p.length;
        else clocks.set(sid, { startedAt: now, frames: p.length });
        const packets = packPackets(p);
        task.call.send(packets, [packets.bytes.buffer as ArrayBuffer]);
        task.due = dueOf(sid, now);
      };
      if (task.job) {
        const p = task.job.take(SLICE_FRAMES);
        if (p.length > 0) postSlice(p);
      } else {
        // The first slice leaves while espeak-ng is still speaking the rest of the sentence.
        const first = clocks.has(sid) ? SLICE_FRAMES : leadFrames;
        task.job = session(sid).startSpeech(task.text, first, postSlice, task.voice) ?? undefined;
      }
      if (!task.job || task.job.finished) finishTask(task);
    } catch (err) {
      removeTask(task);
      task.end(err);
    }
  }
  scheduleSpeak();
}

const handlers: RpcHandlers<MediaWorkerApi> = {
  open: async ({ sid, opts }) => {
    sessions.set(sid, await core.openSession(opts, rpc.log.child({ [SESSION_LOG_BINDING]: sid })));
    chains.set(sid, Promise.resolve());
  },
  uplink: ({ sid, packet }) => {
    const prev = chains.get(sid) ?? Promise.resolve();
    const next = prev.then(() => session(sid).uplink(packet));
    chains.set(
      sid,
      next.catch(() => undefined),
    );
    return next.then((r) => {
      // The decoder's output may be a view of a larger buffer: transfer a tight copy.
      const pcm = r.pcm.byteOffset === 0 && r.pcm.byteLength === r.pcm.buffer.byteLength ? r.pcm : r.pcm.slice();
      return new Moved({ pcm, events: r.events, corrupt: r.corrupt }, [pcm.buffer as ArrayBuffer]);
    });
  },
  resetVad: ({ sid }) => {
    // Ordered behind the uplink packets already queued for this session.
    const prev = chains.get(sid) ?? Promise.resolve();
    chains.set(
      sid,
      prev.then(() => sessions.get(sid)?.resetVad()),
    );
  },
  encode: ({ sid, stream, chunk, final, format }) => {
    const packets = packPackets(session(sid).encodeChunk(stream, chunk, final, format));
    return new Moved(packets, [packets.bytes.buffer as ArrayBuffer]);
  },
  speak: ({ sid, text, urgent, voice }, call) =>
    new Promise<void>((resolve, reject) => {
      const now = performance.now();
      // A turn's first sentence starts the turn's clock again.
      if (urgent) clocks.delete(sid);
      const due = urgent ? now - NEW_ANSWER_HEAD_START_MS : dueOf(sid, now);
      const task: SpeakTask = {
        sid,
        text,
        urgent,
        voice,
        call,
        end: (err) => (err === undefined ? resolve() : reject(err)),
        due,
        seq: speakSeq++,
      };
      speaks.push(task);
      // Cancelled (barge-in), started or not: what is left of it is dropped.
      call.signal.addEventListener('abort', () => finishTask(task), { once: true });
      scheduleSpeak();
    }),
  hold: ({ sid, held: isHeld }) => {
    if (isHeld) {
      held.add(sid);
      return;
    }
    if (!held.delete(sid)) return;
    // The pacer starts now: the frames already made are the ones it sends first.
    const now = performance.now();
    const c = clocks.get(sid);
    if (c) c.startedAt = now;
    // Started sentences and look-ahead ones follow the clock again; an unstarted first sentence keeps its head start.
    for (const t of speaks) if (t.sid === sid && (t.job || !t.urgent)) t.due = dueOf(sid, now);
    scheduleSpeak();
  },
  close: ({ sid }) => {
    // Syntheses still waiting for a closed session are dropped, and answered so the main
    // thread forgets them.
    for (const q of speaks.filter((t) => t.sid === sid)) finishTask(q);
    clocks.delete(sid);
    held.delete(sid);
    const prev = chains.get(sid) ?? Promise.resolve();
    chains.delete(sid);
    void prev.then(() => {
      sessions.get(sid)?.close();
      sessions.delete(sid);
    });
  },
};

core
  .load()
  .then(() => core.warmUp())
  .then(
    // Asked to exit: the TTS engine is closed first (the main thread reaps its helper).
    () => rpc.serve(handlers, () => core.close()),
    (err: unknown) => rpc.failed(err),
  );
