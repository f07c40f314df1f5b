/**
 * Conversation turns that use tools, end to end over a real WebSocket with the fake LLM: a local
 * tool, an MCP tool over stdio with resource context injected, the device's own MCP tool, MCP
 * AudioContent played to the device (terminal), and an image result described to the model.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import {
  fakeText,
  fakeToolCalls,
  startFakeOpenAi,
  type FakeOpenAi,
  type FakeRequestView,
  type FakeRule,
} from '../fixtures/fake-openai.ts';
import { fixtureEntry } from '../integration/mcp/mcp-test-helpers.ts';
import { decodeDownlink } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';

const GREETING_NOTE = 'The household cat is called Mochi and she likes tuna.';

/** Everything the device was shown as spoken sentences since message index `from`. */
function spoken(dev: DeviceSim, from = 0): string {
  return dev.json
    .slice(from)
    .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
    .map((j) => String(j.msg.text))
    .join(' ');
}

function toolMessages(req: FakeOpenAi['requests'][number] | undefined): string[] {
  return (req?.body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

describe('tool turns', () => {
  let llm: FakeOpenAi;
  let srv: VoiceApp;
  let volume = 50;
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startVoiceApp(llm.url, {
      deviceMcp: { vision: { url: 'http://127.0.0.1:9/vision/explain', token: 'vision-token' } },
      mcpServers: {
        voice: {
          command: process.execPath,
          args: ['--import', 'tsx', 'test/fixtures/mcp-voice-tools-server.ts'],
          resources: { context: 'all', budgetChars: 2000 },
        },
        fx: { ...fixtureEntry(), resources: { tools: true } },
      },
    });
  });
  after(async () => {
    await closeAll(srv, llm);
  });

  function device(id: string): DeviceSim {
    return new DeviceSim({
      url: srv.wsUrl,
      deviceId: id,
      mcpTools: [
        {
          name: 'self.get_device_status',
          description: 'Device status as JSON',
          inputSchema: { type: 'object', properties: {} },
          call: () => JSON.stringify({ audio_speaker: { volume } }),
        },
        {
          name: 'self.audio_speaker.set_volume',
          description: 'Set the speaker volume',
          inputSchema: {
            type: 'object',
            properties: { volume: { type: 'integer', minimum: 0, maximum: 100 } },
            required: ['volume'],
          },
          call: (args) => {
            volume = Number(args.volume);
            return 'true';
          },
        },
      ],
    });
  }

  test('a local tool: the model calls the date/time tool and answers with its result', async () => {
    const dev = device('70:00:00:00:00:01');
    try {
      await dev.hello({ mcp: true });
      const n = llm.requests.length;
      llm.script(fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }]));
      dev.listen('detect', { text: 'What day is it today?' });
      const s = await dev.waitJson('tts', 'sentence_start', 15_000);
      await dev.waitJson('tts', 'stop', 15_000);
      assert.equal(llm.requests.length, n + 2, 'think, act, observe: two model calls');
      const year = String(new Date().getFullYear());
      assert.ok(
        toolMessages(llm.requests.at(-1)).some((t) => t.includes(year)),
        'the second request carried the tool result',
      );
      assert.match(String(s.text), /The tool said/);
      assert.match(spoken(dev), new RegExp(year));
    } finally {
      dev.close();
    }
  });

  test('an MCP tool over stdio, with the server resource injected as context', async () => {
    const dev = device('70:00:00:00:00:02');
    try {
      await dev.hello({ mcp: true });
      const n = llm.requests.length;
      llm.script(fakeToolCalls([{ name: 'voice__weather', arguments: { city: 'Paris' } }]));
      dev.listen('detect', { text: 'How is the weather in Paris?' });
      const s = await dev.waitJson('tts', 'sentence_start', 15_000);
      await dev.waitJson('tts', 'stop', 15_000);
      const first = llm.requests[n];
      const names = (first?.body.tools ?? []).map((t) => t.function.name);
      assert.ok(names.includes('voice__weather'), `tools offered: ${names.join(', ')}`);
      assert.ok(names.includes('get_current_datetime'));
      const system = (first?.body.messages ?? [])
        .filter((m) => m.role === 'system')
        .map((m) => String(m.content))
        .join('\n');
      assert.ok(system.includes(GREETING_NOTE), 'the resource text reached the model as context');
      assert.ok(toolMessages(llm.requests.at(-1)).some((t) => t.includes('21 degrees and sunny in Paris')));
      assert.match(String(s.text), /The tool said/);
      assert.match(spoken(dev), /21 degrees/);
    } finally {
      dev.close();
    }
  });

  test('a resource link: the model reads it with resources_read using only the URI the tool result showed', async () => {
    const dev = device('70:00:00:00:00:05');
    try {
      await dev.hello({ mcp: true });
      const n = llm.requests.length;
      const uriIn = (text: string): string | undefined =>
        /[a-z][a-z0-9+.-]*:\/\/[^\s"()<>\]]+/i.exec(text.slice(text.indexOf('"linked"')))?.[0];
      llm.script(fakeToolCalls([{ name: 'fx__links', arguments: {} }]));
      // The second model call sees the links tool's result and must find the URI in it.
      const read: FakeRule = {
        when: (r: FakeRequestView) => r.toolResults.some((t) => t.content.includes('"linked"')),
        reply: (r: FakeRequestView) => {
          const uri = uriIn(r.toolResults.map((t) => t.content).join('\n'));
          return uri
            ? fakeToolCalls([{ name: 'fx__resources_read', arguments: { uri } }])
            : fakeText('I cannot see where that link points.');
        },
      };
      llm.rule(read);
      try {
        dev.listen('detect', { text: 'What does the linked note say?' });
        await dev.waitJson('tts', 'stop', 20_000);
      } finally {
        llm.reset();
      }
      const calls = llm.requests.slice(n).flatMap((q) => (q.body.messages ?? []).flatMap((m) => m.tool_calls ?? []));
      assert.ok(
        calls.some((c) => c.function.name === 'fx__resources_read'),
        'the model called resources_read',
      );
      assert.ok(
        toolMessages(llm.requests.at(-1)).some((t) => t.includes('linked secret')),
        'the read returned the linked resource to the model',
      );
      assert.match(spoken(dev), /linked secret/);
    } finally {
      dev.close();
    }
  });

  test("the device's own MCP tools are listed (paged) and called through the session", async () => {
    const dev = device('70:00:00:00:00:03');
    try {
      await dev.hello({ mcp: true });
      // initialize, then one tools/list per page (page size 1 → 2 pages, cursor = next tool name).
      await dev.waitFor('tools listed', () => dev.mcpRequests.filter((r) => r.method === 'tools/list').length === 2);
      const init = dev.mcpRequests.find((r) => r.method === 'initialize');
      assert.deepEqual((init?.params as { capabilities?: Record<string, unknown> }).capabilities?.vision, {
        url: 'http://127.0.0.1:9/vision/explain',
        token: 'vision-token',
      });
      const lists = dev.mcpRequests.filter((r) => r.method === 'tools/list');
      assert.equal((lists[1]?.params as Record<string, unknown>).cursor, 'self.audio_speaker.set_volume');
      assert.ok(
        dev.mcpRequests.every((r) => typeof r.id === 'number' || r.id === undefined),
        'integer JSON-RPC ids',
      );
      const n = llm.requests.length;
      llm.script(
        fakeToolCalls([{ name: 'self_audio_speaker_set_volume', arguments: { volume: 30 } }]),
        fakeText('Volume is now 30.'),
      );
      dev.listen('detect', { text: 'Set the volume to 30' });
      const s = await dev.waitJson('tts', 'sentence_start', 15_000);
      await dev.waitJson('tts', 'stop', 15_000);
      assert.equal(volume, 30);
      const call = dev.mcpRequests.find((r) => r.method === 'tools/call');
      assert.deepEqual(call?.params, { name: 'self.audio_speaker.set_volume', arguments: { volume: 30 } });
      const names = (llm.requests[n]?.body.tools ?? []).map((t) => t.function.name);
      assert.ok(names.includes('self_get_device_status') && names.includes('self_audio_speaker_set_volume'));
      assert.deepEqual(toolMessages(llm.requests.at(-1)), ['true']);
      assert.equal(s.text, 'Volume is now 30.');
    } finally {
      dev.close();
    }
  });

  test('MCP AudioContent is played to the device and ends the turn', async () => {
    const dev = device('70:00:00:00:00:04');
    try {
      await dev.hello({ mcp: true });
      const n = llm.requests.length;
      llm.script(fakeToolCalls([{ name: 'voice__say_hello_audio', arguments: {} }], { text: 'Here it is.' }));
      dev.listen('detect', { text: 'Play the hello recording' });
      await dev.waitJson('tts', 'stop', 20_000);
      const sentences = dev.json
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.deepEqual(sentences, ['Here it is.', '♪ audio']);
      assert.equal(llm.requests.length, n + 1, 'no model round after audio');
      const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
      assert.equal(decoded.bad, 0);
      // "Here it is." plus the ~3.5 s recording.
      assert.ok(decoded.ms > 3000, `played ${decoded.ms} ms`);
    } finally {
      dev.close();
    }
  });

  for (const format of ['pcm', 'l16'] as const) {
    test(`raw ${format === 'pcm' ? 'audio/pcm' : 'audio/L16'} AudioContent plays at its real length (the MIME type tells ffmpeg the format)`, async () => {
      const dev = device('70:00:00:00:00:06');
      try {
        await dev.hello({ mcp: true });
        llm.script(fakeToolCalls([{ name: 'voice__raw_tone', arguments: { format } }]));
        dev.listen('detect', { text: 'Play the tone' });
        await dev.waitJson('tts', 'stop', 20_000);
        const sentences = dev.json
          .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
          .map((j) => String(j.msg.text));
        assert.deepEqual(sentences, ['♪ audio']);
        const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
        assert.equal(decoded.bad, 0);
        // 1,500 ms of tone, padded up to whole 60 ms frames.
        assert.ok(decoded.ms >= 1440 && decoded.ms <= 1620, `played ${decoded.ms} ms`);
        assert.ok(decoded.rms > 1000, `the tone, not noise or silence (rms ${decoded.rms})`);
      } finally {
        dev.close();
      }
    });
  }

  test('an image result is described to the model, not spoken', async () => {
    const dev = device('70:00:00:00:00:05');
    try {
      await dev.hello({ mcp: true });
      llm.script(fakeToolCalls([{ name: 'voice__snapshot', arguments: {} }]));
      dev.listen('detect', { text: 'Take a picture' });
      await dev.waitJson('tts', 'stop', 15_000);
      const msgs = toolMessages(llm.requests.at(-1));
      assert.ok(
        msgs.some((t) => /image/i.test(t) && t.length < 500),
        `the model got a short description: ${msgs.join(' | ')}`,
      );
      assert.ok(!dev.json.some((j) => j.msg.type === 'tts' && /♪/.test(String(j.msg.text))));
    } finally {
      dev.close();
    }
  });
});
