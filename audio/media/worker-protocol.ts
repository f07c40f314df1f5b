/**
 * @module Messages between the main thread and a media worker. Every request names the session
 * (`sid`); those expecting an answer carry a request id (`rid`). PCM and packets travel as
 * transferred ArrayBuffers, never copied by structured clone.
 */
import type { ThreadLogLevel } from '../../core/thread-logger.ts';
import type { VadEvent } from '../vad/vad.ts';
import type { MediaThreadConfig, SessionMediaOptions } from './media.ts';

export interface WorkerData {
  config: MediaThreadConfig;
  /** The worker's place in the pool (its thread is named `xz-media-<index>`). */
  index: number;
  /** Scheduling niceness the thread gives itself (0 = unchanged). */
  nice: number;
}

export type ToWorker =
  | { op: 'open'; rid: number; sid: number; opts: SessionMediaOptions }
  | { op: 'uplink'; rid: number; sid: number; packet: Uint8Array }
  | { op: 'resetVad'; sid: number }
  | { op: 'encode'; rid: number; sid: number; stream: number; pcm: Int16Array | null; final: boolean }
  /** `urgent`: the first sentence of a turn (someone is waiting for it); served before look-ahead. */
  | { op: 'speak'; rid: number; sid: number; text: string; urgent: boolean }
  /** The session's answer is held (not playing yet) or released (its pacer starts now). */
  | { op: 'hold'; sid: number; held: boolean }
  /** The consumer stopped listening (barge-in): drop the request if it has not started. */
  | { op: 'cancel'; rid: number }
  | { op: 'close'; sid: number }
  /** Ends the worker thread between two pieces of work (shutdown, recycle). */
  | { op: 'exit' }
  /** Tests only: makes the worker throw from its message handler (a crash). */
  | { op: 'crash' }
  /** A fresh espeak-ng helper for the worker (its FIFO directory), or why there is none. */
  | { op: 'espeakHelper'; hid: number; dir?: string; message?: string; code?: string };

/** Opus packets as one buffer plus lengths: one transfer instead of one clone per packet. */
export interface PackedPackets {
  bytes: Uint8Array;
  lengths: number[];
}

export type FromWorker =
  | { op: 'ready' }
  | { op: 'loadFailed'; message: string; code: string }
  | { op: 'done'; rid: number }
  | { op: 'uplink'; rid: number; pcm: Int16Array; events: VadEvent[]; corrupt: boolean }
  /** Packets of an `encode` or `speak` request; `last` ends the answer. */
  | { op: 'packets'; rid: number; packets: PackedPackets; last: boolean }
  | { op: 'error'; rid: number; message: string; code: string }
  /** A log record from the worker, re-logged by the main thread (under the session's logger when `sid` is set). */
  | { op: 'log'; sid?: number; level: ThreadLogLevel; obj: Record<string, unknown>; msg: string }
  /**
   * The worker's espeak-ng engine needs a (new) helper process. The main thread spawns it, so
   * that it owns and reaps it even if the worker dies, and stops the one it gave before.
   */
  | { op: 'espeakHelper'; hid: number };


export function packPackets(packets: readonly Buffer[]): PackedPackets {
  let total = 0;
  for (const p of packets) total += p.byteLength;
  const bytes = new Uint8Array(total);
  const lengths: number[] = [];
  let at = 0;
  for (const p of packets) {
    bytes.set(p, at);
    at += p.byteLength;
    lengths.push(p.byteLength);
  }
  return { bytes, lengths };
}

export function unpackPackets(p: PackedPackets): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const n of p.lengths) {
    out.push(Buffer.from(p.bytes.buffer, p.bytes.byteOffset + at, n));
    at += n;
  }
  return out;
}
