/**
 * @module The UDP socket of the MQTT transport: every audio session's datagrams, both ways.
 * Each session (one per hello) gets a fresh AES key and nonce and an ssrc (nonce bytes 4–7) no
 * other live session has; incoming datagrams are routed by that ssrc. A datagram is dropped,
 * without touching its session, when it is too large or malformed, names an unknown ssrc,
 * replays a sequence that is not newer (or jumps implausibly far), or does not decrypt to an
 * Opus frame of the announced duration. The ssrc travels in clear, so where the device is
 * (the downlink's address, and whose sequences count) is never taken from one datagram: the
 * first address, like every later one (a NAT rebinding), is confirmed by consecutive sequences
 * that all decrypt to plausible frames, and a forger who got through anyway loses the session
 * to the device's own stream (see UdpAudio#receive).
 */
import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../core/logger.ts';
import { createLogRateLimit } from '../../core/log-rate-limit.ts';
import {
  openUdpPacket,
  plausibleOpusFrame,
  sealUdpPacket,
  UDP_AUDIO_TYPE,
  UDP_HEADER_BYTES,
  UDP_KEY_BYTES,
} from '../../protocol/udp-packet.ts';

/** Largest datagram read: a header and a 60 ms Opus frame at any bitrate the firmware uses, with room. */
export const MAX_DATAGRAM_BYTES = UDP_HEADER_BYTES + 4000;
/**
 * Largest forward jump of the uplink sequence accepted: the device numbers only what it sends, so
 * a loss never skips thousands; a forged datagram with a huge sequence would lock the real device out.
 */
export const MAX_SEQUENCE_JUMP = 10_000;

/**
 * Datagrams in a row (consecutive sequences, each a plausible frame, none failing between) from
 * one address before it counts as the device's: the first address, or a new one. Their frames
 * are held meanwhile and delivered once it is confirmed.
 */
export const MOVE_CONFIRMATIONS = 5;

/** Addresses a session follows at once as where the device may be; one more forgets the one heard from least recently. */
export const MAX_CANDIDATES = 4;

/** Why a datagram was dropped (the metric's label). */
export type UdpDropReason =
  | 'size'
  | 'short'
  | 'type'
  | 'length'
  | 'unknown_ssrc'
  | 'replay'
  | 'implausible'
  | 'unconfirmed';

export interface UdpAudioSessionOptions {
  /** The uplink frame duration the device announced in its hello. */
  frameDurationMs: number;
  /** One decrypted uplink Opus frame. */
  onAudio(opus: Buffer, timestamp: number): void;
  log: Logger;
}

/** An address whose datagrams pass every check: where the device may be (see UdpAudio#consider). */
export interface Candidate {
  host: string;
  port: number;
  /** Sequence of the chain's first datagram, and of its last. */
  firstSequence: number;
  lastSequence: number;
  /** The chain began ahead of the session's last accepted sequence (a move), not behind it (a taking back). */
  forward: boolean;
  /** Frames of the chain, delivered if the address is confirmed. */
  held: Array<{ opus: Buffer; timestamp: number }>;
}

/** One hello's audio: its crypto state, sequences and the device's current address. */
export class UdpAudioSession {
  readonly ssrc: number;
  readonly key: Buffer;
  readonly nonce: Buffer;
  readonly opts: UdpAudioSessionOptions;
  /** Last accepted uplink sequence (the device starts at 1). */
  lastSequence = 0;
  /** The confirmed address: downlink goes there, and its datagrams are accepted one by one. */
  address: { host: string; port: number } | undefined;
  /** First sequence of the chain that confirmed `address` (0: none yet). */
  tenureStart = 0;
  /** Highest sequence accepted before `address` was confirmed: anything up to it is a replay from anywhere else. */
  floor = 0;
  /** Sequences of a confirmed address that lost the session again (a forger's): never accepted from elsewhere. */
  burned: { from: number; to: number } | undefined;
  /** `address` sent a datagram that failed a check since it was confirmed: the real device never does. */
  contested = false;
  /** Addresses that may be the device's, least recently heard first (at most MAX_CANDIDATES). */
  readonly candidates = new Map<string, Candidate>();
  /** Downlink: the firmware drops a sequence that is not newer than the last, starting from 0. */
  downSequence = 0;
  /** Times the device's address changed (logged the first few times). */
  moves = 0;
  /** Downlink frames dropped because no confirmed address told us where the device is yet. */
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
    if (s.unaddressed > 0)
      s.opts.log.warn(
        { frames: s.unaddressed },
        'downlink audio dropped: no datagram from the device told where to send it',
      );
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
    const datagram = sealUdpPacket(
      s.key,
      {
        type: UDP_AUDIO_TYPE,
        flags: 0,
        ssrc: (s.ssrc ^ 0x80000000) >>> 0,
        timestamp: s.downSequence,
        sequence: s.downSequence,
      },
      opus,
    );
    this.#socket.send(datagram, s.address.port, s.address.host);
    return true;
  }

  #drop(reason: UdpDropReason): void {
    this.#opts.onDrop?.(reason);
  }

  /** Forgets a candidate; its held frames are dropped as unconfirmed. */
  #forget(s: UdpAudioSession, key: string): void {
    const c = s.candidates.get(key);
    if (!c) return;
    s.candidates.delete(key);
    for (let i = 0; i < c.held.length; i++) this.#drop('unconfirmed');
  }

  /**
   * A datagram of a known session that fails a check. From a candidate address it ends that
   * candidacy: the real device never sends one, while a forger's random payloads fail most of
   * the time, so it would need MOVE_CONFIRMATIONS passes with no failure between. From the
   * confirmed address (other than a replay, which a network may duplicate) it contests that
   * address: someone is forging from there, and the device may take the session back.
   */
  #reject(s: UdpAudioSession, host: string, port: number, reason: UdpDropReason): void {
    if (s.address && s.address.host === host && s.address.port === port) {
      if (reason !== 'replay') s.contested = true;
    } else {
      this.#forget(s, addressKey(host, port));
    }
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
    if (!plausibleOpusFrame(opened.payload, s.opts.frameDurationMs)) return this.#reject(s, host, port, 'implausible');
    const current = s.address;
    if (current && current.host === host && current.port === port) {
      if (sequence <= s.lastSequence || sequence - s.lastSequence > MAX_SEQUENCE_JUMP)
        return this.#reject(s, host, port, 'replay');
      // The device still sends from where it was: a chain ahead of it from elsewhere was not it.
      for (const [key, c] of s.candidates) if (c.forward) this.#forget(s, key);
      s.lastSequence = sequence;
      s.opts.onAudio(opened.payload, timestamp);
      return;
    }
    if (!this.#mayConsider(s, sequence)) return this.#reject(s, host, port, 'replay');
    this.#consider(s, host, port, sequence, opened.payload, timestamp);
  }

  /**
   * Whether a plausible datagram from an address other than the confirmed one may count towards
   * confirming it. Ahead of the last accepted sequence (within the jump limit): a move, or the
   * first address. Behind it: only where the device's own frames can be and no accepted one
   * was, so replayed captures never count: between `floor` and the start of the confirmed
   * address's chain (a forger that took the session ahead of the device), or above `floor` once
   * the confirmed address has sent something that failed (a forger that took it on the device's
   * own sequences, and pushes ahead). Never the sequences of an address that lost the session.
   */
  #mayConsider(s: UdpAudioSession, sequence: number): boolean {
    if (sequence <= s.floor) return false;
    if (s.burned && sequence >= s.burned.from && sequence <= s.burned.to) return false;
    if (sequence > s.lastSequence) return sequence - s.lastSequence <= MAX_SEQUENCE_JUMP;
    return sequence < s.tenureStart || s.contested;
  }

  /**
   * A datagram that passed every check from an address that is not the confirmed one. CTR
   * carries no tag, so one forged datagram passes the Opus check about one time in twenty: an
   * address is confirmed only after MOVE_CONFIRMATIONS datagrams in a row from it, sequences
   * consecutive, none failing between (`#reject`), and for a move ahead, none accepted from the
   * confirmed address meanwhile. A real device loses nothing (its frames are held, then
   * delivered); a forger must pass the check that many times running. Each address keeps its
   * own chain, so a forger's passes never reset the device's.
   */
  #consider(s: UdpAudioSession, host: string, port: number, sequence: number, opus: Buffer, timestamp: number): void {
    const key = addressKey(host, port);
    let c = s.candidates.get(key);
    if (c && sequence === c.lastSequence + 1) {
      c.lastSequence = sequence;
      c.held.push({ opus, timestamp });
      // Heard from most recently: last in the map.
      s.candidates.delete(key);
      s.candidates.set(key, c);
    } else {
      // Consecutive sequences only: a device numbers every frame it sends, a forger's passes come with gaps.
      this.#forget(s, key);
      if (s.candidates.size >= MAX_CANDIDATES) this.#forget(s, s.candidates.keys().next().value as string);
      c = {
        host,
        port,
        firstSequence: sequence,
        lastSequence: sequence,
        forward: sequence > s.lastSequence,
        held: [{ opus, timestamp }],
      };
      s.candidates.set(key, c);
    }
    if (c.held.length >= MOVE_CONFIRMATIONS) this.#confirm(s, key, c);
  }

  #confirm(s: UdpAudioSession, key: string, c: Candidate): void {
    const from = s.address;
    const takenBack = from !== undefined && !c.forward;
    if (takenBack) {
      // The address that loses the session sent forged frames: its sequences stay refused from
      // elsewhere, so replaying them cannot take the session again.
      s.burned = { from: s.tenureStart, to: s.lastSequence };
    } else {
      s.floor = s.lastSequence;
    }
    s.candidates.delete(key);
    for (const other of [...s.candidates.keys()]) this.#forget(s, other);
    s.address = { host: c.host, port: c.port };
    s.tenureStart = c.firstSequence;
    s.lastSequence = c.lastSequence;
    s.contested = false;
    if (from && ++s.moves <= 3) {
      const fields = { from: `${from.host}:${from.port}`, to: `${c.host}:${c.port}`, moves: s.moves };
      if (takenBack)
        s.opts.log.warn(
          fields,
          'device audio address taken back from an address that sent forged datagrams: downlink follows',
        );
      else s.opts.log.info(fields, 'device audio address changed: downlink follows');
    }
    for (const f of c.held) s.opts.onAudio(f.opus, f.timestamp);
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

/** One key per source address and port (IPv6 hosts hold colons). */
function addressKey(host: string, port: number): string {
  return `${host}|${port}`;
}
