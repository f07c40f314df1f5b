/**
 * Metrics move with real traffic: a spoken turn (flite → Opus → Silero → pocketsphinx → fake LLM →
 * espeak-ng → Opus) and a typed turn that calls a tool on a real stdio MCP server, scraped over a
 * real port. Also /readyz with a live MCP server and a reachable LLM, and 503 while draining.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAi, fakeText, fakeToolCalls, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { speak16k, utterancePackets } from '../../helpers/speech.ts';
import { startMeteredApp, type MeteredApp } from './helpers/metered-app.ts';
import { connectAndAsk, metricValue } from './helpers/spoken-turn.ts';
import { waitFor } from '../../helpers/wait.ts';

async function scrape(srv: MeteredApp): Promise<string> {
  const res = await fetch(`${srv.httpUrl}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text();
}

const num = (text: string, name: string, labels = ''): number => metricValue(text, name, labels) ?? Number.NaN;

describe('metrics after real turns', () => {
  let llm: FakeOpenAi;
  let srv: MeteredApp;
  let packets: Buffer[];
  before(async () => {
    llm = await startFakeOpenAi();
    srv = await startMeteredApp(llm.url, {
      // The batch engine: every stage takes time after the end of speech. (A streaming engine
      // may have the transcript at that moment, an ASR stage of 0: tests/e2e/pocketsphinx-streaming.)
      asr: { provider: 'pocketsphinx', engine: 'continuous' },
      mcpServers: {
        fixture: { command: process.execPath, args: ['--import', 'tsx', 'test/fixtures/mcp-fixture-server.ts'] },
      },
    });
    packets = await utterancePackets(speak16k('what is the weather today'));
  });
  after(async () => {
    await srv?.close();
    await llm?.close();
  });

  test('before any traffic: zero sessions and turns, MCP ready, pocketsphinx counted', async () => {
    const m = await scrape(srv);
    assert.equal(num(m, 'xiaozhi_sessions_active'), 0);
    assert.equal(num(m, 'xiaozhi_sessions_total'), 0);
    assert.equal(metricValue(m, 'xiaozhi_turns_total', 'outcome="answered"'), undefined);
    assert.equal(num(m, 'xiaozhi_first_audio_seconds_count'), 0);
    assert.equal(num(m, 'xiaozhi_mcp_server_state', 'server="fixture",state="ready"'), 1);
    assert.equal(num(m, 'xiaozhi_mcp_server_state', 'server="fixture",state="failed"'), 0);
    assert.ok(num(m, 'xiaozhi_mcp_server_tools', 'server="fixture"') > 0);
    // The streaming helper where scripts/setup.sh built it, else pocketsphinx_continuous.
    const asrChildren = ['pocketsphinx-stream', 'pocketsphinx_continuous']
      .map((program) => metricValue(m, 'xiaozhi_child_processes', `program="${program}"`) ?? 0)
      .reduce((a, b) => a + b);
    assert.ok(asrChildren >= 1, 'the ASR child is counted');
    assert.ok(num(m, 'xiaozhi_child_processes', 'program="node"') >= 1, 'the stdio MCP server is counted');
    // Node's default metrics, registered on this app's own registry.
    // Present and a real number (a missing metric reads as NaN here).
    const lag = num(m, 'nodejs_eventloop_lag_seconds');
    assert.ok(Number.isFinite(lag) && lag >= 0 && lag < 10, `event-loop lag ${lag}`);
    assert.ok(m.includes('process_resident_memory_bytes'));
  });

  test('/readyz: ready with the MCP server connected and the LLM reachable; 503 while draining', async () => {
    const res = await fetch(`${srv.httpUrl}/readyz`);
    const body = (await res.json()) as {
      status: string;
      mcpServers: Array<{ name: string; state: string }>;
      checks: Array<{ name: string; ok: boolean; target: string }>;
    };
    assert.equal(res.status, 200);
    assert.equal(body.status, 'ready');
    assert.deepEqual(
      body.mcpServers.map((s) => [s.name, s.state]),
      [['fixture', 'ready']],
    );
    assert.deepEqual(
      body.checks.map((c) => [c.name, c.ok, c.target]),
      [['llm', true, `127.0.0.1:${new URL(llm.url).port}`]],
    );
    srv.setReady(false);
    try {
      const draining = await fetch(`${srv.httpUrl}/readyz`);
      assert.equal(draining.status, 503);
      assert.equal(((await draining.json()) as { status: string }).status, 'not_ready');
    } finally {
      srv.setReady(true);
    }
  });

  test('a spoken turn moves sessions, turns and every stage histogram', async () => {
    const { dev, recognised } = await connectAndAsk(srv.wsUrl, 'e1:00:00:00:00:01', packets);
    try {
      assert.match(recognised, /weather/i);
      const m = await scrape(srv);
      assert.equal(num(m, 'xiaozhi_sessions_active'), 1);
      assert.equal(num(m, 'xiaozhi_sessions_total'), 1);
      assert.equal(num(m, 'xiaozhi_turns_total', 'source="voice",outcome="answered"'), 1);
      for (const h of [
        'xiaozhi_asr_duration_seconds',
        'xiaozhi_llm_first_token_seconds',
        'xiaozhi_first_sentence_seconds',
        'xiaozhi_first_audio_seconds',
        'xiaozhi_turn_duration_seconds',
      ]) {
        assert.equal(num(m, `${h}_count`), 1, `${h} observed once`);
        const sum = num(m, `${h}_sum`);
        // Generous sanity bounds only: positive, and well under the 30 s a turn may take.
        assert.ok(sum > 0 && sum < 30, `${h}_sum ${sum}`);
        assert.equal(num(m, `${h}_bucket`, 'le="+Inf"'), 1);
      }
      // End of speech → first frame includes ASR and the LLM's first token.
      assert.ok(num(m, 'xiaozhi_first_audio_seconds_sum') >= num(m, 'xiaozhi_llm_first_token_seconds_sum'));
      // The first sentence is ready after the transcript and before the first frame leaves.
      const firstSentence = num(m, 'xiaozhi_first_sentence_seconds_sum');
      assert.ok(
        firstSentence >= num(m, 'xiaozhi_asr_duration_seconds_sum') &&
          firstSentence <= num(m, 'xiaozhi_first_audio_seconds_sum'),
        `first sentence ${firstSentence}`,
      );
      // Registered and counted (a missing metric reads as NaN); one short answer on an idle
      // loopback cannot have more late frames than frames.
      const late = num(m, 'xiaozhi_late_frames_total');
      assert.ok(Number.isInteger(late) && late <= dev.audio.length, `late frames ${late} of ${dev.audio.length}`);
      // One interval between each two frames of the answer; the late ones are some of them.
      assert.equal(num(m, 'xiaozhi_downlink_intervals_total'), dev.audio.length - 1);
      const lateIntervals = num(m, 'xiaozhi_downlink_late_intervals_total');
      assert.ok(Number.isInteger(lateIntervals) && lateIntervals < dev.audio.length, `late intervals ${lateIntervals}`);
    } finally {
      dev.close();
      await dev.closed;
    }
    // The session is gone from the gauge once the socket closed.
    await waitFor(async () => num(await scrape(srv), 'xiaozhi_sessions_active') === 0, {
      what: 'xiaozhi_sessions_active to be 0',
      intervalMs: 50,
    });
  });

  test('a typed turn with an MCP tool call and a failing tool call: tool calls by server and outcome', async () => {
    const dev = new DeviceSim({ url: srv.wsUrl, deviceId: 'e1:00:00:00:00:02' });
    try {
      await dev.hello();
      llm.script(
        fakeToolCalls([
          { name: 'fixture__echo', arguments: { text: 'hi' } },
          { name: 'fixture__no_such_tool', arguments: {} },
          { name: 'get_current_datetime', arguments: {} },
        ]),
        fakeText('Done checking.'),
      );
      dev.listen('detect', { text: 'Please echo hi and tell me the time.' });
      await dev.waitJson('tts', 'stop', 20_000);
      const m = await scrape(srv);
      assert.equal(num(m, 'xiaozhi_sessions_total'), 2);
      assert.equal(num(m, 'xiaozhi_turns_total', 'source="text",outcome="answered"'), 1);
      assert.equal(num(m, 'xiaozhi_tool_calls_total', 'server="fixture",outcome="ok"'), 1);
      assert.equal(num(m, 'xiaozhi_tool_calls_total', 'server="fixture",outcome="error"'), 1);
      assert.equal(num(m, 'xiaozhi_tool_calls_total', 'server="local",outcome="ok"'), 1);
      assert.equal(num(m, 'xiaozhi_tool_call_duration_seconds_count', 'server="fixture"'), 2);
      // A typed turn has no ASR: the ASR histogram did not move.
      assert.equal(num(m, 'xiaozhi_asr_duration_seconds_count'), 1);
    } finally {
      dev.close();
    }
  });
});
