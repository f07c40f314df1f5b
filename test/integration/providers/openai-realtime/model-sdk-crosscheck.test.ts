/**
 * The stand-in realtime model (test/fixtures/fake-realtime-model.ts) checked against a client we
 * did not write: the openai SDK's own Realtime WebSocket client, driven directly (no code of ours in
 * between) over TLS with a test CA: session.update, audio, commit, a response with audio deltas, a
 * function call round and a cancel. The URL, headers and event dispatch by `type` are the SDK's.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { startFakeRealtimeModel, type FakeRealtimeModel } from '../../../fixtures/fake-realtime-model.ts';
import { tonePcm24k } from '../../../fixtures/fake-openai-audio.ts';
import { makeTestCa, type TestCa } from '../../../helpers/test-ca.ts';
import { waitFor, within } from '../../../helpers/wait.ts';

let ca: TestCa;
let fake: FakeRealtimeModel;
before(async () => {
  ca = makeTestCa();
  fake = await startFakeRealtimeModel({
    tls: ca,
    apiKey: 'sk-sdk',
    transcribe: () => 'what time is it',
    respond: (ctx) =>
      ctx.functionOutput
        ? { say: `It is ${ctx.functionOutput.output}` }
        : ctx.index === 0
          ? { call: { name: 'get_time', arguments: '{"zone":"UTC"}' } }
          : { say: 'This is a long answer that will be cut off before it ends' },
  });
});
after(async () => {
  await fake?.close();
  ca?.close();
});

test('the SDK client runs a conversation with the stand-in: audio, a function call round, a cancel', {
  timeout: 30_000,
}, async () => {
  const client = new OpenAI({ apiKey: 'sk-sdk', baseURL: fake.url, maxRetries: 0 });
  const rt = new OpenAIRealtimeWS({ model: 'gpt-realtime', options: { ca: ca.ca } }, client);
  const events: RealtimeServerEvent[] = [];
  const errors: string[] = [];
  rt.on('event', (e) => events.push(e));
  rt.on('error', (e) => errors.push(e.error?.code ?? e.message));
  await within(new Promise((resolve) => rt.socket.once('open', resolve)), 5000, 'the TLS connection');
  assert.equal(rt.url.href, `${fake.url.replace('https:', 'wss:')}/realtime?model=gpt-realtime`);
  assert.equal(fake.sessions[0]?.headers.authorization, 'Bearer sk-sdk');

  rt.send({
    type: 'session.update',
    session: {
      type: 'realtime',
      instructions: 'be brief',
      audio: {
        input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: null },
        output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' },
      },
      tools: [{ type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } }],
    },
  });
  await waitFor(() => events.some((e) => e.type === 'session.updated'), { what: 'session.updated' });
  rt.send({ type: 'input_audio_buffer.append', audio: tonePcm24k(500).toString('base64') });
  rt.send({ type: 'input_audio_buffer.commit' });
  rt.send({ type: 'response.create' });

  // The function call round.
  const args = await waitFor(() => events.find((e) => e.type === 'response.function_call_arguments.done'), {
    what: 'the function call',
  });
  assert.equal(args.name, 'get_time');
  assert.equal(args.arguments, '{"zone":"UTC"}');
  await waitFor(() => events.filter((e) => e.type === 'response.done').length === 1, { what: 'the call response' });
  const transcript = events.find((e) => e.type === 'conversation.item.input_audio_transcription.completed');
  assert.equal(transcript?.transcript, 'what time is it');
  rt.send({
    type: 'conversation.item.create',
    item: { type: 'function_call_output', call_id: args.call_id, output: 'noon' },
  });
  rt.send({ type: 'response.create' });
  await waitFor(() => events.filter((e) => e.type === 'response.done').length === 2, {
    what: 'the spoken answer',
    timeoutMs: 15_000,
  });
  const audio = events.filter((e) => e.type === 'response.output_audio.delta');
  const pcmBytes = audio.reduce((n, e) => n + Buffer.from(e.delta, 'base64').length, 0);
  assert.ok(pcmBytes > 24_000, `some speech (${pcmBytes} bytes)`); // over half a second of 24 kHz s16le
  const said = events
    .filter((e) => e.type === 'response.output_audio_transcript.delta')
    .map((e) => e.delta)
    .join('');
  assert.equal(said, 'It is noon');

  // A cancel mid-answer, then a truncate of what was heard.
  rt.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'talk' }] },
  });
  rt.send({ type: 'response.create' });
  const firstDelta = await waitFor(
    () => events.filter((e) => e.type === 'response.output_audio.delta').at(audio.length),
    { what: 'the third answer' },
  );
  rt.send({ type: 'response.create' }); // while one is active
  rt.send({ type: 'response.cancel' });
  const done = await waitFor(() => events.filter((e) => e.type === 'response.done')[2], { what: 'the cancel' });
  assert.equal(done.response.status, 'cancelled');
  assert.equal(done.response.status_details?.reason, 'client_cancelled');
  rt.send({ type: 'conversation.item.truncate', item_id: firstDelta.item_id, content_index: 0, audio_end_ms: 50 });
  await waitFor(() => events.some((e) => e.type === 'conversation.item.truncated'), { what: 'truncated' });
  rt.send({ type: 'response.cancel' });
  await waitFor(() => errors.includes('response_cancel_not_active'), { what: 'nothing to cancel' });
  assert.deepEqual(errors, ['conversation_already_has_active_response', 'response_cancel_not_active']);
  rt.close();
  await waitFor(() => fake.openSockets() === 0, { what: 'the socket to close' });
});
