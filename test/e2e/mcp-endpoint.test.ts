/**
 * The MCP endpoint end to end: the real server (media workers, provider thread) on a loopback
 * port, a bridge built only from the MCP SDK's McpServer and a WebSocket client (as mcp_pipe.py
 * does) connected with a token from the admin API, devices of two agents, and the fake OpenAI
 * server scripted to call the bridge's tool. The device of the bridge's agent hears the result;
 * the other agent's device is not offered the tool; a bridge gone mid-call is explained.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeToolCalls, startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from '../fixtures/fake-openai.ts';
import { connectSdkBridge, type SdkBridge } from '../fixtures/mcp-ws-bridge.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { waitFor } from '../helpers/wait.ts';

const ADMIN = 'admin-token-for-the-endpoint-e2e';
const KITCHEN = 'a7:00:00:00:00:01';
const STUDY = 'a7:00:00:00:00:02';

function spoken(dev: DeviceSim, from = 0): string {
  return dev.json.slice(from).filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start').map((j) => String(j.msg.text)).join(' ');
}

function toolMessages(req: RecordedRequest | undefined): string[] {
  return (req?.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

function toolNames(req: RecordedRequest | undefined): string[] {
  return (req?.body.tools ?? []).map((t) => t.function.name);
}

describe('MCP endpoint: a user\'s bridge becomes its agent\'s tools', { timeout: 120_000 }, () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let bridge: SdkBridge | undefined;
  let releaseSlow: (() => void) | undefined;

  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      admin: { token: ADMIN },
      agents: [
        { name: 'kitchen', devices: [KITCHEN] },
        { name: 'study', devices: [STUDY] },
      ],
    });
  });
  after(async () => {
    releaseSlow?.();
    await bridge?.close().catch(() => undefined);
    await closeAll(srv, llm);
  });

  test('a device of the agent hears the tool result; a device of another agent is not offered the tool', async () => {
    const r = await fetch(`${srv.httpUrl}/api/admin/agents/kitchen/mcp-endpoint`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 201);
    const { url } = (await r.json()) as { url: string };
    bridge = await connectSdkBridge(url, 'calculator', [
      { name: 'calculator', description: 'Evaluates an arithmetic expression', args: ['python_expression'], run: (a) => (a.python_expression === '6*7' ? 'The result is 42' : 'unknown') },
      {
        name: 'slow_lookup',
        description: 'Looks something up slowly',
        run: () =>
          new Promise<string>((resolve) => {
            releaseSlow = () => resolve('late');
          }),
      },
    ]);
    await waitFor(() => srv.app.bridges.bridgesOf('kitchen').length === 1, { what: 'the bridge to join' });

    const kitchen = new DeviceSim({ url: srv.wsUrl, deviceId: KITCHEN });
    const study = new DeviceSim({ url: srv.wsUrl, deviceId: STUDY });
    try {
      await Promise.all([kitchen.hello(), study.hello()]);
      llm.script(fakeToolCalls([{ name: 'calculator', arguments: { python_expression: '6*7' } }]));
      const n = llm.requests.length;
      kitchen.listen('detect', { text: 'What is six times seven?' });
      await kitchen.waitJson('tts', 'stop', 20_000);
      const asked = llm.requests.slice(n);
      assert.ok(toolNames(asked[0]).includes('calculator'), 'the kitchen device is offered the bridge tool');
      assert.ok(toolMessages(asked.at(-1)).some((t) => t.includes('The result is 42')), 'the tool result went back to the model');
      assert.match(spoken(kitchen), /42/, 'the device heard the result');

      const m = llm.requests.length;
      study.listen('detect', { text: 'What is six times seven in the study?' });
      await study.waitJson('tts', 'stop', 20_000);
      const studyAsked = llm.requests[m];
      assert.ok(studyAsked, 'the study device asked the model');
      assert.ok(!toolNames(studyAsked).includes('calculator') && !toolNames(studyAsked).includes('slow_lookup'), 'another agent is not offered the tool');
      assert.ok(toolNames(studyAsked).includes('get_current_datetime'), 'it still has its other tools');

      // The bridge goes away in the middle of a call: the model gets a clear result and says so.
      llm.script(fakeToolCalls([{ name: 'slow_lookup', arguments: {} }]));
      const k = llm.requests.length;
      const from = kitchen.json.length;
      kitchen.listen('detect', { text: 'Look it up please.' });
      await waitFor(() => releaseSlow !== undefined, { what: 'the slow call to reach the bridge', timeoutMs: 15_000 });
      bridge.ws.terminate();
      await kitchen.waitJson('tts', 'stop', 20_000, from);
      assert.ok(toolMessages(llm.requests.at(-1)).some((t) => /MCP bridge "calculator" disconnected during the call/.test(t)), 'the model was told the bridge disconnected');
      assert.ok(llm.requests.length > k);
      await waitFor(() => srv.app.bridges.bridgesOf('kitchen').length === 0, { what: 'the bridge to leave' });
    } finally {
      await Promise.all([kitchen.close(), study.close()]);
    }
  });
});
