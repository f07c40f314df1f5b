/**
 * The speech queue synthesizes ahead of playback, but only a little: a model that writes without
 * end must not fill memory with audio nobody hears yet. Real espeak-ng, real Opus, real pacer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { createMediaEngine } from '../../../audio/media/engine.ts';
import type { DeviceChannel } from '../../../voice/session/channel.ts';
import { AudioOut } from '../../../voice/conversation/audio-out.ts';
import { SpeechQueue } from '../../../voice/conversation/speech-queue.ts';
import type { SessionMedia } from '../../../audio/media/media.ts';
import { within } from '../../helpers/wait.ts';

test('synthesis runs at most a couple of sentences ahead of playback, and everything plays in order', async () => {
  const engine = await createMediaEngine({
    workers: 1,
    vadProvider: 'webrtc',
    espeak: { voice: 'en-us', speed: 450 },
    log: silentLogger,
  });
  const media = await engine.open(
    { vad: { threshold: 0.5, minSilenceMs: 700 }, downlinkSampleRate: 24000, complexity: 5 },
    silentLogger,
  );
  const sent: string[] = [];
  let frames = 0;
  const channel: DeviceChannel = {
    sendJson: (m) => {
      if (m.type === 'tts' && m.state === 'sentence_start') sent.push(m.text);
    },
    sendAudio: () => {
      frames++;
    },
    close: () => {},
    isOpen: true,
    bufferedBytes: 0,
  };
  const ac = new AbortController();
  const out = new AudioOut({
    channel,
    sessionId: 's',
    media,
    frameMs: 60,
    preBufferFrames: 3,
    sendAheadMs: 0,
    stopMarginMs: 0,
    signal: ac.signal,
    log: silentLogger,
  });
  let started = 0;
  let taken = 0;
  let maxAhead = 0;
  // The moment the player takes a sentence is when it calls playPackets (sentence_start follows
  // only once its first packet is there, so counting those would blur the bound by one).
  const playPackets = out.playPackets.bind(out);
  out.playPackets = (text, packets) => {
    taken++;
    return playPackets(text, packets);
  };
  const q = new SpeechQueue(
    out,
    (text, signal) => {
      started++;
      maxAhead = Math.max(maxAhead, started - taken);
      return media.speak(text, signal);
    },
    ac.signal,
    silentLogger,
  );
  const texts = Array.from({ length: 8 }, (_, i) => `Short sentence ${i + 1}.`);
  for (const t of texts) q.push(t);
  await q.end();
  ac.abort();
  media.close();
  await engine.close();
  assert.deepEqual(sent, texts);
  assert.ok(frames > 8 * 5, `${frames} frames: every sentence was heard`);
  // At most LOOKAHEAD (2) sentences synthesized and not yet taken by the player, counting the one
  // just started; a look-ahead counter that went negative would allow more.
  assert.ok(maxAhead <= 2, `synthesis was ${maxAhead} sentences ahead of the player`);
  assert.equal(maxAhead, 2, 'and it does run ahead');
  assert.deepEqual(q.errors, []);
});

test('a very long text (an MCP title, say) is spoken in sentence-sized pieces, at most MAX_PUSH_CHARS of it, with a warning', async () => {
  const channel: DeviceChannel = {
    sendJson: () => {},
    sendAudio: () => {},
    close: () => {},
    isOpen: true,
    bufferedBytes: 0,
  };
  const ac = new AbortController();
  const warnings: unknown[] = [];
  const log = { ...silentLogger, warn: (obj: unknown) => void warnings.push(obj), child: () => log };
  // No audio: only what the queue hands to synthesis matters here.
  const media = { speak: async function* () {}, encode: async function* () {} } as unknown as SessionMedia;
  const out = new AudioOut({
    channel,
    sessionId: 's',
    media,
    frameMs: 60,
    preBufferFrames: 3,
    sendAheadMs: 0,
    stopMarginMs: 0,
    signal: ac.signal,
    log: silentLogger,
  });
  const synthesized: string[] = [];
  const q = new SpeechQueue(
    out,
    (text) => {
      synthesized.push(text);
      return (async function* () {})();
    },
    ac.signal,
    log,
  );
  q.push(`Sorry, I could not play ${'a very long title '.repeat(3000)}`);
  q.push('Short and sweet, as before.');
  await within(q.end(), 10_000, 'queue end');
  ac.abort();
  assert.equal(synthesized.at(-1), 'Short and sweet, as before.', 'a short text is spoken as it is');
  const pieces = synthesized.slice(0, -1);
  assert.ok(pieces.length >= 5, `${pieces.length} pieces: ${pieces.map((p) => p.length).join(',')}`);
  for (const p of pieces) assert.ok(p.length <= 220, `piece of ${p.length} chars`);
  const total = pieces.join(' ').length;
  assert.ok(total <= 1010 && total >= 900, `${total} chars spoken of 54,000`);
  assert.equal(warnings.length, 1);
});
