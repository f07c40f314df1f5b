/**
 * What one connected device can make the server spend on the model, over a real WebSocket with the
 * fake LLM: turns started per minute (`conversation.maxTurnsPerMinute`), the length of a typed text
 * (`conversation.maxTextChars`) and the size of the device's own tool schemas offered in every
 * request (`deviceMcp.maxSchemaBytes`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim, type SimDeviceTool } from '../fixtures/device-sim.ts';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { sleep, waitFor } from '../helpers/wait.ts';

const TURNS_PER_MINUTE = 5;
const TOO_FAST = 'Slow down please, I need a moment.';

/** The text of every sentence the device was shown. */
function sentences(dev: DeviceSim): string[] {
  return dev.json
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text));
}

async function refusedTurns(srv: VoiceApp): Promise<number> {
  const metrics = await (await fetch(`${srv.httpUrl}/metrics`)).text();
  return Number(/^xiaozhi_turns_refused_total (\d+)$/m.exec(metrics)?.[1] ?? NaN);
}

function lastUserText(req: FakeOpenAi['requests'][number] | undefined): string {
  const user = (req?.body.messages ?? []).filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
}

describe('cost bounds per device', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      conversation: { maxTurnsPerMinute: TURNS_PER_MINUTE, tooManyTurns: TOO_FAST },
    });
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  test('listen detect in a tight loop: at most the budgeted turns reach the model, and the device is told once', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: '71:00:00:00:00:01' });
    try {
      await dev.hello();
      const before = llm.requests.length;
      // 20 a second stays inside the control-message bucket: every detect reaches the conversation.
      const until = Date.now() + 3000;
      for (let i = 0; Date.now() < until; i++) {
        dev.listen('detect', { text: `question number ${i}, tell me a long story` });
        await sleep(50);
      }
      // Whatever was still on its way settles.
      await sleep(1000);
      const sent = llm.requests.length - before;
      assert.ok(sent <= TURNS_PER_MINUTE, `${sent} LLM requests from one device in 3 s`);
      assert.ok(sent >= 1, 'the first turns were answered');
      await dev.waitFor('the notice', () => sentences(dev).includes(TOO_FAST), 15_000);
      assert.equal(sentences(dev).filter((s) => s === TOO_FAST).length, 1, 'the notice is said once per window');
      assert.equal(srv.logs.find('turn budget spent; new turns refused').length, 1, 'logged once');
      const refused = await refusedTurns(srv);
      assert.ok(refused > 10, `refusals counted: ${refused}`);
    } finally {
      dev.close();
    }
  });

  test('speech past the budget: the first utterance hears the notice, the next is dropped and the device is heard again; no model request', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: '71:00:00:00:00:04' });
    try {
      await dev.hello();
      for (let i = 0; i < TURNS_PER_MINUTE; i++) {
        dev.listen('detect', { text: `typed question ${i}` });
        await sleep(50);
      }
      const last = `typed question ${TURNS_PER_MINUTE - 1}`;
      const at = await dev.waitFor(
        'the last typed answer',
        () => {
          const i = dev.json.findIndex((j) => j.msg.state === 'sentence_start' && String(j.msg.text).includes(last));
          return i >= 0 ? i + 1 : undefined;
        },
        15_000,
      );
      await dev.waitJson('tts', 'stop', 15_000, at);
      const requests = llm.requests.length;
      const refusedBefore = await refusedTurns(srv);
      const packets = await utterancePackets(speak16k('what is the weather today'));
      let from = dev.json.length;
      dev.listen('start', { mode: 'auto' });
      await sendPaced(dev, packets, 60, () => dev.json.slice(from).some((j) => j.msg.type === 'tts'));
      const notice = await dev.waitJson('tts', 'sentence_start', 20_000, from);
      assert.equal(notice.text, TOO_FAST);
      await dev.waitJson('tts', 'stop', 20_000, from);
      assert.ok(
        !dev.json.slice(from).some((j) => j.msg.type === 'stt'),
        'no transcript: the speech was not sent to ASR',
      );
      // Auto mode listens again after the notice: the next utterance is refused without a word.
      from = dev.json.length;
      await sendPaced(dev, packets);
      await waitFor(async () => (await refusedTurns(srv)) === refusedBefore + 2, {
        what: 'the second utterance refused',
        timeoutMs: 20_000,
        intervalMs: 200,
      });
      assert.deepEqual(
        dev.json.slice(from).map((j) => j.msg.type),
        [],
        'nothing sent for a silent refusal',
      );
      assert.equal(llm.requests.length, requests, 'no model request for either utterance');
      // Still heard: a third utterance reaches the conversation (and is refused: the minute is not over).
      await sendPaced(dev, packets);
      await waitFor(async () => (await refusedTurns(srv)) === refusedBefore + 3, {
        what: 'the third utterance heard',
        timeoutMs: 20_000,
        intervalMs: 200,
      });
    } finally {
      dev.close();
    }
  });

  test('a 2,000-character typed text reaches the model cut to conversation.maxTextChars', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: '71:00:00:00:00:02' });
    try {
      await dev.hello();
      const before = llm.requests.length;
      const text = 'Please repeat this. ' + 'abcdefghij'.repeat(198);
      assert.equal(text.length, 2000);
      dev.listen('detect', { text });
      await llm.waitForRequests(before + 1, 15_000);
      const got = lastUserText(llm.requests.at(-1));
      assert.equal(got.length, srv.config.conversation.maxTextChars);
      assert.equal(srv.config.conversation.maxTextChars, 500, 'the default');
      assert.ok(text.startsWith(got), 'the start of the text is kept');
    } finally {
      dev.close();
    }
  });

  test('a device announcing 64 tools of ~17 KB each: the tools offered to the model stay within deviceMcp.maxSchemaBytes', async () => {
    const tools: SimDeviceTool[] = Array.from({ length: 64 }, (_, i) => ({
      name: `self.tool_${String(i).padStart(2, '0')}`,
      description: `Tool ${i}. ` + 'd'.repeat(990),
      inputSchema: { type: 'object', properties: { value: { type: 'string', description: 'v'.repeat(15_400) } } },
      call: () => 'ok',
    }));
    const perTool = JSON.stringify({
      name: tools[0]?.name,
      description: tools[0]?.description,
      inputSchema: tools[0]?.inputSchema,
    }).length;
    assert.ok(perTool > 16_000 && perTool < 17_500, `${perTool} bytes per tool`);
    // Three tools per tools/list page keep each device message under server.maxMessageBytes.
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: '71:00:00:00:00:03', mcpTools: tools, mcpPageSize: 3 });
    try {
      await dev.hello({ mcp: true });
      await dev.waitFor('tools listed', () => srv.logs.find('device mcp initialized').length > 0, 15_000);
      const before = llm.requests.length;
      dev.listen('detect', { text: 'What can you do?' });
      await dev.waitJson('tts', 'stop', 15_000);
      assert.equal(llm.requests.length, before + 1);
      const offered = (llm.requests.at(-1)?.body.tools ?? []).filter((t) => t.function.name.startsWith('self_'));
      const bytes = offered.reduce((n, t) => n + Buffer.byteLength(JSON.stringify(t.function)), 0);
      const budget = srv.config.deviceMcp.maxSchemaBytes;
      assert.equal(budget, 8192, 'the default');
      assert.ok(bytes <= budget, `${bytes} bytes of device tools in one request`);
      assert.ok(offered.length >= 1 && offered.length < 64, `${offered.length} device tools offered`);
      assert.equal(offered[0]?.function.name, 'self_tool_00', 'tools are dropped from the last');
      assert.ok(
        offered.every((t) => (t.function.description ?? '').length <= 200),
        'descriptions shortened',
      );
      const logged = srv.logs.find('device mcp tools over the schema budget');
      assert.equal(logged.length, 1);
      assert.equal(logged[0]?.droppedCount, 64 - offered.length);
    } finally {
      dev.close();
    }
  });
  test('an idle device with MCP tools: its session logs the device MCP through one child logger of its own', async () => {
    // Each pino child holds its bindings and its own prototype chain: ~650 bytes of heap for every
    // connected device (BENCHMARKS.md, "20,000 idle devices").
    const tools: SimDeviceTool[] = [
      { name: 'self.get_device_status', description: 'Status.', inputSchema: { type: 'object' }, call: () => '{}' },
    ];
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: '71:00:00:00:00:04', mcpTools: tools });
    try {
      await dev.hello({ mcp: true });
      const mine = (): Array<Record<string, unknown>> =>
        srv.logs.find('device mcp initialized').filter((l) => l.deviceId === '71:00:00:00:00:04');
      await dev.waitFor('tools listed', () => mine().length > 0, 15_000);
      const line = mine()[0] ?? {};
      assert.equal(line.component, 'device-mcp');
      assert.equal(line.sessionId, dev.sessionId);
      assert.equal(line.part, undefined, 'no second child (part: device-mcp) between the session and the device MCP');
    } finally {
      dev.close();
    }
  });
});
