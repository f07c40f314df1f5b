/**
 * One stranger must not be able to fill the disk through the log. Bad frames
 * are warned about at a bounded rate per session, client protocol errors carry no stacks, and
 * long client-supplied fields are cut before they are logged.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { recordingConversation } from '../../helpers/recording-conversation.ts';
import { startTestApp, type TestApp } from '../../helpers/test-app.ts';
import { startVoiceApp, type VoiceApp } from '../../helpers/voice-app.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { waitFor } from '../../helpers/wait.ts';

describe('log flooding', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ createConversation: recordingConversation().factory });
  });
  after(() => t.close());

  test('5000 bad messages give a handful of warn lines, with the count of those not logged', async () => {
    const dev = new DeviceSim({ url: t.wsUrl, deviceId: 'bb:00:00:00:00:01' });
    try {
      await dev.hello();
      const endedBefore = t.logs.find('session ended').length;
      for (let i = 0; i < 5000; i++) dev.sendRaw(`{bad ${i}`);
      dev.close();
      await dev.closed;
      await waitFor(() => t.logs.find('session ended').length > endedBefore, { what: 'the session to end' });
      const rejected = t.logs.find('device message rejected');
      assert.ok(rejected.length >= 1 && rejected.length <= 20, `${rejected.length} lines`);
      assert.ok(rejected.every((l) => l.level === 40 && l.err === undefined && l.stack === undefined));
      // Nothing is lost from the record: the end-of-session line counts every bad message and
      // the warnings that were not written.
      const ended = t.logs.find('session ended').at(-1);
      assert.equal(ended?.badMessages, 5000);
      const suppressed =
        rejected.reduce((n, l) => n + ((l.suppressed as number | undefined) ?? 0), 0) +
        ((ended?.suppressedWarnings as number | undefined) ?? 0);
      assert.equal(suppressed + rejected.length, 5000);
    } finally {
      dev.close();
    }
  });

  test('an OTA board.type of 100 KB is logged cut to a short prefix', async () => {
    const type = 'x'.repeat(100_000);
    const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'device-id': 'bb:00:00:00:00:02' },
      body: JSON.stringify({ board: { type } }),
    });
    assert.equal(res.status, 200);
    const line = t.logs.find('OTA check').at(-1)!;
    assert.ok(
      typeof line.board === 'string' && line.board.length <= 200,
      `board logged with ${String(line.board).length} chars`,
    );
  });
});

describe('log flooding: refused activations', () => {
  let t: TestApp;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'log-flooding-'));
    t = await startTestApp({
      createConversation: recordingConversation().factory,
      config: { server: { dataDir: dir, auth: { mode: 'activation' } } },
    });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('20 refused OTA posts with a 250 KB mac_address write a few hundred bytes each', async () => {
    const long = 'a'.repeat(250_000);
    const before = t.logs.text().length;
    for (let i = 0; i < 20; i++) {
      // Not a MAC: refused at the edge (400), and the refusal names the value cut short.
      const res = await fetch(`${t.httpUrl}/xiaozhi/ota/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ mac_address: `${i}${long}` }),
      });
      assert.equal(res.status, 400);
      await res.arrayBuffer();
    }
    await waitFor(() => t.logs.lines.filter((l) => String(l.msg).startsWith('OTA: identity refused')).length >= 20, {
      what: 'the refusals to be logged',
    });
    const grown = t.logs.text().length - before;
    assert.ok(grown < 20 * 2000, `the log grew by ${grown} bytes for 20 requests`);
  });
});

describe('log flooding: any repeated warning of a session is bounded', () => {
  let llm: FakeOpenAi;
  let app: VoiceApp;
  before(async () => {
    llm = await startFakeOpenAi();
    app = await startVoiceApp(llm.url);
  });
  after(async () => {
    await app?.close();
    await llm?.close();
  });

  test('99 device MCP replies without a usable id give a few warn lines, with the count of the rest', async () => {
    const dev = new DeviceSim({ url: app.wsUrl, deviceId: 'bb:00:00:00:00:03' });
    try {
      await dev.hello({ mcp: true });
      // Within the control-message budget (burst 100): every one reaches the device MCP handler.
      for (let i = 0; i < 99; i++)
        dev.sendJson({
          session_id: dev.sessionId,
          type: 'mcp',
          payload: { jsonrpc: '2.0', id: `no-${i}`, result: {} },
        });
      dev.close();
      await dev.closed;
      await waitFor(() => app.logs.lines.some((l) => l.msg === 'session ended' && l.deviceId === 'bb:00:00:00:00:03'), {
        what: 'the session to end',
      });
      const warned = app.logs.find('device mcp reply without an integer id ignored');
      assert.ok(warned.length >= 1 && warned.length <= 10, `${warned.length} lines`);
      const ended = app.logs.lines
        .filter((l) => l.msg === 'session ended' && l.deviceId === 'bb:00:00:00:00:03')
        .at(-1);
      const suppressed =
        warned.reduce((n, l) => n + ((l.suppressed as number | undefined) ?? 0), 0) +
        ((ended?.suppressedWarnings as number | undefined) ?? 0);
      assert.equal(suppressed + warned.length, 99, 'every payload is either logged or counted');
    } finally {
      dev.close();
    }
  });

  test('2000 corrupt Opus packets give a few warn lines in the session, with the count of the rest', {
    timeout: 60_000,
  }, async () => {
    const deviceId = 'bb:00:00:00:00:04';
    const dev = new DeviceSim({ url: app.wsUrl, deviceId });
    try {
      await dev.hello();
      const started = Date.now();
      // Code 3 with no frame count: libopus refuses it. Sent eight times faster than a device's
      // one packet per 60 ms, in bursts the uplink's backlog takes; listening starts again
      // before each 400 packets (24 s of audio, under the longest utterance).
      const corrupt = Buffer.from([0x03, 0x00]);
      for (let i = 0; i < 2000; i++) {
        if (i % 400 === 0) dev.listen('start', { mode: 'manual' });
        dev.sendOpus(corrupt);
        if (i % 20 === 19) await new Promise((r) => setTimeout(r, 40));
      }
      await new Promise((r) => setTimeout(r, 300));
      dev.close();
      await dev.closed;
      await waitFor(() => app.logs.lines.some((l) => l.msg === 'session ended' && l.deviceId === deviceId), {
        what: 'the session to end',
      });
      const seconds = (Date.now() - started) / 1000;
      const dropped = app.logs.find('opus packet dropped');
      const decoded = Math.max(0, ...dropped.map((l) => (l.corruptFrames as number | undefined) ?? 0));
      assert.ok(decoded >= 1000, `only ${decoded} corrupt packets reached the decoder`);
      // The lines are the session's: its bindings, and its limit (a burst of 5, then one a second).
      assert.ok(
        dropped.every((l) => l.deviceId === deviceId && l.level === 40),
        JSON.stringify(dropped[0]),
      );
      assert.ok(
        dropped.length >= 1 && dropped.length <= 5 + Math.ceil(seconds),
        `${dropped.length} lines in ${seconds} s`,
      );
      const ended = app.logs.lines.filter((l) => l.msg === 'session ended' && l.deviceId === deviceId).at(-1);
      const suppressed =
        dropped.reduce((n, l) => n + ((l.suppressed as number | undefined) ?? 0), 0) +
        ((ended?.suppressedWarnings as number | undefined) ?? 0);
      assert.ok(suppressed > 0, 'the lines not written are counted');
    } finally {
      dev.close();
    }
  });
});
