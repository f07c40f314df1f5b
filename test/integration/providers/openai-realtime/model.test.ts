/**
 * The realtime conversation model (providers/openai-realtime/model.ts) against the stand-in model
 * (test/fixtures/fake-realtime-model.ts) on real sockets: OpenAI over TLS with a private CA, Qwen-Omni
 * on plain ws:, Azure's URL and key header; every fault of the model with its defined outcome; the
 * bounds; and that close() leaves no socket or timer behind.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../../../core/logger.ts';
import { ErrorCode, type VoiceError } from '../../../../core/errors.ts';
import type { RealtimeEvent, RealtimeSession } from '../../../../llm/realtime.ts';
import { createRealtimeModel, RealtimeSchema } from '../../../../providers/index.ts';
import { MAX_ARGUMENT_BYTES, MAX_EVENTS_PER_RESPONSE } from '../../../../providers/openai-realtime/model-session.ts';
import { createLogger } from '../../../../server/logger.ts';
import {
  ARGUMENT_FLOOD_CALLS,
  FLOOD_EVENTS,
  startFakeRealtimeModel,
  type FakeRealtimeModel,
  type FakeRealtimeModelOptions,
} from '../../../fixtures/fake-realtime-model.ts';
import { createLogSink, type LogSink } from '../../../helpers/log-sink.ts';
import { makeTestCa, type TestCa } from '../../../helpers/test-ca.ts';
import { waitFor } from '../../../helpers/wait.ts';

/** `waitFor` of a value that is there once the wait is over. */
async function waitForValue<T>(p: () => T | undefined, opts: { what: string; timeoutMs?: number }): Promise<T> {
  return (await waitFor(p, opts)) as T;
}

const KEY = 'sk-model';
let ca: TestCa;
const fakes: FakeRealtimeModel[] = [];
before(() => {
  ca = makeTestCa();
});
after(async () => {
  for (const f of fakes) await f.close();
  ca?.close();
});

async function fakeModel(opts: FakeRealtimeModelOptions & { plain?: boolean } = {}): Promise<FakeRealtimeModel> {
  const f = await startFakeRealtimeModel({ apiKey: KEY, ...opts, ...(opts.plain ? {} : { tls: ca }) });
  fakes.push(f);
  return f;
}

interface Opened {
  session: RealtimeSession;
  events: RealtimeEvent[];
  sink: LogSink;
  of<T extends RealtimeEvent['type']>(type: T): Extract<RealtimeEvent, { type: T }>[];
}

const TOOL = {
  name: 'get_weather',
  description: 'the weather',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
};

async function open(f: FakeRealtimeModel, extra: Record<string, unknown> = {}): Promise<Opened> {
  const sink = createLogSink();
  const log: Logger = createLogger({ level: 'debug', logContent: true, destination: sink.stream });
  const baseURL = (extra.baseURL as string | undefined) ?? f.url;
  const options = RealtimeSchema.parse({
    provider: 'openai-realtime',
    apiKey: KEY,
    ...(baseURL.startsWith('https') ? { ca: ca.caFile } : {}),
    responseTimeoutMs: 3000,
    ...extra,
    baseURL,
  });
  const events: RealtimeEvent[] = [];
  const session = await createRealtimeModel(options, log).open({
    instructions: 'You are a speaker.',
    tools: [TOOL],
    signal: new AbortController().signal,
    log,
    onEvent: (e) => events.push(e),
  });
  const of = <T extends RealtimeEvent['type']>(type: T) =>
    events.filter((e): e is Extract<RealtimeEvent, { type: T }> => e.type === type);
  return { session, events, sink, of };
}

/** Half a second of a tone at `rate`. */
function speechLike(rate: number, ms = 500): Int16Array {
  const n = Math.round((rate * ms) / 1000);
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / rate));
  return pcm;
}

function turn(o: Opened, rate = 24_000): void {
  o.session.appendAudio(speechLike(rate));
  o.session.commit();
}

const done = (o: Opened, n: number) =>
  waitForValue(() => o.of('response_done')[n - 1], { what: `response ${n}`, timeoutMs: 10_000 });

test('openai over TLS with a private CA: the session, a spoken answer, both transcripts', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({ respond: () => ({ say: 'It is sunny today' }) });
  const o = await open(f, { instructions: 'Answer in one sentence.' });
  const rec = f.sessions[0]!;
  assert.match(rec.url, /\/v1\/realtime\?model=gpt-realtime$/);
  assert.equal(rec.headers.authorization, `Bearer ${KEY}`);
  assert.deepEqual(rec.updates[0], {
    type: 'realtime',
    output_modalities: ['audio'],
    audio: {
      input: {
        format: { type: 'audio/pcm', rate: 24000 },
        transcription: { model: 'gpt-4o-mini-transcribe' },
        turn_detection: null,
      },
      output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' },
    },
    instructions: 'You are a speaker.\n\nAnswer in one sentence.',
    tools: [{ type: 'function', name: 'get_weather', description: 'the weather', parameters: TOOL.inputSchema }],
    tool_choice: 'auto',
  });
  turn(o);
  const d = await done(o, 1);
  assert.equal(d.status, 'completed');
  assert.equal(d.transcript, 'It is sunny today');
  assert.equal(o.of('response_started')[0]?.responseId, d.responseId);
  const bytes = o.of('audio').reduce((n, a) => n + a.pcm.length, 0);
  assert.ok(bytes > 24_000, `speech came back (${bytes} bytes)`);
  assert.equal(
    o
      .of('transcript_delta')
      .map((t) => t.text)
      .join(''),
    'It is sunny today',
  );
  await waitFor(() => o.of('user_transcript')[0], { what: 'the user transcript' });
  assert.equal(o.of('user_transcript')[0]?.text, 'what is the weather like in Berlin');
  assert.deepEqual(rec.received.slice(1), [
    'input_audio_buffer.append',
    'input_audio_buffer.commit',
    'response.create',
  ]);
  assert.equal(rec.audio.length, 24_000); // half a second at 24 kHz
  assert.equal(o.of('error').length, 0);
  o.session.close();
});

test('a function call round: the call, its output, the answer built from it; text turns and assistant text', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    respond: (ctx) =>
      ctx.functionOutput
        ? { say: `It is ${ctx.functionOutput.output}` }
        : { call: { name: 'get_weather', arguments: '{"city":"Berlin"}' } },
  });
  const o = await open(f);
  o.session.sendText('weather in Berlin?');
  const call = await waitForValue(() => o.of('function_call')[0], { what: 'the call' });
  assert.deepEqual([call.name, call.arguments], ['get_weather', '{"city":"Berlin"}']);
  await done(o, 1);
  o.session.functionOutput(call.callId, 'rainy', true);
  assert.equal((await done(o, 2)).transcript, 'It is rainy');
  o.session.addAssistantText('Reminder: stretch.');
  await waitFor(() => f.sessions[0]!.items.length === 3, { what: 'the assistant item' });
  assert.deepEqual(f.sessions[0]!.items, [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'weather in Berlin?' }] },
    { type: 'function_call_output', call_id: call.callId, output: 'rainy' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Reminder: stretch.' }] },
  ]);
  o.session.close();
});

test('cancel: response.cancel, then a truncate at what was played (never past the audio received)', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    pace: 1,
    respond: () => ({ say: 'This is a long answer that goes on and on for a while' }),
  });
  const o = await open(f);
  turn(o);
  await waitFor(() => o.of('audio').length >= 3, { what: 'some audio' });
  const audioCount = o.of('audio').length;
  o.session.cancel(150);
  const d = await done(o, 1);
  assert.equal(d.status, 'cancelled');
  const rec = f.sessions[0]!;
  await waitFor(() => rec.truncates.length === 1, { what: 'the truncate' });
  assert.equal(rec.truncates[0]?.audio_end_ms, 150);
  assert.deepEqual(rec.received.slice(-2), ['response.cancel', 'conversation.item.truncate']);
  assert.ok(o.of('audio').length <= audioCount + 1, 'no audio once cancelled (one may cross)');
  assert.deepEqual(rec.errors, []);

  // Played "more" than was received: cut at what was received, which the server accepts.
  turn(o);
  await waitFor(() => o.of('audio').length >= audioCount + 3, { what: 'the second answer' });
  o.session.cancel(600_000);
  await done(o, 2);
  await waitFor(() => rec.truncates.length === 2, { what: 'the second truncate' });
  assert.deepEqual(rec.errors, []);
  o.session.close();
});

test('qwen-omni on plain ws: flat session, 16 kHz in, beta event names read, no truncate', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    plain: true,
    dialect: 'qwen',
    pace: 1,
    respond: () => ({ say: 'Hello from Qwen, this takes a moment' }),
  });
  const sink = createLogSink();
  const model = createRealtimeModel(
    RealtimeSchema.parse({
      provider: 'openai-realtime',
      dialect: 'qwen-omni',
      apiKey: KEY,
      baseURL: f.url.replace('http:', 'ws:'),
    }),
    createLogger({ level: 'debug', logContent: false, destination: sink.stream }),
  );
  assert.deepEqual([model.inputRate, model.outputRate], [16_000, 24_000]);
  const o = await open(f, { dialect: 'qwen-omni', baseURL: f.url.replace('http:', 'ws:') });
  const rec = f.sessions[0]!;
  assert.match(rec.url, /\/v1\/realtime\?model=qwen3-omni-flash-realtime$/);
  assert.deepEqual(rec.updates[0], {
    modalities: ['text', 'audio'],
    voice: 'Cherry',
    input_audio_format: 'pcm16',
    output_audio_format: 'pcm24',
    input_audio_transcription: { model: 'gummy-realtime-v1' },
    turn_detection: null,
    instructions: 'You are a speaker.',
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'the weather', parameters: TOOL.inputSchema } },
    ],
  });
  turn(o, 16_000);
  await waitFor(() => o.of('audio').length >= 2, { what: 'audio from response.audio.delta' });
  assert.equal(rec.audio.length, 16_000); // half a second at 16 kHz
  o.session.cancel(100);
  assert.equal((await done(o, 1)).status, 'cancelled');
  assert.ok(o.of('transcript_delta').length > 0, 'response.audio_transcript.delta read');
  assert.deepEqual(rec.truncates, []);
  assert.deepEqual(rec.errors, []);
  o.session.update({ instructions: 'Be terse.' });
  await waitFor(() => rec.updates.length === 2, { what: 'the update' });
  assert.deepEqual(rec.updates[1], { instructions: 'Be terse.' });
  o.session.close();
});

test('azure: the SDK Azure URL (deployment as model) and the key in api-key', { timeout: 30_000 }, async () => {
  const f = await fakeModel({});
  const o = await open(f, { dialect: 'azure', baseURL: `${f.url.replace(/\/v1$/, '')}/openai/v1`, model: 'my-deploy' });
  const rec = f.sessions[0]!;
  assert.match(rec.url, /^\/openai\/v1\/realtime\?model=my-deploy$/);
  assert.equal(rec.headers['api-key'], KEY);
  assert.equal(rec.headers.authorization, undefined);
  o.session.close();
});

test('open fails clearly: a refused key, an unreachable server, a CA that does not sign the server', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({});
  await assert.rejects(
    open(f, { apiKey: 'wrong' }),
    (e: VoiceError) => e.code === ErrorCode.ProviderUnavailable && /401/.test(e.message),
  );
  await assert.rejects(
    open(f, { baseURL: 'ws://127.0.0.1:1/v1' }),
    (e: VoiceError) => e.code === ErrorCode.ProviderUnavailable,
  );
  await assert.rejects(open(f, { ca: undefined }), (e: VoiceError) => e.code === ErrorCode.ProviderUnavailable);
  assert.equal(f.openSockets(), 0);
});

test('faults: unknown event types are logged at debug and dropped', { timeout: 30_000 }, async () => {
  const f = await fakeModel({ faults: ['unknown-events'], respond: () => ({ say: 'fine' }) });
  const o = await open(f);
  turn(o);
  assert.equal((await done(o, 1)).status, 'completed');
  assert.equal(o.of('error').length, 0);
  assert.equal(o.sink.find('openai-realtime: an event type we do not read, dropped').length, 2);
  o.session.close();
});

test('faults: audio deltas that do not decode are dropped, each an error event; the answer goes on', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({ faults: ['bad-audio'], respond: () => ({ say: 'still speaking fine' }) });
  const o = await open(f);
  turn(o);
  const d = await done(o, 1);
  assert.equal(d.status, 'completed');
  assert.equal(o.of('error').length, 2);
  assert.ok(o.of('error').every((e) => e.error.code === ErrorCode.ProviderFailed));
  assert.ok(o.of('audio').every((a) => a.pcm.length % 2 === 0 && a.pcm.length > 0));
  assert.equal(o.of('closed').length, 0);
  o.session.close();
});

test('faults: a malformed known event is an error event, not a crash', { timeout: 30_000 }, async () => {
  const f = await fakeModel({ faults: ['malformed'], respond: () => ({ say: 'fine' }) });
  const o = await open(f);
  turn(o);
  assert.equal((await done(o, 1)).status, 'completed');
  assert.equal(o.of('error').length, 1);
  assert.match(o.of('error')[0]!.error.message, /malformed response.output_audio.delta/);
  o.session.close();
});

test('faults: a function call with bad JSON arguments reaches the conversation as its raw text', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    faults: ['bad-arguments'],
    respond: () => ({ call: { name: 'get_weather', arguments: '{}' } }),
  });
  const o = await open(f);
  turn(o);
  const call = await waitForValue(() => o.of('function_call')[0], { what: 'the call' });
  assert.equal(call.arguments, '{"city": "Berl');
  o.session.close();
});

test('faults: an error event mid-response is reported and the response ends failed; the connection stays', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    faults: ['error-mid-response'],
    respond: () => ({ say: 'this will break in the middle of it' }),
  });
  const o = await open(f);
  turn(o);
  assert.equal((await done(o, 1)).status, 'failed');
  assert.equal(o.of('error')[0]?.error.code, ErrorCode.ProviderFailed);
  assert.equal(o.of('closed').length, 0);
  o.session.close();
});

test('faults: the socket closed mid-response gives one closed event with an error, then nothing', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    faults: ['close-mid-response'],
    respond: () => ({ say: 'this will be cut off in the middle' }),
  });
  const o = await open(f);
  turn(o);
  await waitFor(() => o.of('closed').length === 1, { what: 'closed' });
  assert.equal(o.of('closed')[0]?.error?.code, ErrorCode.ProviderFailed);
  o.session.appendAudio(speechLike(24_000));
  o.session.commit();
  o.session.close();
  assert.equal(o.events.at(-1)?.type, 'closed');
  assert.equal(o.of('closed').length, 1);
});

test('faults: a model that never answers is cut off after responseTimeoutMs', { timeout: 30_000 }, async () => {
  const f = await fakeModel({ faults: ['never-answer'] });
  const o = await open(f, { responseTimeoutMs: 300 });
  turn(o);
  await waitFor(() => o.of('closed').length === 1, { what: 'the cut' });
  assert.equal(o.of('closed')[0]?.error?.code, ErrorCode.Timeout);
  await waitFor(() => f.openSockets() === 0, { what: 'the socket to go' });
});

test('bounds: audio past maxAudioSecondsPerMinute is dropped (logged once); a commit of nothing is an error event', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({});
  const o = await open(f, { maxAudioSecondsPerMinute: 1 });
  for (let i = 0; i < 4; i++) o.session.appendAudio(speechLike(24_000, 500));
  o.session.clearAudio();
  o.session.commit();
  await waitFor(() => f.sessions[0]!.received.includes('input_audio_buffer.clear'), { what: 'the clear' });
  assert.equal(f.sessions[0]!.audio.length, 48_000); // one second of 24 kHz s16le
  assert.equal(
    o.sink.find('openai-realtime: audio sent this minute is at its bound, the rest of the minute is dropped').length,
    1,
  );
  assert.equal(o.of('error')[0]?.error.code, ErrorCode.BadInput);
  assert.ok(!f.sessions[0]!.received.includes('input_audio_buffer.commit'));
  o.session.close();
});

test('maxSessionMs: an old connection is closed between turns with a clean closed event', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({ respond: () => ({ say: 'ok' }) });
  const o = await open(f, { maxSessionMs: 300 });
  turn(o);
  await done(o, 1);
  await waitFor(() => o.of('closed').length === 1, { what: 'the retirement' });
  assert.equal(o.of('closed')[0]?.error, undefined);
  await waitFor(() => f.openSockets() === 0, { what: 'the socket to go' });
});

test('abort: before open and while opening the open is rejected as aborted; once open, the session closes with no event; no socket or timer is left', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({ respond: () => ({ say: 'hi' }) });
  const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const log = createLogger({ level: 'silent', logContent: false, destination: createLogSink().stream });
  const model = createRealtimeModel(
    RealtimeSchema.parse({ provider: 'openai-realtime', apiKey: KEY, baseURL: f.url, ca: ca.caFile }),
    log,
  );
  const openWith = (signal: AbortSignal, events: RealtimeEvent[] = []) =>
    model.open({ instructions: 'x', tools: [], signal, log, onEvent: (e) => events.push(e) });
  const isAborted = (e: VoiceError) => e.code === ErrorCode.Aborted;
  await assert.rejects(openWith(AbortSignal.abort()), isAborted);
  const opening = new AbortController();
  const pending = openWith(opening.signal);
  opening.abort();
  await assert.rejects(pending, isAborted);
  const live = new AbortController();
  const events: RealtimeEvent[] = [];
  await openWith(live.signal, events);
  live.abort();
  await waitFor(() => f.openSockets() === 0, { what: 'the sockets to go' });
  await waitFor(() => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length <= timersBefore, {
    what: 'our timers to go',
  });
  assert.deepEqual(events, []);
});

test('close() mid-answer leaves no socket and no timer, and no event follows', { timeout: 30_000 }, async () => {
  const f = await fakeModel({ pace: 1, respond: () => ({ say: 'a long answer that is still going when we close' }) });
  const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const o = await open(f);
  turn(o);
  await waitFor(() => o.of('audio').length >= 1, { what: 'audio' });
  o.session.close();
  const count = o.events.length;
  await waitFor(() => f.openSockets() === 0, { what: 'the socket to go' });
  await waitFor(() => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length <= timersBefore, {
    what: 'our timers to go',
  });
  assert.equal(o.events.length, count);
  assert.equal(f.sessions[0]!.closeCode, 1000);
});

test('bounds: a response asking for more than maxFunctionCallsPerResponse calls: those within it reach the conversation, the one past it does not, the response is cancelled with an error; the next turn works', {
  timeout: 30_000,
}, async () => {
  const call = (city: string) => ({ name: 'get_weather', arguments: JSON.stringify({ city }) });
  const f = await fakeModel({
    respond: (ctx) =>
      ctx.index === 0 ? { calls: [call('Berlin'), call('Paris'), call('Rome')] } : { say: 'fine again' },
  });
  const o = await open(f, { maxFunctionCallsPerResponse: 2 });
  turn(o);
  const d = await done(o, 1);
  assert.deepEqual(
    o.of('function_call').map((c) => JSON.parse(c.arguments) as unknown),
    [{ city: 'Berlin' }, { city: 'Paris' }],
  );
  assert.equal(d.status, 'cancelled', 'the response counts as cancelled');
  assert.equal(o.of('error').length, 1);
  assert.equal(o.of('error')[0]?.error.code, ErrorCode.ProviderFailed);
  assert.match(o.of('error')[0]!.error.message, /more than 2 function calls in one response/);
  const rec = f.sessions[0]!;
  await waitFor(() => rec.received.includes('response.cancel'), { what: 'response.cancel at the model' });
  assert.equal(
    o.sink.find('openai-realtime: more than 2 function calls in one response; the response is cancelled').length,
    1,
  );
  assert.equal(o.of('closed').length, 0, 'the connection stays');
  turn(o);
  const next = await done(o, 2);
  assert.deepEqual([next.status, next.transcript], ['completed', 'fine again']);
  o.session.close();
});

test('bounds: a function call whose arguments are over 64 KiB is not passed on; the response is cancelled with an error; the next turn works', {
  timeout: 30_000,
}, async () => {
  const big = JSON.stringify({ city: 'x'.repeat(MAX_ARGUMENT_BYTES) });
  const f = await fakeModel({
    respond: (ctx) => (ctx.index === 0 ? { call: { name: 'get_weather', arguments: big } } : { say: 'fine again' }),
  });
  const o = await open(f);
  turn(o);
  const d = await done(o, 1);
  assert.equal(o.of('function_call').length, 0, 'the oversized call is not passed on');
  assert.equal(d.status, 'cancelled');
  assert.equal(o.of('error').length, 1);
  assert.equal(o.of('error')[0]?.error.code, ErrorCode.ProviderFailed);
  assert.match(o.of('error')[0]!.error.message, /function call arguments over 65536 bytes/);
  await waitFor(() => f.sessions[0]!.received.includes('response.cancel'), { what: 'response.cancel at the model' });
  assert.equal(o.of('closed').length, 0, 'the connection stays');
  turn(o);
  assert.equal((await done(o, 2)).transcript, 'fine again');
  o.session.close();
});

test('bounds: a response past 20,000 events ends the connection: one closed event with the error, the socket cut, nothing after', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({ faults: ['flood'], respond: () => ({ say: 'never heard' }) });
  const o = await open(f);
  turn(o);
  await waitFor(() => o.of('closed').length === 1, { what: 'closed', timeoutMs: 20_000 });
  const closed = o.of('closed')[0]!;
  assert.equal(closed.error?.code, ErrorCode.ProviderFailed);
  assert.match(String(closed.error?.message), new RegExp(`more than ${MAX_EVENTS_PER_RESPONSE} events`));
  assert.ok(FLOOD_EVENTS > MAX_EVENTS_PER_RESPONSE);
  // Each event before the bound was read; the one past it and everything after were not.
  assert.ok(o.of('transcript_delta').length < MAX_EVENTS_PER_RESPONSE);
  assert.equal(o.of('audio').length, 0, 'the answer after the flood is never read');
  assert.equal(o.of('response_done').length, 0);
  assert.equal(o.events.at(-1)?.type, 'closed');
  await waitFor(() => f.openSockets() === 0, { what: 'the socket to go' });
  o.session.close();
  assert.equal(o.of('closed').length, 1);
});

test('bounds: frames that are not JSON count toward the 20,000 events: a flood of them ends the connection with one closed event', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({ faults: ['garbage-flood'], respond: () => ({ say: 'never heard' }) });
  const o = await open(f);
  turn(o);
  await waitFor(() => o.of('closed').length === 1 || o.of('response_done').length === 1, {
    what: 'closed or the answer',
    timeoutMs: 20_000,
  });
  assert.equal(o.of('response_done').length, 0, 'the answer after the flood is never read');
  const closed = o.of('closed')[0];
  assert.equal(closed?.error?.code, ErrorCode.ProviderFailed);
  assert.match(String(closed?.error?.message), new RegExp(`more than ${MAX_EVENTS_PER_RESPONSE} events`));
  assert.ok(o.of('error').length <= MAX_EVENTS_PER_RESPONSE);
  await waitFor(() => f.openSockets() === 0, { what: 'the socket to go' });
  o.session.close();
});

test('bounds: argument deltas for more calls than maxFunctionCallsPerResponse are not kept; the response is cancelled with an error; the next turn works', {
  timeout: 30_000,
}, async () => {
  const f = await fakeModel({
    faults: ['argument-flood'],
    faultOn: (ctx) => ctx.index === 0,
    respond: () => ({ say: 'fine again' }),
  });
  const o = await open(f, { maxFunctionCallsPerResponse: 4 });
  turn(o);
  const d = await done(o, 1);
  assert.ok(ARGUMENT_FLOOD_CALLS > 4);
  assert.equal(d.status, 'cancelled');
  assert.equal(o.of('error').length, 1);
  assert.match(o.of('error')[0]!.error.message, /more than 4 function calls in one response/);
  await waitFor(() => f.sessions[0]!.received.includes('response.cancel'), { what: 'response.cancel at the model' });
  assert.equal(o.of('closed').length, 0, 'the connection stays');
  turn(o);
  assert.equal((await done(o, 2)).transcript, 'fine again');
  o.session.close();
});

test("the model tells the conversation its settings: responseTimeoutMs, maxSessionMs, maxFunctionCallsPerResponse (else the conversation's defaults would cap them)", () => {
  const log = createLogger({ level: 'silent', logContent: false, destination: createLogSink().stream });
  const set = createRealtimeModel(
    RealtimeSchema.parse({
      provider: 'openai-realtime',
      responseTimeoutMs: 40_000,
      maxSessionMs: 100 * 60_000,
      maxFunctionCallsPerResponse: 12,
    }),
    log,
  );
  assert.deepEqual(
    [set.responseTimeoutMs, set.maxSessionMs, set.maxFunctionCallsPerResponse],
    [40_000, 100 * 60_000, 12],
  );
  const qwen = createRealtimeModel(RealtimeSchema.parse({ provider: 'openai-realtime', dialect: 'qwen-omni' }), log);
  assert.deepEqual(
    [qwen.responseTimeoutMs, qwen.maxSessionMs, qwen.maxFunctionCallsPerResponse],
    [15_000, 115 * 60_000, 8],
  );
});
