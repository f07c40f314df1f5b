/**
 * Closing the media engine while its workers synthesise and encode. Terminating a worker thread in
 * the middle of the native Opus encoder made the addon's error throw fail, and that aborts the whole
 * process ("FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw", seen at a test server's
 * shutdown mid-answer). Workers are now asked to exit between two pieces of work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { createMediaEngine } from '../../../audio/media/engine.ts';
import type { SessionMediaOptions } from '../../../audio/media/media.ts';
import { within } from '../../helpers/wait.ts';

const OPTS: SessionMediaOptions = {
  vad: { threshold: 0.5, minSilenceMs: 700, minSpeechMs: 250 },
  downlinkSampleRate: 24000,
  complexity: 10,
};
const LONG =
  'This is a long answer that keeps the worker busy synthesising and encoding speech for a while, ' +
  'so that the engine is closed while the worker is deep inside that work rather than idle between requests.';

test('closing the engine mid-synthesis ends the workers without aborting the process', {
  timeout: 120_000,
}, async () => {
  const busyAtClose: number[] = [];
  for (let round = 0; round < 6; round++) {
    const engine = await within(
      createMediaEngine({
        workers: 2,
        workerNice: 0,
        vadProvider: 'webrtc',
        espeak: { voice: 'en-us' },
        log: silentLogger,
      }),
      60_000,
      'engine start',
    );
    const sessions = await Promise.all([engine.open(OPTS, silentLogger), engine.open(OPTS, silentLogger)]);
    let packets = 0;
    const runs = sessions.map(async (s) => {
      try {
        for (let i = 0; i < 20; i++) for await (const _ of s.speak(LONG, new AbortController().signal)) packets++;
      } catch {
        // The engine closing under the synthesis fails it: expected.
      }
    });
    // Close while both workers are busy: after the first packets, at a different moment each round.
    while (packets < 5 + round * 7) await new Promise((r) => setTimeout(r, 2));
    busyAtClose.push(packets);
    await within(engine.close(), 10_000, 'engine close');
    await within(Promise.all(runs), 10_000, 'synthesis calls end');
  }
  // Had a worker been killed inside the encoder, the process would have aborted before this line.
  assert.equal(busyAtClose.length, 6);
  busyAtClose.forEach((n, round) =>
    assert.ok(n >= 5 + round * 7, `round ${round}: closed while speech was being produced (${n} packets)`),
  );
});
