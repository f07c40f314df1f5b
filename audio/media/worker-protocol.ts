/**
 * @module What a media worker serves the main thread, and the main thread a media worker, over
 * the worker RPC of `core/worker-rpc.ts`. Every call names the session (`sid`). PCM and packets
 * travel as transferred ArrayBuffers, never copied by structured clone.
 */
import type { EspeakVoice } from '../tts/espeak-wasm.ts';
import type { VadEvent } from '../vad/vad.ts';
import type { DownlinkFormat, MediaThreadConfig, SessionMediaOptions } from './media.ts';

/**
 * Binding of a worker's log records that belong to one session (its `sid`): the main thread
 * writes them through that session's logger, so they count against the session's log limit.
 */
export const SESSION_LOG_BINDING = 'mediaSid';

export interface WorkerData {
  config: MediaThreadConfig;
  /** The worker's place in the pool (its thread is named `xz-media-<index>`). */
  index: number;
  /** Scheduling niceness the thread gives itself (0 = unchanged). */
  nice: number;
}

export interface MediaWorkerApi {
  open: { params: { sid: number; opts: SessionMediaOptions }; result: void };
  uplink: {
    params: { sid: number; packet: Uint8Array };
    result: { pcm: Int16Array; events: VadEvent[]; corrupt: boolean };
  };
  /** Notification: ordered behind the uplink packets already sent. */
  resetVad: { params: { sid: number }; result: void };
  /**
   * One chunk of downlink stream `stream`, as bytes in `format` (PCM at the downlink rate when
   * unset): decoded, resampled, framed and encoded here.
   */
  encode: {
    params: { sid: number; stream: number; chunk: Uint8Array | null; final: boolean; format?: DownlinkFormat };
    result: PackedPackets;
  };
  /**
   * Packets as they are made, then the end. `urgent`: the first sentence of a turn (someone is
   * waiting for it), served before look-ahead. A cancelled synthesis is dropped, started or not.
   */
  speak: {
    params: { sid: number; text: string; urgent: boolean; voice?: EspeakVoice };
    result: void;
    item: PackedPackets;
  };
  /** Notification: the session's answer is held (not playing yet) or released (its pacer starts now). */
  hold: { params: { sid: number; held: boolean }; result: void };
  /** Notification: the session is gone; its syntheses still waiting end. */
  close: { params: { sid: number }; result: void };
}

export interface MediaMainApi {
  /**
   * The worker's espeak-ng engine needs a (new) helper process: answered with its FIFO directory.
   * The main thread spawns it, so that it owns and reaps it even if the worker dies, and stops
   * the one it gave before.
   */
  espeakHelper: { params: Record<string, never>; result: string };
}

/** Opus packets as one buffer plus lengths: one transfer instead of one clone per packet. */
export interface PackedPackets {
  bytes: Uint8Array;
  lengths: number[];
}

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
