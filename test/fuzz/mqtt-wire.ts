/**
 * MQTT 3.1.1 packets built byte by byte (no client library in the way), so the fuzz can send
 * exactly what it means to: valid packets, each field wrong on purpose, lengths that lie.
 */

export const PacketType = {
  CONNECT: 1,
  CONNACK: 2,
  PUBLISH: 3,
  PUBACK: 4,
  SUBSCRIBE: 8,
  UNSUBSCRIBE: 10,
  PINGREQ: 12,
  DISCONNECT: 14,
} as const;

/** The "remaining length" variable-byte integer (up to 268,435,455). */
export function varint(n: number): Buffer {
  const out: number[] = [];
  let x = n;
  do {
    let b = x % 128;
    x = Math.floor(x / 128);
    if (x > 0) b |= 0x80;
    out.push(b);
  } while (x > 0 && out.length < 4);
  return Buffer.from(out);
}

/** A UTF-8 string (or raw bytes) with its 16-bit length. */
export function str(s: string | Uint8Array): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s) : Buffer.from(s);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(b.length & 0xffff);
  return Buffer.concat([len, b]);
}

/** Fixed header + body; `claimedLength` makes the header lie about the body's size. */
export function packet(type: number, flags: number, body: Uint8Array, claimedLength?: number): Buffer {
  return Buffer.concat([Buffer.from([((type & 15) << 4) | (flags & 15)]), varint(claimedLength ?? body.length), body]);
}

export interface ConnectFields {
  protocolName?: string;
  level?: number;
  /** Connect flags byte; computed from the fields when absent. */
  flags?: number;
  keepalive?: number;
  clientId: string | Uint8Array;
  username?: string | Uint8Array;
  password?: string | Uint8Array;
  will?: { topic: string; message: Uint8Array };
}

export function connect(f: ConnectFields): Buffer {
  const flags =
    f.flags ??
    (f.username !== undefined ? 0x80 : 0) | (f.password !== undefined ? 0x40 : 0) | (f.will ? 0x04 : 0) | 0x02;
  const keep = Buffer.alloc(2);
  keep.writeUInt16BE((f.keepalive ?? 60) & 0xffff);
  const parts = [str(f.protocolName ?? 'MQTT'), Buffer.from([f.level ?? 4, flags & 0xff]), keep, str(f.clientId)];
  if (f.will) parts.push(str(f.will.topic), str(f.will.message));
  if (f.username !== undefined) parts.push(str(f.username));
  if (f.password !== undefined) parts.push(str(f.password));
  return packet(PacketType.CONNECT, 0, Buffer.concat(parts));
}

export function publish(
  topic: string | Uint8Array,
  payload: Uint8Array,
  opts: { qos?: number; retain?: boolean; dup?: boolean; messageId?: number } = {},
): Buffer {
  const qos = opts.qos ?? 0;
  const flags = (opts.dup ? 8 : 0) | ((qos & 3) << 1) | (opts.retain ? 1 : 0);
  const id = Buffer.alloc(qos > 0 ? 2 : 0);
  if (qos > 0) id.writeUInt16BE((opts.messageId ?? 1) & 0xffff);
  return packet(PacketType.PUBLISH, flags, Buffer.concat([str(topic), id, payload]));
}

export function subscribe(messageId: number, topics: string[], qos = 0): Buffer {
  const id = Buffer.alloc(2);
  id.writeUInt16BE(messageId & 0xffff);
  return packet(
    PacketType.SUBSCRIBE,
    2,
    Buffer.concat([id, ...topics.map((t) => Buffer.concat([str(t), Buffer.from([qos])]))]),
  );
}

export function unsubscribe(messageId: number, topics: string[]): Buffer {
  const id = Buffer.alloc(2);
  id.writeUInt16BE(messageId & 0xffff);
  return packet(PacketType.UNSUBSCRIBE, 2, Buffer.concat([id, ...topics.map((t) => str(t))]));
}

export const pingreq = (): Buffer => packet(PacketType.PINGREQ, 0, Buffer.alloc(0));
export const disconnect = (): Buffer => packet(PacketType.DISCONNECT, 0, Buffer.alloc(0));

/**
 * Splits a byte stream into whole packets as far as it goes (the rest is a partial packet);
 * used to look at what the broker sent a fuzzed client.
 */
export function readPackets(buf: Buffer): Array<{ type: number; flags: number; body: Buffer }> {
  const out: Array<{ type: number; flags: number; body: Buffer }> = [];
  let at = 0;
  while (at + 2 <= buf.length) {
    const first = buf[at] as number;
    let len = 0;
    let mul = 1;
    let i = at + 1;
    let done = false;
    for (let k = 0; k < 4 && i < buf.length; k++, i++) {
      const b = buf[i] as number;
      len += (b & 127) * mul;
      mul *= 128;
      if ((b & 128) === 0) {
        done = true;
        i++;
        break;
      }
    }
    if (!done || i + len > buf.length) break;
    out.push({ type: first >> 4, flags: first & 15, body: buf.subarray(i, i + len) });
    at = i + len;
  }
  return out;
}

/** The topic and payload of a PUBLISH body. */
export function publishParts(p: { flags: number; body: Buffer }): { topic: string; payload: Buffer } {
  const tlen = p.body.readUInt16BE(0);
  const qos = (p.flags >> 1) & 3;
  const start = 2 + tlen + (qos > 0 ? 2 : 0);
  return { topic: p.body.subarray(2, 2 + tlen).toString(), payload: p.body.subarray(start) };
}
