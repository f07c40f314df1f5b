/**
 * Property over one fuzzed connection: whatever it sends, the connection ends the way the model
 * in inputs.ts says (open and still answering, or closed with exactly the documented code), the
 * server answers at most one hello, everything it sends has the documented shape, and nothing in
 * this process crashed or logged an error. Every wait is bounded, so a hang fails the case.
 */
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { within } from '../helpers/wait.ts';
import { ServerMessageSchema } from '../../protocol/messages.ts';
import { expectedEnd, type ConnectionScript, type FuzzInput } from './inputs.ts';
import type { FuzzServer } from './fuzz-server.ts';
import type { ProtocolVersion } from '../../protocol/framing.ts';

/** Bound on each wait of a case (connect, answer, close): far above loopback latency. */
export const STEP_MS = 5000;

const OPEN = 1;

function send(dev: DeviceSim, input: FuzzInput): void {
  if (input.kind === 'text') dev.sendRaw(input.text);
  // A Buffer sent as a text frame goes out byte for byte: ws does not check what it sends.
  else if (input.kind === 'badUtf8') dev.ws.send(input.bytes, { binary: false });
  else dev.sendRaw(Buffer.from(input.bytes.buffer, input.bytes.byteOffset, input.bytes.byteLength), true);
}

/** The protocol version a (valid) hello asks for, if it names one. */
function helloVersion(text: string): ProtocolVersion | undefined {
  const v = (JSON.parse(text) as { version?: unknown }).version;
  return v === undefined ? undefined : (Number(v) as ProtocolVersion);
}

/** One WebSocket ping answered: the server has read everything sent before it. */
export async function roundTrip(dev: DeviceSim): Promise<void> {
  const before = dev.pongsReceived;
  dev.ws.ping();
  await dev.waitFor('a pong', () => dev.pongsReceived > before || dev.closeCode !== null, STEP_MS);
}

/** Closes our side (if still open) and waits for the close, bounded. */
export async function hangUp(fz: FuzzServer, dev: DeviceSim): Promise<void> {
  if (dev.ws.readyState === OPEN) dev.close();
  else if (dev.ws.readyState < OPEN) dev.drop();
  const code = await within(dev.closed, STEP_MS, 'the connection to close');
  fz.stats.closeCodes.set(code, (fz.stats.closeCodes.get(code) ?? 0) + 1);
}

export function assertServerMessagesValid(dev: DeviceSim): void {
  for (const { msg } of dev.json) {
    const ok = ServerMessageSchema.safeParse(msg);
    assert.ok(ok.success, `the server sent a message outside the protocol: ${JSON.stringify(msg).slice(0, 300)}`);
  }
}

export async function runConnection(fz: FuzzServer, script: ConnectionScript): Promise<void> {
  fz.stats.cases++;
  const expected = expectedEnd(script.inputs, fz.srv.config.server.maxMessageBytes);
  const dev = new DeviceSim({ url: fz.srv.wsUrl, deviceId: fz.nextDeviceId(), protocolVersion: script.headerVersion });
  // A reset while we still write (after a frame over the limit) must not become an uncaught 'error'.
  dev.ws.on('error', () => {});
  try {
    await within(dev.opened, STEP_MS, 'the WebSocket to open');
    let negotiated = false;
    for (const input of script.inputs) {
      if (dev.ws.readyState !== OPEN) break;
      if (!negotiated && input.kind === 'text' && input.cls === 'hello') {
        // The first valid hello sets the framing of the server's audio; it may differ from the header.
        negotiated = true;
        dev.version = helloVersion(input.text) ?? script.headerVersion;
      }
      send(dev, input);
      fz.count(input.kind);
    }
    if (expected.open) {
      await roundTrip(dev);
      assert.equal(
        dev.closeCode,
        null,
        `closed with ${dev.closeCode} "${dev.closeReason}", but the connection should stay open`,
      );
      const hellos = dev.json.filter((j) => j.msg.type === 'hello').length;
      assert.equal(hellos, expected.helloDone ? 1 : 0, 'one server hello for the first valid hello, none otherwise');
    } else {
      const code = await within(dev.closed, STEP_MS, `the close with ${expected.code} after message ${expected.after}`);
      assert.equal(
        code,
        expected.code,
        `closed with ${code} "${dev.closeReason}", expected ${expected.code} after message ${expected.after}`,
      );
    }
    assertServerMessagesValid(dev);
  } finally {
    await hangUp(fz, dev);
  }
  fz.assertHealthy('fuzzed connection');
}
