/**
 * The session's realtime connection (`voice/conversation/realtime-link.ts`) and the answer's audio
 * buffer (`response-audio.ts`), against the scripted in-process model: calls made while the
 * connection opens are sent in order once it is open; a connection past the model's session limit
 * is renewed between turns only; one that closed is renewed by the next turn; the answer's audio
 * waiting to be played is bounded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { RealtimeLink } from '../../../voice/conversation/realtime-link.ts';
import { ResponseAudio } from '../../../voice/conversation/realtime-response-audio.ts';
import { ScriptedRealtimeModel } from '../../fixtures/scripted-realtime-model.ts';

function linkAt(now: { t: number }): RealtimeLink {
  return new RealtimeLink({
    log: silentLogger,
    now: () => now.t,
    setup: async () => ({ instructions: 'be brief', tools: [] }),
  });
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

test('audio appended while the connection opens reaches it, resampled to the model rate, before the commit', async () => {
  const model = new ScriptedRealtimeModel();
  model.script({ fault: 'silent' });
  const link = linkAt({ t: 0 });
  link.ready(model, { betweenTurns: true });
  link.startUtterance();
  link.appendAudio(new Int16Array(1600));
  link.appendAudio(new Int16Array(1600));
  link.commit();
  await tick();
  const rec = model.last();
  assert.equal(rec.clears, 1);
  // 200 ms at 16 kHz is 4800 samples at 24 kHz, less the resampler's look-ahead still held.
  assert.ok(rec.appendedSamples > 4000 && rec.appendedSamples <= 4800, `${rec.appendedSamples} samples`);
  assert.equal(rec.commits, 1);
  link.close();
  assert.equal(model.openConnections(), 0);
});

test("a connection past the model's session limit is renewed between turns, not during one", async () => {
  const model = new ScriptedRealtimeModel({ maxSessionMs: 60_000 });
  const now = { t: 0 };
  const link = linkAt(now);
  link.ready(model, { betweenTurns: true });
  await tick();
  now.t = 61_000;
  link.ready(model, { betweenTurns: false });
  await tick();
  assert.equal(model.connections.length, 1, 'kept while a turn runs');
  link.ready(model, { betweenTurns: true });
  await tick();
  assert.equal(model.connections.length, 2);
  assert.equal(model.openConnections(), 1, 'the old one was closed');
  link.close();
});

test('a closed connection fails the waiting turn and is renewed by the next turn', async () => {
  const model = new ScriptedRealtimeModel();
  model.script({ say: 'Hi there.', fault: 'close', afterChunks: 0 });
  const link = linkAt({ t: 0 });
  const events: string[] = [];
  link.listen((e) => events.push(e.type));
  link.ready(model, { betweenTurns: true });
  link.sendText('hello');
  // The scripted speech is made first (espeak-ng): waited for, within 10 s.
  for (let i = 0; i < 200 && !events.includes('closed'); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(events.includes('closed'));
  assert.ok(link.failure);
  link.ready(model, { betweenTurns: false });
  await tick();
  assert.equal(model.connections.length, 2);
  assert.equal(link.failure, undefined);
  link.close();
});

test('answer audio waiting to be played is bounded: past the bound it is refused', () => {
  const audio = new ResponseAudio({ provider: 'scripted', sampleRate: 24_000, maxBufferedBytes: 10_000 });
  assert.equal(audio.audio(Buffer.alloc(6_000)), true);
  assert.equal(audio.audio(Buffer.alloc(6_000)), false);
  assert.equal(audio.acceptedMs(24_000), 125);
  audio.end();
});

test('a new connection is told its tools by its set-up; an open one is offered them again only when they changed', async () => {
  const model = new ScriptedRealtimeModel();
  const link = linkAt({ t: 0 });
  assert.equal(link.ready(model, { betweenTurns: true }), true, 'opening: its set-up lists the tools');
  await tick();
  assert.equal(link.ready(model, { betweenTurns: true }), false, 'open: kept');
  link.offerTools([]);
  assert.deepEqual(model.last().updates, [], 'unchanged: not sent');
  const tool = { name: 'get_time', description: 'the time', inputSchema: { type: 'object' } };
  link.offerTools([tool]);
  link.offerTools([tool]);
  assert.deepEqual(model.last().updates, [{ tools: [tool] }]);
  link.close();
});
