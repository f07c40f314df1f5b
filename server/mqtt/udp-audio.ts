/**
 * @module The UDP socket of the MQTT transport: every audio session's datagrams, both ways.
 * Each session (one per hello) gets a fresh AES key and nonce and an ssrc (nonce bytes 4–7) no
 * other live session has; incoming datagrams are routed by that ssrc. A datagram is dropped,
 * without touching its session, when it is too large or malformed, names an unknown ssrc,
 * replays a sequence that is not newer (or jumps implausibly far), or does not decrypt to an
 * Opus frame of the announced duration. The device's address is learned from its first accepted
 * datagram and follows it when accepted ones keep coming from elsewhere (a NAT rebinding).
 */
import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import { openUdpPacket, plausibleOpusFrame, sealUdpPacket, UDP_AUDIO_TYPE, UDP_HEADER_BYTES, UDP_KEY_BYTES } from '../../protocol/udp-packet.ts';

/** Largest datagram read: a header and a 60 ms Opus frame at any bitrate the firmware uses, with room. */
export const MAX_DATAGRAM_BYTES = UDP_HEADER_BYTES + 4000;
/**
 * Largest forward jump of the uplink sequence accepted: the device numbers only what it sends, so
 * a loss never skips thousands; a forged datagram with a huge sequence would lock the real device out.
 */
export const MAX_SEQUENCE_JUMP = 10_000;

/** Datagrams in a row from a new address before the device counts as moved there (a NAT rebinding). */
export const MOVE_CONFIRMATIONS = 5;

/** Why a datagram was dropped (the metric's label). */
export type UdpDropReason = 'size' | 'short' | 'type' | 'length' | 'unknown_ssrc' | 'replay' | 'implausible' | 'unconfirmed';

export interface UdpAudioSessionOptions {
  /** The uplink frame duration the device announced in its hello. */
  frameDurationMs: number;
  /** One decrypted uplink Opus frame. */
  onAudio(opus: Buffer, timestamp: number): void;
  log: Logger;
}

/** One hello's audio: its crypto state, sequences and the device's current address. */
export class UdpAudioSession {
  readonly ssrc: number;
  readonly key: Buffer;
  readonly nonce: Buffer;
  readonly opts: UdpAudioSessionOptions;
  /** Last accepted uplink sequence (the device starts at 1). */
  lastSequence = 0;
  address: { host: string; port: number } | undefined;
  /** Another address whose datagrams pass every check: where the device may have moved (see #confirmMove). */
  candidate: { host: string; port: number; lastSequence: number; count: number } | undefined;
  /** Downlink: the firmware drops a sequence that is not newer than the last, starting from 0. */
  downSequence = 0;
  /** Times the device's address changed (logged the first few times). */
  moves = 0;
  /** Downlink frames dropped because no uplink datagram has told us where the device is yet. */
  unaddressed = 0;
  closed = false;

  constructor(ssrc: number, opts: UdpAudioSessionOptions) {
    this.ssrc = ssrc;
    this.key = randomBytes(UDP_KEY_BYTES);
    // The device keeps bytes 0-1 (type, flags) and 4-7 (ssrc) of the nonce in every header it sends.
    const nonce = randomBytes(UDP_HEADER_BYTES);
    nonce[0] = UDP_AUDIO_TYPE;
    nonce[1] = 0;
    nonce.writeUInt16BE(0, 2);
    nonce.writeUInt32BE(ssrc, 4);
    this.nonce = nonce;
    this.opts = opts;
  }
}

export interface UdpAudioOptions {
  host: string;
  port: number;
  log: Logger;
  /** Told about every dropped datagram (metrics). */
  onDrop?: (reason: UdpDropReason) => void;
}

export class UdpAudio {
  readonly #opts: UdpAudioOptions;
  readonly #socket: Socket;
  readonly #sessions = new Map<number, UdpAudioSession>();
  readonly #warn = createLogRateLimit({ perSecond: 1, burst: 3 });
  #port = 0;

  constructor(opts: UdpAudioOptions) {
    this.#opts = opts;
    const ipv6 = opts.host.includes(':');
    this.#socket = createSocket({ type: ipv6 ? 'udp6' : 'udp4', reuseAddr: false });
    this.#socket.on('message', (msg, rinfo) => this.#receive(msg, rinfo.address, rinfo.port));
    this.#socket.on('error', (err) => this.#warn.wrap(opts.log).warn({ err: err.message }, 'UDP socket error'));
  }

  /** Binds the socket; resolves with the bound port. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.#socket.once('error', onError);
      this.#socket.bind(this.#opts.port, this.#opts.host, () => {
        this.#socket.off('error', onError);
        this.#port = this.#socket.address().port;
        resolve(this.#port);
      });
    });
  }

  get port(): number {
    return this.#port;
  }

  get sessions(): number {
    return this.#sessions.size;
  }

  /** A new audio session with its own key, nonce and ssrc. */
  open(opts: UdpAudioSessionOptions): UdpAudioSession {
    let ssrc = randomBytes(4).readUInt32BE(0);
    while (ssrc === 0 || this.#sessions.has(ssrc)) ssrc = randomBytes(4).readUInt32BE(0);
    const s = new UdpAudioSession(ssrc, opts);
    this.#sessions.set(ssrc, s);
    return s;
  }

  release(s: UdpAudioSession): void {
    if (s.closed) return;
    s.closed = true;
    if (s.unaddressed > 0) s.opts.log.warn({ frames: s.unaddressed }, 'downlink audio dropped: no datagram from the device told where to send it');
    if (this.#sessions.get(s.ssrc) === s) this.#sessions.delete(s.ssrc);
  }

  /**
   * Sends one downlink Opus frame. Its header carries the ssrc with the top bit flipped, so no
   * counter block of the downlink ever equals one of the device's uplink (same key, else the same
   * keystream twice), and a timestamp that grows by one per frame, so no two downlink packets
   * share counter blocks either. The device checks only type, length and sequence.
   */
  send(s: UdpAudioSession, opus: Uint8Array): boolean {
    if (s.closed) return false;
    if (!s.address) {
      s.unaddressed++;
      return false;
    }
    s.downSequence++;
    const datagram = sealUdpPacket(s.key, { type: UDP_AUDIO_TYPE, flags: 0, ssrc: (s.ssrc ^ 0x80000000) >>> 0, timestamp: s.downSequence, sequence: s.downSequence }, opus);
    this.#socket.send(datagram, s.address.port, s.address.host);
    return true;
  }

  #drop(reason: UdpDropReason): void {
    this.#opts.onDrop?.(reason);
  }

  /**
   * A datagram of a known session that fails a check. From the address the device may be moving
   * to, it ends that candidacy: the real device never sends one, while a forger's random payloads
   * fail most of the time, so it would need MOVE_CONFIRMATIONS passes with no failure between.
   */
  #reject(s: UdpAudioSession, host: string, port: number, reason: UdpDropReason): void {
    if (s.candidate && s.candidate.host === host && s.candidate.port === port) s.candidate = undefined;
    this.#drop(reason);
  }

  #receive(msg: Buffer, host: string, port: number): void {
    if (msg.length > MAX_DATAGRAM_BYTES) return this.#drop('size');
    if (msg.length < UDP_HEADER_BYTES) return this.#drop('short');
    const s = this.#sessions.get(msg.readUInt32BE(4));
    if (!s) return this.#drop('unknown_ssrc');
    const opened = openUdpPacket(s.key, msg);
    if (!opened.ok) return this.#reject(s, host, port, opened.reason);
    const { sequence, timestamp } = opened.header;
    if (sequence <= s.lastSequence || sequence - s.lastSequence > MAX_SEQUENCE_JUMP) return this.#reject(s, host, port, 'replay');
    if (!plausibleOpusFrame(opened.payload, s.opts.frameDurationMs)) return this.#reject(s, host, port, 'implausible');
    const current = s.address;
    if (!current) {
      s.address = { host, port };
    } else if (current.host === host && current.port === port) {
      // The device still sends from where it was: whatever came from elsewhere was not it.
      s.candidate = undefined;
    } else if (!this.#confirmMove(s, host, port, sequence)) {
      return this.#drop('unconfirmed');
    }
    s.lastSequence = sequence;
    s.opts.onAudio(opened.payload, timestamp);
  }

  /**
   * A datagram that passed every check from an address other than the device's. CTR carries no
   * tag, so one forged datagram passes the Opus check about one time in twenty: the downlink
   * moves (and the uplink sequence with it) only after MOVE_CONFIRMATIONS datagrams in a row,
   * sequences increasing, from that one address, with none from the old address and no failed
   * one from the new address in between (`#reject`). A real rebinding loses that many frames
   * once; a forger must pass the check that many times running, between two of the device's own
   * datagrams, with nothing failing.
   */
  #confirmMove(s: UdpAudioSession, host: string, port: number, sequence: number): boolean {
    const c = s.candidate;
    // Consecutive sequences only: a device numbers every frame it sends, a forger's passes come with gaps.
    if (c && c.host === host && c.port === port && sequence === c.lastSequence + 1) {
      c.lastSequence = sequence;
      c.count++;
    } else {
      s.candidate = { host, port, lastSequence: sequence, count: 1 };
    }
    if ((s.candidate?.count ?? 0) < MOVE_CONFIRMATIONS) return false;
    const from = s.address;
    s.candidate = undefined;
    s.address = { host, port };
    if (from && ++s.moves <= 3) s.opts.log.info({ from: `${from.host}:${from.port}`, to: `${host}:${port}`, moves: s.moves }, 'device audio address changed: downlink follows');
    return true;
  }

  close(): Promise<void> {
    for (const s of this.#sessions.values()) s.closed = true;
    this.#sessions.clear();
    return new Promise((resolve) => {
      try {
        this.#socket.close(() => resolve());
      } catch {
        // Never bound, or already closed.
        resolve();
      }
    });
  }
}
