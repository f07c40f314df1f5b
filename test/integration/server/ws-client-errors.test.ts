/**
 * A device breaking the WebSocket rules (a frame over maxMessageBytes, a text frame that is not
 * UTF-8) is closed with the documented code and logged once at warn without a stack: it is the
 * client's fault, not a server failure. Found by the protocol fuzz suite:
 * @fastify/websocket's default handler logged each one at error level with a stack.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { within } from '../../helpers/wait.ts';
import { CloseCode } from '../../../protocol/close-codes.ts';

describe('client WebSocket protocol errors', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ createConversation: recordingConversation().factory });
  });
  after(() => t.close());

  const cases = [
    {
      name: 'a binary frame over maxMessageBytes',
      code: CloseCode.TooBig,
      send: (d: DeviceSim) => d.sendRaw(Buffer.alloc(70_000), true),
    },
    {
      name: 'a text frame that is not UTF-8',
      code: CloseCode.InvalidPayload,
      send: (d: DeviceSim) => d.ws.send(Buffer.from([0x7b, 0xff, 0x7d]), { binary: false }),
    },
  ];
  for (const c of cases) {
    test(`${c.name}: closed with ${c.code}, one warn line without a stack, no error line`, async () => {
      const from = t.logs.lines.length;
      const dev = new DeviceSim({ url: t.wsUrl });
      await dev.hello();
      c.send(dev);
      assert.equal(await within(dev.closed, 5000, 'the close'), c.code);
      // The session's end is logged after the socket closed: every line of this connection is in.
      await within(
        (async () => {
          while (!t.logs.lines.slice(from).some((l) => l.msg === 'session ended'))
            await new Promise((r) => setTimeout(r, 20));
        })(),
        5000,
        'the session end',
      );
      const lines = t.logs.lines.slice(from);
      assert.deepEqual(
        lines.filter((l) => Number(l.level) >= 50),
        [],
        'no error-level line',
      );
      const warns = lines.filter((l) => l.msg === 'websocket error');
      assert.equal(warns.length, 1);
      assert.equal(JSON.stringify(warns).includes('"stack"'), false, 'no stack for a client error');
    });
  }
});
