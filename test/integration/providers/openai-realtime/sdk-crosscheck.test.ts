/**
 * The stand-in (test/fixtures/fake-openai-realtime.ts) checked against a client we did not write:
 * the openai SDK's own Realtime WebSocket client, driven directly (no code of ours in between)
 * through one transcription session over TLS with a test CA. The URL it dials, the headers it
 * sends, the way it parses and dispatches each server event by `type` are the SDK's, so the
 * stand-in and our provider cannot share one misreading of the wire.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { startFakeOpenAiRealtime, type FakeRealtime } from '../../../fixtures/fake-openai-realtime.ts';
import { tonePcm24k } from '../../../fixtures/fake-openai-audio.ts';
import { makeTestCa, type TestCa } from '../../../helpers/test-ca.ts';
import { waitFor, within } from '../../../helpers/wait.ts';

let ca: TestCa;
let fake: FakeRealtime;
before(async () => {
  ca = makeTestCa();
  fake = await startFakeOpenAiRealtime({
    tls: ca,
    apiKey: 'sk-sdk',
    // Two words per 100 ms of audio at 16 kHz: partials while audio flows.
    transcribe: (pcm) =>
      'one two three four five six'
        .split(' ')
        .slice(0, Math.ceil(pcm.length / 800))
        .join(' '),
    partialEveryMs: 100,
  });
});
after(async () => {
  await fake?.close();
  ca?.close();
});

test('the SDK client runs one transcription session against the stand-in', { timeout: 30_000 }, async () => {
  const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({ intent: 'transcription', options: { ca: ca.ca } }, client);
  const events: RealtimeServerEvent[] = [];
  const errors: string[] = [];
  rt.on('event', (e) => events.push(e));
  rt.on('error', (e) => errors.push(e.message));
  const deltas: string[] = [];
  rt.on('conversation.item.input_audio_transcription.delta', (e) => deltas.push(e.delta ?? ''));
  const completed = new Promise<{ item: string; transcript: string }>((resolve) =>
    rt.on('conversation.item.input_audio_transcription.completed', (e) =>
      resolve({ item: e.item_id, transcript: e.transcript }),
    ),
  );
  const committed = new Promise<string>((resolve) => rt.on('input_audio_buffer.committed', (e) => resolve(e.item_id)));
  await within(new Promise((resolve) => rt.socket.once('open', resolve)), 5000, 'the TLS connection');
  assert.equal(rt.url.href, `${fake.url.replace('https:', 'wss:')}/realtime?intent=transcription`);

  rt.send({
    type: 'session.update',
    session: {
      type: 'transcription',
      audio: {
        input: {
          format: { type: 'audio/pcm', rate: 24000 },
          transcription: { model: 'gpt-live-transcribe', language: 'en' },
          turn_detection: null,
        },
      },
    },
  });
  const audio = tonePcm24k(300);
  for (let i = 0; i < audio.length; i += 4800)
    rt.send({ type: 'input_audio_buffer.append', audio: audio.subarray(i, i + 4800).toString('base64') });
  await waitFor(() => deltas.length >= 2, { what: 'deltas before the commit' });
  rt.send({ type: 'input_audio_buffer.commit' });
  const item = await within(committed, 5000, 'input_audio_buffer.committed');
  const final = await within(completed, 5000, 'the completed transcript');
  rt.close();

  assert.deepEqual(errors, []);
  assert.equal(final.item, item);
  assert.equal(final.transcript, 'one two three four five six');
  assert.equal(deltas.join(''), 'one two three four five six', 'the deltas add up to the transcript');
  assert.deepEqual(
    events.map((e) => e.type).filter((t, i, all) => all.indexOf(t) === i),
    [
      'session.created',
      'session.updated',
      'conversation.item.input_audio_transcription.delta',
      'input_audio_buffer.committed',
      'conversation.item.input_audio_transcription.completed',
    ],
  );
  const session = fake.sessions[0]!;
  assert.equal(session.headers.authorization, 'Bearer sk-sdk');
  assert.equal(session.audio.length, audio.length);
  assert.equal(session.session?.audio?.input?.transcription?.model, 'gpt-live-transcribe');
  await waitFor(() => fake.openSockets() === 0, { what: 'the SDK client to close' });
});

test('the stand-in answers the SDK client the way the API does when it is misused', { timeout: 30_000 }, async () => {
  const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url, maxRetries: 0 });
  // A model URL opens a conversation session, which refuses a transcription update.
  const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca: ca.ca } }, client);
  const errors: Array<{ code: string | null | undefined; message: string }> = [];
  rt.on('error', (e) => errors.push({ code: e.error?.code, message: e.message }));
  await within(new Promise((resolve) => rt.socket.once('open', resolve)), 5000, 'the TLS connection');
  rt.send({ type: 'session.update', session: { type: 'transcription', audio: { input: { turn_detection: null } } } });
  // A commit of an empty buffer is refused.
  rt.send({ type: 'input_audio_buffer.commit' });
  await waitFor(() => errors.length === 2, { what: 'two error events' });
  rt.close();
  assert.deepEqual(
    errors.map((e) => e.code),
    ['invalid_value', 'input_audio_buffer_commit_empty'],
  );
  // A wrong key never gets a socket.
  const wrong = new OpenAIRealtimeWS(
    { intent: 'transcription', options: { ca: ca.ca } },
    new OpenAI({ apiKey: 'sk-wrong', baseURL: fake.url }),
  );
  const refused = await within(
    new Promise<string>((resolve) => wrong.on('error', (e) => resolve(e.message))),
    5000,
    'the refusal',
  );
  assert.match(refused, /401/);
  await waitFor(() => fake.openSockets() === 0, { what: 'the SDK clients to close' });
});
