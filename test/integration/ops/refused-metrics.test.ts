/** Refused device upgrades are counted by reason in /metrics (capacity, unauthorized). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { startMeteredApp, type MeteredApp } from './helpers/metered-app.ts';
import { closeAll } from '../../helpers/close-all.ts';

let llm: FakeOpenAi;
let srv: MeteredApp;
before(async () => {
  llm = await startFakeOpenAi();
  srv = await startMeteredApp(llm.url, { server: { maxSessions: 1, auth: { tokens: ['t1'] } } });
});
after(async () => {
  await closeAll(srv, llm);
});

test('xiaozhi_connections_refused_total counts capacity and unauthorized refusals', async () => {
  const a = new DeviceSim({ url: srv.wsUrl, deviceId: 'cd:00:00:00:00:01', token: 't1' });
  await a.hello();
  await assert.rejects(new DeviceSim({ url: srv.wsUrl, deviceId: 'cd:00:00:00:00:02', token: 't1' }).opened, /HTTP 503/);
  await assert.rejects(new DeviceSim({ url: srv.wsUrl, deviceId: 'cd:00:00:00:00:03', token: 'wrong' }).opened, /HTTP 401/);
  const text = await (await fetch(`${srv.httpUrl}/metrics`)).text();
  assert.match(text, /xiaozhi_connections_refused_total\{reason="capacity"\} 1/);
  assert.match(text, /xiaozhi_connections_refused_total\{reason="unauthorized"\} 1/);
  a.close();
});
