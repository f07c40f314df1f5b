/**
 * A fresh device on a server in `activation` mode: real OTA over HTTP (a code, and the pair's token
 * that opens nothing yet), the owner binds it with the `devices` CLI (a separate process, while the
 * server runs), the device connects over a real WebSocket and has a turn with the fake LLM;
 * revoking ends it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { startFakeOpenAi, fakeText, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';

const run = promisify(execFile);
const CLI = ['--import', 'tsx', 'scripts/devices.ts'];
const DEVICE = { 'Device-Id': 'e4:00:00:00:00:01', 'Client-Id': '0b9a3c1e-7d55-4e0f-9a51-2c4f1e9b7d60' };
const HEADERS = { 'Content-Type': 'application/json', 'Activation-Version': '1', ...DEVICE };
const BODY = JSON.stringify({
  version: 2,
  mac_address: DEVICE['Device-Id'],
  uuid: DEVICE['Client-Id'],
  application: { name: 'xiaozhi', version: '2.4.2' },
});

interface OtaAnswer {
  websocket: { url: string; token?: string };
  activation?: { code: string; message: string; challenge: string };
}

describe('activation mode end to end', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let dir: string;
  let file: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'activation-e2e-'));
    file = join(dir, 'xiaozhi.db'); // the default store, in the data directory
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, { server: { dataDir: dir, auth: { mode: 'activation' } } });
  });
  after(async () => {
    await srv.close();
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const ota = async (): Promise<OtaAnswer> => {
    const res = await fetch(`${srv.httpUrl}/xiaozhi/ota/`, { method: 'POST', headers: HEADERS, body: BODY });
    assert.equal(res.status, 200);
    return (await res.json()) as OtaAnswer;
  };
  const activate = async (): Promise<number> =>
    (await fetch(`${srv.httpUrl}/xiaozhi/ota/activate`, { method: 'POST', headers: HEADERS, body: '{}' })).status;

  test('the device speaks its code, the owner binds it with the CLI, the device talks; revoke ends it', async () => {
    const first = await ota();
    const code = first.activation?.code ?? '';
    assert.match(code, /^\d{6}$/);
    const early = first.websocket.token ?? '';
    assert.ok(early.length > 0, "the code answer carries the pair's own token");
    assert.equal(await activate(), 202);
    for (const token of ['guess', early]) {
      const before = new DeviceSim({
        url: srv.wsUrl,
        deviceId: DEVICE['Device-Id'],
        clientId: DEVICE['Client-Id'],
        token,
      });
      await assert.rejects(before.opened, /HTTP 401/, 'nothing opens before binding');
    }

    const listed = await run(process.execPath, [...CLI, 'list', '--file', file]);
    assert.match(listed.stdout, new RegExp(`pending  code ${code}`));
    const bound = await run(process.execPath, [...CLI, 'bind', code, '--file', file]);
    assert.match(bound.stdout, /^bound [0-9a-f]{10} /);
    await assert.rejects(run(process.execPath, [...CLI, 'bind', code, '--file', file]), /unknown or expired code/);

    assert.equal(await activate(), 200);
    const second = await ota();
    assert.equal(second.activation, undefined);
    const token = second.websocket.token ?? '';
    assert.equal(token, early, 'the same token after binding');

    const dev = new DeviceSim({
      url: second.websocket.url,
      deviceId: DEVICE['Device-Id'],
      clientId: DEVICE['Client-Id'],
      token,
    });
    try {
      await dev.hello();
      llm.script(fakeText('Bound and talking.'));
      dev.listen('detect', { text: 'Are you there?' });
      const s = await dev.waitJson('tts', 'sentence_start', 20_000);
      assert.equal(s.text, 'Bound and talking.');
      await dev.waitJson('tts', 'stop', 20_000);
      assert.ok(dev.audio.length > 0);

      const id = /^bound ([0-9a-f]{10})/.exec(bound.stdout)?.[1] ?? '';
      await run(process.execPath, [...CLI, 'revoke', id, '--file', file]);
      // The server hears of the change through the store's change feed and ends the session.
      assert.equal(await dev.closed, 4005);
    } finally {
      dev.close();
    }
    assert.equal(srv.logs.text().includes(token), false, 'the issued token is not logged');
  });
});
