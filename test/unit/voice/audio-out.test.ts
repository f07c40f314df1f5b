/**
 * The downlink envelope's timing: `tts stop` goes out when the device has played every frame sent,
 * plus the margin, and at once on an abort. Run on a manual clock, so the times are exact.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { SessionMedia } from '../../../audio/media/media.ts';
import { AudioOut } from '../../../voice/conversation/audio-out.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { timedChannel, type Sent } from '../../helpers/timed-channel.ts';

/** These tests play Opus packets as they are: nothing is encoded, decoded or spoken. */
const unused = (): never => {
  throw new Error('media is not used by playPackets');
};
const noMedia: SessionMedia = {
  uplinkSampleRate: 16000,
  uplinkFrameSamples: 960,
  uplink: unused,
  resetVad: unused,
  encode: unused,
  speak: unused,
  holdPlayback: unused,
  onLost: unused,
  close: unused,
};

function rig(stopMarginMs: number): {
  out: AudioOut;
  sent: Sent[];
  clock: ManualClock;
  ac: AbortController;
  t0: number;
} {
  const clock = new ManualClock();
  const { channel, sent, t0 } = timedChannel(clock);
  const ac = new AbortController();
  const out = new AudioOut({
    channel,
    sessionId: 's',
    media: noMedia,
    frameMs: 60,
    preBufferFrames: 3,
    sendAheadMs: 600,
    stopMarginMs,
    signal: ac.signal,
    log: silentLogger,
    clock,
  });
  return { out, sent, clock, ac, t0 };
}

async function* packets(n: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < n; i++) yield Buffer.from([i]);
}

test('tts stop goes out when the device has played the last frame, plus the margin', async () => {
  const { out, sent, clock, ac } = rig(300);
  await clock.run(out.playPackets('Hello.', packets(20)), 'play');
  await clock.run(out.finish(), 'finish');
  ac.abort();
  assert.deepEqual(sent.slice(0, 2), [
    { what: 'tts start', at: 0 },
    { what: 'tts sentence_start', at: 0 },
  ]);
  const frames = sent.filter((s) => s.what === 'frame');
  assert.equal(frames.length, 20);
  // 20 frames of 60 ms from an empty device queue: played out at 1200 ms; the margin makes 1500.
  assert.deepEqual(sent.at(-1), { what: 'tts stop', at: 20 * 60 + 300 });
  assert.ok(
    (frames.at(-1) as Sent).at < 20 * 60 - 600,
    'the last frame went out a full send-ahead before its play-out',
  );
});

test('an abort while waiting for play-out sends tts stop at once', async () => {
  const { out, sent, clock, ac, t0 } = rig(300);
  await clock.run(out.playPackets(null, packets(20)), 'play');
  const finished = out.finish();
  await clock.advance(700 - (clock.now() - t0));
  ac.abort();
  await finished;
  assert.deepEqual(sent.at(-1), { what: 'tts stop', at: 700 });
  assert.equal(sent.filter((s) => s.what === 'tts stop').length, 1);
});
