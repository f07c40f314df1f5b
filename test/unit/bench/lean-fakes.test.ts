/**
 * The simulator's lean fakes with a latency profile: they answer no sooner than configured (lower
 * bounds only: the machine is shared), stream what a real provider streams, refuse what the
 * server would never send, and count their work for the report. The pacing runs on one timer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '../../../audio/pcm/wav.ts';
import { canStreamText, type Tts } from '../../../audio/tts/tts.ts';
import { silentLogger } from '../../../core/logger.ts';
import { createTts } from '../../../providers/index.ts';
import { DueQueue } from '../../bench/sim/due-queue.ts';
import { startLeanFakes, type FakeStats, TTS_SAMPLE_RATE, uploadedWavMs } from '../../bench/sim/lean-fakes.ts';
import { PROFILES, type ProviderLatency } from '../../bench/sim/provider-profiles.ts';
import { simServerConfig } from '../../bench/sim/server.ts';

const ANSWER = 'It is sunny today. Enjoy your day!';

function slow(over: Partial<ProviderLatency>): ProviderLatency {
  return { ...PROFILES.cloud, ...over };
}

/** A multipart upload of `ms` of 16 kHz silence, as the server's OpenAI ASR client sends it. */
function upload(ms: number): { body: Buffer; type: string } {
  const boundary = 'sim-test-boundary';
  const wav = encodeWav(new Int16Array(ms * 16), 16000);
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="u.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
    ),
    wav,
    Buffer.from(
      `\r\n--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n--${boundary}--\r\n`,
    ),
  ]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

test('the due queue runs jobs in time order on one timer, including jobs they schedule', async () => {
  const q = new DueQueue();
  const seen: string[] = [];
  const t = performance.now();
  await new Promise<void>((resolve) => {
    q.at(t + 30, () => seen.push('c'));
    q.at(t + 10, () => {
      seen.push('a');
      q.at(t + 20, () => seen.push('b'));
    });
    q.at(t + 10, () => seen.push('a2'));
    q.at(t + 40, () => resolve());
  });
  assert.deepEqual(seen, ['a', 'a2', 'b', 'c']);
  q.at(performance.now() + 5, () => seen.push('dropped'));
  q.close();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(seen.includes('dropped'), false, 'close drops what was waiting');
  assert.equal(q.size, 0);
});

test('the WAV length of an upload is read from its header', () => {
  assert.equal(uploadedWavMs(upload(2500).body), 2500);
  assert.equal(uploadedWavMs(Buffer.from('--b\r\nname="file"\r\n\r\nnot audio')), null);
});

test('with the cloud profile: the transcript waits 350 ms + 5 % of the audio, the first token its time to first token, then one piece per token', async () => {
  const fakes = await startLeanFakes({
    transcript: 'hello there',
    answer: ANSWER,
    providers: slow({ asrMs: 100, asrPerAudio: 0.1, llmTtftMs: 150, llmTokensPerS: 100, tts: 'embedded' }),
  });
  try {
    assert.equal(fakes.tts, null, 'no speech fake with the embedded TTS');
    const u = upload(2000);
    let t0 = performance.now();
    const asr = await fetch(`${fakes.asr}/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': u.type },
      body: new Uint8Array(u.body),
    });
    assert.equal(asr.status, 200);
    assert.deepEqual(await asr.json(), { text: 'hello there' });
    const asrMs = performance.now() - t0;
    assert.ok(asrMs >= 299, `transcript after 100 + 0.1 × 2000 ms, got ${asrMs.toFixed(0)}`);

    t0 = performance.now();
    const chat = await fetch(`${fakes.llm}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    assert.equal(chat.status, 200);
    const reader = (chat.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    let firstContentMs: number | null = null;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
      if (firstContentMs === null && text.includes('"content":"It i')) firstContentMs = performance.now() - t0;
    }
    const totalMs = performance.now() - t0;
    assert.ok(firstContentMs !== null && firstContentMs >= 149, `first token after 150 ms, got ${firstContentMs}`);
    // 9 pieces of 4 characters: the last one 8 tokens after the first, at 100 tokens a second.
    const pieces = Math.ceil(ANSWER.length / 4);
    assert.ok(totalMs >= 150 + (pieces - 1) * 10 - 1, `paced over ${totalMs.toFixed(0)} ms`);
    const contents = [...text.matchAll(/"content":"([^"]*)"/g)].map((m) => m[1]).join('');
    assert.equal(contents, ANSWER, 'the whole answer, in order');
    assert.ok(text.trimEnd().endsWith('data: [DONE]'));

    const stats = (await (await fetch(fakes.stats)).json()) as FakeStats;
    assert.deepEqual(stats, { asr: { requests: 1, audioMs: 2000, delayMs: 300 }, chats: 1, speeches: 0 });
  } finally {
    await fakes.close();
  }
});

test('the speech fake answers pcm at 24 kHz after its first-audio delay, as long as the text takes to say, and refuses other formats', async () => {
  // One second of "speech" for the whole answer.
  const clip = new Int16Array(TTS_SAMPLE_RATE).map((_, i) => Math.round(3000 * Math.sin(i / 5)));
  const fakes = await startLeanFakes({
    transcript: 'x',
    answer: ANSWER,
    providers: slow({ ttsFirstAudioMs: 120, ttsSpeed: 4 }),
    ttsClip: clip,
  });
  try {
    assert.ok(fakes.tts);
    const speak = (body: unknown): Promise<Response> =>
      fetch(`${fakes.tts}/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const t0 = performance.now();
    const res = await speak({ model: 'tts-1', voice: 'alloy', input: 'It is sunny today.', response_format: 'pcm' });
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    let firstMs: number | null = null;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (bytes === 0) firstMs = performance.now() - t0;
      bytes += value.byteLength;
    }
    assert.ok(firstMs !== null && firstMs >= 119, `first audio after 120 ms, got ${firstMs}`);
    // 18 of the answer's 34 characters: that share of the clip's second, in whole 16-bit samples.
    assert.equal(bytes, Math.round((18 / ANSWER.length) * TTS_SAMPLE_RATE) * 2);
    // A very short text still gets 300 ms; never more than the clip.
    const short = await speak({ model: 'tts-1', voice: 'alloy', input: 'Hi', response_format: 'pcm' });
    assert.equal((await short.arrayBuffer()).byteLength, 0.3 * TTS_SAMPLE_RATE * 2);
    const wav = await speak({ model: 'tts-1', voice: 'alloy', input: 'Hi', response_format: 'wav' });
    assert.equal(wav.status, 400);
    await wav.body?.cancel();
    const empty = await speak({ model: 'tts-1', voice: 'alloy', input: '', response_format: 'pcm' });
    assert.equal(empty.status, 400);
    await empty.body?.cancel();
    const huge = await speak({ model: 'tts-1', voice: 'alloy', input: 'a'.repeat(4097), response_format: 'pcm' });
    assert.equal(huge.status, 400);
    await huge.body?.cancel();
    const stats = (await (await fetch(fakes.stats)).json()) as FakeStats;
    assert.equal(stats.speeches, 2);
  } finally {
    await fakes.close();
  }
});

test('a remote TTS fake needs its clip; an upload without a WAV is refused', async () => {
  await assert.rejects(startLeanFakes({ transcript: 'x', answer: ANSWER, providers: PROFILES.cloud }), /needs a clip/);
  const fakes = await startLeanFakes({ transcript: 'x', answer: ANSWER });
  try {
    const res = await fetch(`${fakes.asr}/audio/transcriptions`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
      body: '--b\r\nContent-Disposition: form-data; name="file"\r\n\r\nnot audio\r\n--b--\r\n',
    });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /WAV/);
  } finally {
    await fakes.close();
  }
});

test('with a streaming TTS the fakes start the Volcengine stand-in, the server is configured for volcengine, and its provider hears the first audio no sooner than configured', async () => {
  const providers = slow({ tts: 'streaming', ttsStreamFirstAudioMs: 120, ttsSpeed: 2 });
  const fakes = await startLeanFakes({ transcript: 'x', answer: ANSWER, providers });
  const dir = mkdtempSync(join(tmpdir(), 'sim-config-'));
  let tts: Tts | undefined;
  try {
    assert.equal(fakes.ttsKind, 'volcengine');
    assert.match(fakes.tts ?? '', /^ws:\/\/127\.0\.0\.1:\d+\/api\/v3\/tts\/bidirection$/);
    const config = simServerConfig({ ...fakes }, 8000, dir);
    assert.deepEqual(config.tts, {
      provider: 'volcengine',
      url: fakes.tts,
      appKey: 'test-app-key',
      accessKey: 'test-access-key',
      resourceId: 'seed-tts-1.0',
    });
    // The server's own provider, from that config, against the stand-in.
    tts = await createTts(config.tts as Parameters<typeof createTts>[0], silentLogger);
    assert.ok(canStreamText(tts));
    const stream = tts.openTextStream({ signal: new AbortController().signal, log: silentLogger });
    const t0 = performance.now();
    stream.push('It is sunny today. ');
    stream.finish();
    let firstMs: number | null = null;
    let bytes = 0;
    for await (const e of stream.events) {
      if (e.type !== 'audio') continue;
      firstMs ??= performance.now() - t0;
      bytes += e.data.length;
    }
    assert.ok(firstMs !== null && firstMs >= 119, `first audio after 120 ms, got ${firstMs}`);
    assert.ok(bytes > 0);
    const stats = (await (await fetch(fakes.stats)).json()) as FakeStats;
    assert.equal(stats.speeches, 1, 'one session counted');
  } finally {
    await tts?.close();
    await fakes.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the server config keeps the OpenAI speech fake for a remote TTS and espeak-ng without one', () => {
  const urls = { llm: 'http://127.0.0.1:1/v1', asr: 'http://127.0.0.1:1/v1', asrKind: 'openai', stats: 'x' } as const;
  const remote = simServerConfig({ ...urls, tts: 'http://127.0.0.1:1/v1', ttsKind: 'openai' }, 1, '/tmp/x');
  assert.equal((remote.tts as { provider: string }).provider, 'openai');
  const embedded = simServerConfig({ ...urls, tts: null, ttsKind: null }, 1, '/tmp/x');
  assert.equal((embedded.tts as { provider: string }).provider, 'espeak');
});
