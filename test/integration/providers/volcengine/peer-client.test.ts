/**
 * The Volcengine stand-in checked by a client we did not write: xinnan-tech/xiaozhi-esp32-server's
 * Doubao streaming ASR client (`test/fixtures/peer/xinnan-doubao-stream/doubao_stream.py`,
 * unchanged, MIT), the most used sauc client among xiaozhi servers, run by Python against the
 * stand-in. If the stand-in misread the protocol the same way our client does, this client, which
 * works against the real service, would fail here: it reads responses at fixed offsets (sequence,
 * size, JSON at byte 12, never gunzipped), error frames as code, size and JSON, and it sends
 * legacy request fields, no sequence numbers, the JSON nibble on audio and an empty last packet.
 *
 * A second client's framing covers what xinnan's does not: di-osc's LiveKit plugin
 * (`test/fixtures/peer/di-osc-volcengine-stt/stt.py`, unchanged, MIT) numbers its request and
 * packets, ends with a negative sequence, and reads responses by their flags and compression
 * nibble; its framing functions are run as written (the plugin's LiveKit socket loop is not).
 *
 * Needs a python3 with the `websockets` module (Debian: python3-websockets, which
 * `scripts/setup.sh --test` installs); skipped with that reason when there is none.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { encodeAudioPacket, encodeFullClientRequest } from '../../../../providers/volcengine/frames.ts';
import { startFakeVolcengine, type FakeVolcengine } from '../../../fixtures/fake-volcengine.ts';

const run = promisify(execFile);
const PEER = fileURLToPath(new URL('../../../fixtures/peer/', import.meta.url));
const CLIENT = join(PEER, 'xinnan-doubao-stream', 'doubao_stream.py');
const HARNESS = join(PEER, 'xinnan_doubao_harness.py');
const DI_OSC = join(PEER, 'di-osc-volcengine-stt', 'stt.py');
const DI_OSC_HARNESS = join(PEER, 'di_osc_framing_harness.py');
const KEYS = { appKey: 'test-app-key', accessKey: 'test-access-key' };

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

const SENTENCES = ['打开客厅的灯。', '再放一首歌。'];
/**
 * The stand-in's recogniser for these tests: one sentence per stretch of tone (at least 300 ms
 * loud), so the sentence ends the peer relies on line up with the audio.
 */
function bySpeech(pcm: Int16Array): string {
  let runs = 0;
  let loud = 0;
  for (let at = 0; at + 160 <= pcm.length; at += 160) {
    let peak = 0;
    for (let i = at; i < at + 160; i++) peak = Math.max(peak, Math.abs(pcm[i] ?? 0));
    if (peak > 1000) loud += 10;
    else loud = 0;
    if (loud === 300) runs += 1;
  }
  return SENTENCES.slice(0, runs).join('');
}

function audio(parts: Array<['tone' | 'silence', number]>): Buffer {
  const chunks = parts.map(([kind, ms]) => {
    const pcm = new Int16Array((ms * 16000) / 1000);
    if (kind === 'tone') for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(6000 * Math.sin(i / 5));
    return Buffer.from(pcm.buffer);
  });
  return Buffer.concat(chunks);
}

interface PeerRun {
  texts: string[];
  errors: string[];
  websockets: string;
}

describe('the stand-in against clients we did not write (xinnan’s Doubao client, di-osc’s framing)', { skip }, () => {
  let fake: FakeVolcengine;
  const dir = mkdtempSync(join(tmpdir(), 'volc-peer-'));
  before(async () => {
    fake = await startFakeVolcengine({ transcribe: bySpeech });
  });
  after(async () => {
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function peer(mode: 'manual' | 'auto', pcm: Buffer, o: { accessKey?: string } = {}): Promise<PeerRun> {
    const file = join(dir, `${mode}-${fake.sessions.length}.pcm`);
    writeFileSync(file, pcm);
    const { stdout } = await run(
      python as string,
      [HARNESS, CLIENT, fake.url, KEYS.appKey, o.accessKey ?? KEYS.accessKey, 'volc.bigasr.sauc.duration', mode, file],
      { timeout: 30_000 },
    );
    return JSON.parse(stdout) as PeerRun;
  }

  test('push-to-talk: its frames are accepted as sent, and the sentences it gets (single results) make the whole text', async () => {
    const pcm = audio([
      ['tone', 800],
      ['silence', 400],
      ['tone', 800],
      ['silence', 100],
    ]);
    const got = await peer('manual', pcm);
    assert.deepEqual(got.errors, []);
    assert.deepEqual(got.texts, [SENTENCES.join('')]);

    const s = fake.sessions.at(-1);
    assert.ok(s);
    assert.deepEqual(s.errors, []);
    assert.equal(s.end, 'last-packet');
    // Its audio exactly, the first 60 ms frame twice: on connecting it replays its cache, which
    // already holds the frame it then sends again (its own behaviour, harmless to the service).
    const received = Buffer.from(s.audio.buffer, s.audio.byteOffset, s.audio.byteLength);
    assert.ok(received.equals(Buffer.concat([pcm.subarray(0, 1920), pcm])), 'its audio, as it sent it');
    const request = s.request as { request: Record<string, unknown>; audio: Record<string, unknown> };
    assert.equal(request.request.result_type, 'single');
    assert.equal(request.request.end_window_size, 200);
    assert.equal(request.audio.codec, 'pcm');
    // What it sends: a gzip JSON request, then audio with the JSON nibble and no sequence, then an empty last packet.
    const [first, ...rest] = s.frames;
    assert.deepEqual(first && { ...first, bytes: 0 }, {
      type: 1,
      flags: 0,
      serialization: 1,
      compression: 1,
      bytes: 0,
    });
    assert.deepEqual(
      new Set(rest.slice(0, -1).map((f) => JSON.stringify([f.type, f.flags, f.serialization, f.compression]))),
      new Set([JSON.stringify([2, 0, 1, 1])]),
    );
    assert.deepEqual(rest.at(-1), { type: 2, flags: 0b0010, serialization: 1, compression: 1, bytes: 0 });
    // A sentence became definite at the pause, before the end: the client took it from the response it came in.
    assert.ok(s.responses.filter((r) => !r.last && r.text === SENTENCES[0]).length > 0);
  });

  test('automatic mode: it takes the first definite sentence (after its end_window_size of silence) and hangs up', async () => {
    const got = await peer(
      'auto',
      audio([
        ['tone', 1500],
        ['silence', 1500],
      ]),
    );
    assert.deepEqual(got.errors, []);
    assert.deepEqual(got.texts, [SENTENCES[0]]);
    const s = fake.sessions.at(-1);
    assert.deepEqual(s?.errors, []);
    assert.equal(s?.end, 'closed', 'it closes without a last packet, as in production');
  });

  test("an error frame reaches it as the vendor's code and message", async () => {
    fake.fault = 'error';
    try {
      const got = await peer('manual', audio([['tone', 600]]));
      assert.deepEqual(got.texts, []);
      assert.ok(
        got.errors.some((e) => e.includes('fault injected by the test')),
        `its log: ${got.errors.join(' | ')}`,
      );
    } finally {
      fake.fault = 'none';
    }
  });

  test('a wrong access key is refused at the handshake with HTTP 401', async () => {
    const got = await peer('manual', audio([['tone', 300]]), { accessKey: 'wrong' });
    assert.deepEqual(got.texts, []);
    assert.ok(
      got.errors.some((e) => e.includes('401')),
      `its log: ${got.errors.join(' | ')}`,
    );
  });

  test("di-osc's framing: numbered request and packets, a negative last one; every answer read by its flag-honouring parser", async () => {
    const pcm = audio([['tone', 1000]]);
    const file = join(dir, 'di-osc.pcm');
    writeFileSync(file, pcm);
    const { stdout } = await run(
      python as string,
      [DI_OSC_HARNESS, DI_OSC, fake.urlFor('bigmodel'), KEYS.appKey, KEYS.accessKey, file],
      { timeout: 30_000 },
    );
    const got = JSON.parse(stdout) as {
      responses: Array<{ sequence: number | null; last: boolean; text: string | null }>;
      error: string | null;
    };
    assert.equal(got.error, null);
    // bigmodel: the init reply, then one answer per 100 ms packet but the last, then the final.
    assert.equal(got.responses.length, 11);
    assert.deepEqual(
      got.responses.map((r) => r.sequence),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -11],
    );
    assert.deepEqual(got.responses.at(-1), { sequence: -11, last: true, text: SENTENCES[0] });
    assert.ok(got.responses.slice(0, -1).every((r) => !r.last && typeof r.text === 'string'));

    const s = fake.sessions.at(-1);
    assert.ok(s);
    assert.deepEqual(s.errors, []);
    assert.equal(s.end, 'last-packet');
    assert.ok(Buffer.from(s.audio.buffer, s.audio.byteOffset, s.audio.byteLength).equals(pcm), 'its audio, exactly');
    assert.deepEqual(
      s.frames.map((f) => [f.type, f.flags, f.sequence]),
      [[1, 0b0001, 1], ...Array.from({ length: 9 }, (_, i) => [2, 0b0001, i + 2]), [2, 0b0011, -11]],
    );
  });

  test('our frames have its header bytes, but for the raw-audio serialisation nibble the documentation asks for', async () => {
    const { stdout } = await run(python as string, [
      '-c',
      [
        'import sys, importlib.util',
        `sys.argv = ["harness"]`,
        `spec = importlib.util.spec_from_file_location("h", ${JSON.stringify(HARNESS)})`,
        'h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h); h._install_stubs()',
        `spec = importlib.util.spec_from_file_location("c", ${JSON.stringify(CLIENT)})`,
        'c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)',
        'a = c.ASRProvider({"appid": "x", "access_token": "y"}, True)',
        'print(bytes(a.generate_header()).hex(), bytes(a.generate_audio_default_header()).hex(), bytes(a.generate_last_audio_default_header()).hex())',
      ].join('\n'),
    ]);
    const [request, audioHeader, lastHeader] = stdout.trim().split(' ');
    assert.equal(encodeFullClientRequest({}).subarray(0, 4).toString('hex'), request);
    // Theirs: 11 20 11 00 (JSON nibble on audio, which the service tolerates); ours: raw, as documented.
    assert.equal(audioHeader, '11201100');
    assert.equal(encodeAudioPacket(Buffer.alloc(0), false).subarray(0, 4).toString('hex'), '11200100');
    assert.equal(lastHeader, '11221100');
    assert.equal(encodeAudioPacket(Buffer.alloc(0), true).subarray(0, 4).toString('hex'), '11220100');
  });
});
