/**
 * @module The largest MQTT packet a client may send, enforced before the broker parses it. The
 * broker's parser buffers a packet until its declared length has arrived, so without this a
 * stranger announcing a 256 MB packet would make the process hold whatever it trickles in.
 * `PacketSizeLimit` follows the fixed headers through the byte stream (pure); `limitConnection`
 * puts it between a socket and the broker.
 */
import { Duplex } from 'node:stream';
import type { Socket } from 'node:net';

export class PacketSizeLimit {
  readonly #max: number;
  /** 0: at a packet's first byte; 1: in its length; 2: in its body. */
  #state: 0 | 1 | 2 = 0;
  #length = 0;
  #lengthBytes = 0;
  #left = 0;

  /** `max`: the largest remaining length (the bytes after the fixed header) allowed. */
  constructor(max: number) {
    this.#max = max;
  }

  /** False once a packet declares more than the limit, or a length that is not a valid varint. */
  feed(chunk: Uint8Array): boolean {
    let i = 0;
    while (i < chunk.length) {
      if (this.#state === 2) {
        const take = Math.min(this.#left, chunk.length - i);
        this.#left -= take;
        i += take;
        if (this.#left === 0) this.#state = 0;
        continue;
      }
      const byte = chunk[i++] as number;
      if (this.#state === 0) {
        this.#state = 1;
        this.#length = 0;
        this.#lengthBytes = 0;
        continue;
      }
      this.#length += (byte & 0x7f) * 128 ** this.#lengthBytes;
      this.#lengthBytes++;
      if (this.#length > this.#max) return false;
      if (byte & 0x80) {
        if (this.#lengthBytes >= 4) return false;
        continue;
      }
      this.#left = this.#length;
      this.#state = this.#left > 0 ? 2 : 0;
    }
    return true;
  }
}

/**
 * A duplex over `socket` that passes bytes both ways, and destroys the socket (calling
 * `onTooLarge` first) when the client sends a packet over `maxPacketBytes`.
 */
export function limitConnection(socket: Socket, maxPacketBytes: number, onTooLarge: () => void): Duplex {
  const limit = new PacketSizeLimit(maxPacketBytes);
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      if (socket.destroyed) {
        cb();
        return;
      }
      socket.write(chunk, (err) => cb(err ?? null));
    },
    final(cb) {
      socket.end(() => cb());
    },
    destroy(err, cb) {
      socket.destroy();
      cb(err);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!limit.feed(chunk)) {
      onTooLarge();
      socket.destroy();
      return;
    }
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('close', () => duplex.destroy());
  // Socket errors (resets) end the connection; the broker sees it closed.
  socket.on('error', () => duplex.destroy());
  return duplex;
}
