/**
 * The Volcengine TTS stand-in checked by a client we did not write: xinnan-tech/xiaozhi-esp32-server's
 * bidirectional TTS client (`test/fixtures/peer/xinnan-doubao-tts/huoshan_double_stream.py`,
 * unchanged, MIT), the most used v3 bidirection client among xiaozhi servers, run by Python against
 * the stand-in. If the stand-in misread the protocol the same way our client does, this client,
 * which works against the real service, would fail here: it writes its own frames (no
 * StartConnection, TaskRequest before SessionStarted, the full settings in every TaskRequest,
 * `additions` as a JSON string, CancelSession on barge-in), and reads the server's at fixed offsets
 * (event, a sized session id, a sized payload; audio only from an audio-only response with event
 * 352; the sentence text from a top-level `text`).
 *
 * Needs a python3 with the `websockets` module (Debian: python3-websockets, which
 * `scripts/setup.sh --test` installs); skipped with that reason when there is none.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { encodeEventFrame } from '../../../../providers/volcengine/frames.ts';
import { startFakeVolcengineTts, type FakeVolcengineTts } from '../../../fixtures/fake-volcengine-tts.ts';

const run = promisify(execFile);
const PEER = fileURLToPath(new URL('../../../fixtures/peer/', import.meta.url));
const CLIENT = join(PEER, 'xinnan-doubao-tts', 'huoshan_double_stream.py');
const HARNESS = join(PEER, 'xinnan_doubao_tts_harness.py');
const KEYS = { appKey: 'test-app-key', accessKey: 'test-access-key' };
const VOICE = 'zh_female_wanwanxiaohe_moon_bigtts';

/** The first python3 that has `websockets` (Debian's is /usr/bin/python3; a pyenv one may lack it). */
function findPython(): string | undefined {
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(candidate, ['-c', 'import websockets'], { stdio: 'ignore' });
    if (r.status === 0) return candidate;
  }
  return undefined;
}
const python = findPython();
const skip = python
  ? false
  : 'no python3 with the websockets module (Debian: apt-get install python3-websockets; scripts/setup.sh --test installs it)';

interface PeerRun {
  answers: Array<{ marks: string[]; pcm_bytes: number; after_cancel: number }>;
  errors: string[];
  websockets: string;
}

describe('the TTS stand-in against a client we did not write (xinnan’s huoshan_double_stream)', { skip }, () => {
  let fake: FakeVolcengineTts;
  before(async () => {
    // SessionStarted 100 ms after StartSession: the client's TaskRequests, sent without waiting, come first.
    fake = await startFakeVolcengineTts({ sessionStartMs: 100, chunkIntervalMs: 5 });
  });
  after(async () => {
    await fake?.close();
  });

  async function peer(
    scenario: 'stream' | 'cancel' | 'to_tts',
    answers: string[][],
    o: { accessKey?: string; resourceId?: string; voice?: string; rate?: number } = {},
  ): Promise<PeerRun> {
    const { stdout } = await run(
      python as string,
      [
        HARNESS,
        CLIENT,
        fake.url,
        KEYS.appKey,
        o.accessKey ?? KEYS.accessKey,
        o.resourceId ?? 'volc.service_type.10029',
        o.voice ?? VOICE,
        String(o.rate ?? 16_000),
        scenario,
        JSON.stringify(answers),
      ],
      { timeout: 60_000 },
    );
    return JSON.parse(stdout) as PeerRun;
  }

  test('two answers on one connection: its frames are taken as sent, and its parser reads our marks and audio', async () => {
    const first = fake.sessions.length;
    const got = await peer('stream', [
      ['今天', '天气', '很好。', '我们去', '公园吧！'],
      ['第二个', '回答。'],
    ]);
    assert.deepEqual(got.errors, []);
    const sessions = fake.sessions.slice(first);
    assert.equal(sessions.length, 2);
    // Marks from TTSSentenceStart's top-level text, audio from the 0xB frames, all of it.
    assert.deepEqual(
      got.answers.map((a) => a.marks),
      [['今天天气很好。', '我们去公园吧！'], ['第二个回答。']],
    );
    assert.deepEqual(
      got.answers.map((a) => a.pcm_bytes),
      sessions.map((s) => s.audioBytes),
    );
    for (const s of sessions) {
      assert.deepEqual(s.errors, []);
      assert.equal(s.end, 'finished');
      assert.equal(s.afterStartConnection, false, 'it never sends StartConnection');
      assert.equal(s.connection, sessions[0]?.connection, 'one connection, reused');
    }
    const [a] = sessions;
    assert.ok(a);
    assert.ok(a.earlyTexts > 0, 'TaskRequests before SessionStarted were taken');
    assert.equal(a.texts.join(''), '今天天气很好。我们去公园吧！');
    // Its settings: the device's rate, pcm, and `additions` a JSON string the stand-in parsed.
    const req = a.params.req_params as Record<string, unknown>;
    assert.deepEqual(req.audio_params, { speech_rate: 0, loudness_rate: 0, sample_rate: 16_000, format: 'pcm' });
    assert.deepEqual(a.additions, { aigc_metadata: {}, cache_config: {}, post_process: { pitch: 0 } });
    assert.equal(a.headers.appKey, KEYS.appKey);
    // 120 ms of tone per character at 16 kHz: the rate it asked for.
    assert.equal(got.answers[1]?.pcm_bytes, Math.round((16_000 * 6 * 120) / 1000) * 2);
  });

  test('barge-in: its CancelSession gets SessionCanceled, no audio after it, and the connection serves the next answer', async () => {
    const first = fake.sessions.length;
    const got = await peer('cancel', [['这是一句会被打断的很长很长很长很长很长很长的话。'], ['下一个回答。']]);
    assert.deepEqual(got.errors, []);
    const [cancelled, next] = fake.sessions.slice(first);
    assert.equal(cancelled?.end, 'cancelled');
    assert.equal(got.answers[0]?.after_cancel, 0);
    assert.ok((got.answers[0]?.pcm_bytes ?? 0) > 0);
    assert.equal(next?.end, 'finished');
    assert.equal(next?.connection, cancelled?.connection);
    assert.deepEqual(got.answers[1]?.marks, ['下一个回答。']);
  });

  test('its one-shot to_tts (StartSession, TaskRequest, FinishSession in a row) gets all the audio', async () => {
    const first = fake.sessions.length;
    const got = await peer('to_tts', [['你好，', '世界。']], { rate: 24_000 });
    assert.deepEqual(got.errors, []);
    const s = fake.sessions[first];
    assert.equal(s?.end, 'finished');
    assert.equal(got.answers[0]?.pcm_bytes, s?.audioBytes);
    assert.ok((s?.audioBytes ?? 0) > 0);
  });

  test('seed-tts-2.0: its own text for the subtitles (it ignores our single sentence start), the audio as on 1.0', async () => {
    const first = fake.sessions.length;
    const got = await peer('stream', [['二点零。']], {
      resourceId: 'seed-tts-2.0',
      voice: 'zh_female_vv_uranus_bigtts',
    });
    assert.deepEqual(got.errors, []);
    assert.deepEqual(got.answers[0]?.marks, []);
    assert.equal(got.answers[0]?.pcm_bytes, fake.sessions[first]?.audioBytes);
  });

  test('a wrong access key is refused at the handshake with HTTP 401', async () => {
    const got = await peer('stream', [['你好。']], { accessKey: 'wrong' });
    assert.ok(
      got.errors.some((e) => e.includes('401')),
      `its log: ${got.errors.join(' | ')}`,
    );
  });

  test('our frames have its header bytes and layout (event, sized session id, sized JSON)', async () => {
    const { stdout } = await run(python as string, [
      '-c',
      [
        'import sys, importlib.util',
        `spec = importlib.util.spec_from_file_location("h", ${JSON.stringify(HARNESS)})`,
        'h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h); h._install_stubs()',
        `spec = importlib.util.spec_from_file_location("c", ${JSON.stringify(CLIENT)})`,
        'c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)',
        'hd = c.Header(message_type=c.FULL_CLIENT_REQUEST, message_type_specific_flags=c.MsgTypeFlagWithEvent, serial_method=c.JSON).as_bytes()',
        'op = c.Optional(event=c.EVENT_FinishSession, sessionId="abc").as_bytes()',
        'print((bytes(hd) + bytes(op) + len(b"{}").to_bytes(4, "big") + b"{}").hex())',
      ].join('\n'),
    ]);
    assert.equal(encodeEventFrame(102, 'abc', {}).toString('hex'), stdout.trim());
  });
});
