/**
 * The CosyVoice stand-in checked by a client we did not write: the DashScope Python SDK's own
 * synthesizer (`test/fixtures/peer/dashscope-sdk-tts/speech_synthesizer.py`, unchanged, Apache
 * 2.0), run by Python against the stand-in through `dashscope_tts_harness.py`. If the stand-in
 * misread the protocol the way our client does, the vendor's client would fail here: it builds
 * its own commands (the model and task fields repeated in every continue-task, the seed and type
 * parameters, `enable_ssml` on its one-shot `call`), reads `header.event` and binary frames
 * through websocket-client, and times its first package as the vendor documents.
 *
 * Needs a python3 with `websocket` (websocket-client; Debian: python3-websocket, which
 * `scripts/setup.sh --test` installs); skipped with that reason when there is none.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { continueTask, finishTask, runTask } from '../../../../providers/dashscope/messages.ts';
import { CosyVoiceTtsSchema } from '../../../../providers/dashscope/tts-options.ts';
import { startFakeCosyVoiceTts, type FakeCosyVoice } from '../../../fixtures/fake-cosyvoice-tts.ts';
import { waitFor, within } from '../../../helpers/wait.ts';

const run = promisify(execFile);
const PEER = fileURLToPath(new URL('../../../fixtures/peer/', import.meta.url));
const SDK = join(PEER, 'dashscope-sdk-tts');
const HARNESS = join(PEER, 'dashscope_tts_harness.py');

/** The first python3 that has websocket-client (Debian's is /usr/bin/python3; a pyenv one may lack it). */
function findPython(): string | undefined {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(candidate, ['-c', 'import websocket'], { stdio: 'ignore' });
    if (r.status === 0) return candidate;
  }
  return undefined;
}
const python = findPython();
const skip = python
  ? false
  : 'no python3 with the websocket module (Debian: apt-get install python3-websocket; scripts/setup.sh --test installs it)';

/** The stand-in's tone: 120 ms per Han character, 50 ms per other one; s16 at 24 kHz. */
function toneBytes(text: string): number {
  let ms = 0;
  for (const ch of text) ms += /\p{Script=Han}/u.test(ch) ? 120 : 50;
  return Math.round((ms * 24000) / 1000) * 2;
}

interface PeerRun {
  events: Array<[string | null, string | null]>;
  audio_bytes: number;
  complete: boolean;
  errors: string[];
  exception: string | null;
  first_package_delay_ms: number | null;
}

describe('the stand-in against the DashScope SDK’s synthesizer (a client we did not write)', { skip }, () => {
  let fake: FakeCosyVoice;
  before(async () => {
    fake = await startFakeCosyVoiceTts({ speech: 'tone' });
  });
  after(async () => {
    await fake?.close();
  });

  async function peer(
    mode: 'stream' | 'call' | 'cancel',
    texts: string[],
    o: { apiKey?: string; voice?: string } = {},
  ) {
    const { stdout } = await run(
      python as string,
      [HARNESS, SDK, fake.url, o.apiKey ?? fake.apiKey, 'cosyvoice-v2', o.voice ?? 'longxiaochun_v2', mode, ...texts],
      { timeout: 30_000 },
    );
    return JSON.parse(stdout) as PeerRun;
  }

  test('streaming_call in fragments, then streaming_complete: its events and audio, sentence by sentence', async () => {
    const got = await peer('stream', ['你好，', '今天天气不错。', '明天见']);
    assert.equal(got.exception, null);
    assert.deepEqual(got.errors, []);
    assert.equal(got.complete, true);
    const begins = got.events.filter(([type]) => type === 'sentence-begin').map(([, text]) => text);
    assert.deepEqual(begins, ['你好，今天天气不错。', '明天见']);
    assert.equal(got.events.filter(([type]) => type === 'sentence-end').length, 2);
    assert.equal(got.audio_bytes, toneBytes('你好，今天天气不错。') + toneBytes('明天见'));
    // One sentence-synthesis event before each binary frame (40 ms of audio, 1920 bytes).
    assert.equal(
      got.events.filter(([type]) => type === 'sentence-synthesis').length,
      Math.ceil(toneBytes('你好，今天天气不错。') / 1920) + Math.ceil(toneBytes('明天见') / 1920),
    );
    assert.equal(typeof got.first_package_delay_ms, 'number');

    const s = fake.sessions.at(-1);
    assert.ok(s);
    assert.deepEqual(s.errors, []);
    assert.deepEqual(s.texts, ['你好，', '今天天气不错。', '明天见']);
    assert.equal(s.early, 0, 'the SDK waits for task-started');
    assert.equal(s.end, 'finish');
    assert.equal(s.headers.authorization, `Bearer ${fake.apiKey}`);
    const params = s.run.parameters as Record<string, unknown>;
    assert.equal(params.format, 'pcm');
    assert.equal(params.sample_rate, 24000);
    await waitFor(() => fake.openSockets() === 0, { what: 'the SDK to close its connection after use' });
  });

  test('call(): one continue-task with enable_ssml, the whole audio returned', async () => {
    const got = await peer('call', ['你好。再见。']);
    assert.equal(got.exception, null);
    assert.deepEqual(got.errors, []);
    assert.equal(got.complete, true);
    assert.equal(got.audio_bytes, toneBytes('你好。') + toneBytes('再见。'));
    const s = fake.sessions.at(-1);
    assert.equal((s?.run.parameters as Record<string, unknown>).enable_ssml, true);
    assert.deepEqual(s?.texts, ['你好。再见。']);
  });

  test('streaming_cancel at the first audio: its finish-task and close are taken without an error', async () => {
    const slow = await startFakeCosyVoiceTts({ speech: 'tone', chunkIntervalMs: 20 });
    try {
      const { stdout } = await run(
        python as string,
        [
          HARNESS,
          SDK,
          slow.url,
          slow.apiKey,
          'cosyvoice-v2',
          'longxiaochun_v2',
          'cancel',
          '这是一段很长的回答，要说上好几秒钟。',
        ],
        { timeout: 30_000 },
      );
      const got = JSON.parse(stdout) as PeerRun;
      assert.equal(got.exception, null);
      assert.ok(got.audio_bytes > 0);
      const s = slow.sessions[0];
      assert.deepEqual(s?.errors, []);
      assert.equal(s?.end, 'finish');
      await waitFor(() => slow.openSockets() === 0, { what: 'the SDK to close its connection' });
    } finally {
      await slow.close();
    }
  });

  test('an unknown voice reaches it as a task-failed with the code and message in the header', async () => {
    const got = await peer('stream', ['你好。'], { voice: 'no-such-voice' });
    assert.equal(got.complete, false);
    // Its on_error gets the event itself: the code and message are read from the header.
    assert.ok(
      got.errors.some((e) => e.startsWith('on_error:') && e.includes('task-failed') && e.includes('voice not found')),
      `its log: ${got.errors.join(' | ')}`,
    );
  });

  test('a wrong key is refused at the handshake with HTTP 401', async () => {
    const got = await peer('stream', ['你好。'], { apiKey: 'sk-wrong' });
    assert.equal(got.complete, false);
    assert.ok(
      got.errors.some((e) => e.includes('401')),
      `its log: ${got.errors.join(' | ')}`,
    );
  });

  test('our commands have the shape of the SDK’s: the same header fields, the same run-task parameters it sends', async () => {
    const { stdout } = await run(python as string, [
      '-c',
      [
        'import sys, json, importlib.util',
        `spec = importlib.util.spec_from_file_location("h", ${JSON.stringify(HARNESS)})`,
        'h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)',
        `s = h._install_stubs(${JSON.stringify(SDK)}, "ws://x", "k")`,
        'r = s.Request(apikey="k", model="cosyvoice-v2", voice="longxiaochun_v2", format="pcm", sample_rate=24000)',
        'print(json.dumps([json.loads(r.get_start_request()), json.loads(r.get_continue_request("你好")), json.loads(r.get_finish_request())]))',
      ].join('\n'),
    ]);
    const [start, cont, finish] = JSON.parse(stdout) as Array<{
      header: Record<string, unknown>;
      payload: Record<string, unknown>;
    }>;
    assert.ok(start && cont && finish);
    const o = CosyVoiceTtsSchema.parse({ provider: 'cosyvoice', apiKey: 'k' });
    const ours = [runTask(o, 't'), continueTask('t', '你好'), finishTask('t')].map(
      (c) => JSON.parse(c) as { header: Record<string, unknown>; payload: Record<string, unknown> },
    );
    for (const [i, theirs] of [start, cont, finish].entries()) {
      const mine = ours[i];
      assert.ok(mine);
      assert.deepEqual({ ...mine.header, task_id: 'x' }, { ...theirs.header, task_id: 'x' });
      assert.match(String(theirs.header.task_id), /^[0-9a-f]{32}$/, 'both use 32-hex task ids');
    }
    const theirParams = start.payload.parameters as Record<string, unknown>;
    const ourParams = ours[0]?.payload.parameters as Record<string, unknown>;
    // Ours leaves volume, rate, pitch, seed and type to the service's defaults (the SDK sends them).
    for (const [k, v] of Object.entries(ourParams)) assert.deepEqual(theirParams[k], v, k);
    const { parameters: _a, ...theirRest } = start.payload;
    const { parameters: _b, ...ourRest } = ours[0]?.payload ?? {};
    assert.deepEqual(ourRest, theirRest);
    // The SDK repeats the model and task in every continue-task; the documented payload (ours) is the input.
    assert.deepEqual(cont.payload.input, ours[1]?.payload.input);
    assert.deepEqual(finish.payload, ours[2]?.payload);
  });

  test('a client that sends its text before task-started (as xinnan’s and di-osc’s do) is queued, not refused', async () => {
    const slow = await startFakeCosyVoiceTts({ speech: 'tone', startDelayMs: 150 });
    try {
      const o = CosyVoiceTtsSchema.parse({ provider: 'cosyvoice', apiKey: slow.apiKey });
      const ws = new WebSocket(slow.url, { headers: { Authorization: `Bearer ${slow.apiKey}` } });
      const events: string[] = [];
      let bytes = 0;
      const finished = new Promise<void>((resolve, reject) => {
        ws.on('message', (data: Buffer, isBinary: boolean) => {
          if (isBinary) return void (bytes += data.length);
          const event = (JSON.parse(data.toString()) as { header: { event: string } }).header.event;
          events.push(event);
          if (event === 'task-finished') resolve();
          if (event === 'task-failed') reject(new Error(data.toString()));
        });
        ws.on('error', reject);
      });
      await new Promise((resolve) => ws.once('open', resolve));
      ws.send(runTask(o, 'early'));
      ws.send(continueTask('early', '早到的文字。'));
      ws.send(finishTask('early'));
      await within(finished, 10_000, 'task-finished');
      ws.close();
      assert.equal(events[0], 'task-started');
      assert.equal(events.at(-1), 'task-finished');
      assert.equal(bytes, toneBytes('早到的文字。'));
      assert.equal(slow.sessions[0]?.early, 1);
    } finally {
      await slow.close();
    }
  });
});
