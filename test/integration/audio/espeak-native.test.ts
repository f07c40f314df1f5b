/**
 * The native espeak-ng engine (`audio/tts/espeak-native.ts` + the `build/espeak-pcm` helper built by
 * scripts/setup.sh): real speech from the Debian library, resampled in the helper like the
 * JavaScript resampler does it, one helper process for many sentences,
 * a clear error for an unknown voice, a killed helper replaced without hanging the caller, and
 * nothing left behind (process, FIFOs) after close.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { silentLogger } from '../../../core/logger.ts';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import {
  localHelperSource,
  nativeEspeakHelper,
  startNativeEspeak,
  type EspeakHelperSource,
  type NativeEspeakEngine,
} from '../../../audio/tts/espeak-native.ts';
import { waitFor, within } from '../../helpers/wait.ts';
import { Resampler } from '../../../audio/pcm/resample.ts';

/** Pids of this process's children that run the helper (Linux /proc). */
function helperChildren(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm === 'espeak-pcm' && ppid === process.pid) out.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function speak(e: NativeEspeakEngine, text: string, voice = 'en-us', outRate?: number): Int16Array {
  const chunks: Int16Array[] = [];
  e.synthesize(text, { voice }, (c) => chunks.push(c.slice()), outRate);
  const out = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function rms(pcm: Int16Array): number {
  let acc = 0;
  for (const s of pcm) acc += s * s;
  return Math.sqrt(acc / Math.max(1, pcm.length));
}

describe('native espeak-ng engine', {
  skip: process.platform !== 'linux' && 'the helper uses Linux FIFOs and PR_SET_PDEATHSIG',
}, () => {
  let engine: NativeEspeakEngine | undefined;
  const e = (): NativeEspeakEngine => {
    assert.ok(engine, 'engine started');
    return engine;
  };
  // The FIFO directories of this engine's helpers. Only these are checked: other test files, run
  // at the same time, start helpers of their own whose directories exist for a moment too.
  const handedOut: string[] = [];
  const recording = (source: EspeakHelperSource): EspeakHelperSource => ({
    next: async () => {
      const dir = await source.next();
      handedOut.push(dir);
      return dir;
    },
    close: () => source.close(),
  });

  before(async () => {
    assert.ok(nativeEspeakHelper(), 'build/espeak-pcm is built (scripts/setup.sh runs scripts/build-espeak-helper.sh)');
    engine = await within(
      startNativeEspeak({ helpers: recording(localHelperSource({ log: silentLogger })), log: silentLogger }),
      10_000,
      'helper start',
    );
  });
  after(() => engine?.close());

  test('speaks a sentence as 22,050 Hz PCM of about the right length, with the voices espeak-ng knows', () => {
    assert.equal(e().sampleRate, 22050);
    const pcm = speak(e(), 'It is sunny today.');
    const seconds = pcm.length / 22050;
    assert.ok(seconds > 0.8 && seconds < 2.5, `a short sentence lasts ${seconds.toFixed(2)} s`);
    assert.ok(rms(pcm) > 500, `it has energy (rms ${rms(pcm).toFixed(0)})`);
    for (const v of ['en-us', 'en', 'cmn-latn-pinyin']) assert.ok(e().knownVoices().has(v), `knows ${v}`);
    // Faster speech is shorter: the rate reaches the library.
    const fast: Int16Array[] = [];
    e().synthesize('It is sunny today.', { voice: 'en-us', speed: 350 }, (c) => fast.push(c.slice()));
    const fastLen = fast.reduce((n, c) => n + c.length, 0);
    assert.ok(fastLen < pcm.length * 0.75, `speed 350 is shorter (${fastLen} < ${pcm.length} samples)`);
  });

  test('resamples in the helper as audio/pcm/resample.ts does (8 zero crossings), to 24 and 16 kHz', () => {
    // espeak-ng's output varies a little from one call to the next (a few samples of length), so
    // the helper's resampler is compared on one recorded sentence, then used on live synthesis.
    const text = 'The weather is fine and warm, with a light breeze.';
    const a = speak(e(), text);
    for (const rate of [24000, 16000]) {
      const ref = new Resampler(22050, rate, 8);
      const r1 = ref.push(a);
      const r2 = ref.flush();
      const expected = new Int16Array(r1.length + r2.length);
      expected.set(r1);
      expected.set(r2, r1.length);
      const got = e().resample(a, 22050, rate);
      assert.equal(got.length, expected.length, `${rate} Hz: as many samples as the JavaScript resampler gives`);
      let err = 0;
      let sig = 0;
      for (let i = 0; i < got.length; i++) {
        err += ((got[i] as number) - (expected[i] as number)) ** 2;
        sig += (expected[i] as number) ** 2;
      }
      const snr = 10 * Math.log10(sig / Math.max(1, err));
      assert.ok(snr > 60, `${rate} Hz: ${snr.toFixed(1)} dB from the JavaScript resampler`);
      const live = speak(e(), text, 'en-us', rate);
      const ratio = live.length / a.length;
      assert.ok(
        Math.abs(ratio - rate / 22050) < 0.01,
        `${rate} Hz: a live synthesis has the resampled length (${ratio.toFixed(4)})`,
      );
      assert.ok(
        Math.abs(rms(live) / rms(a) - 1) < 0.1,
        `${rate} Hz: and the same level (${rms(live).toFixed(0)} vs ${rms(a).toFixed(0)})`,
      );
    }
    assert.throws(
      () => speak(e(), 'Hi.', 'en-us', 1_000_000),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ConfigInvalid,
    );
  });

  test('one helper serves every sentence: no process per sentence, nothing left on disk', () => {
    const before = helperChildren();
    assert.equal(before.length, 1, `one helper running (${before.join(', ')})`);
    for (let i = 0; i < 20; i++) assert.ok(speak(e(), `Sentence number ${i}.`).length > 0);
    assert.deepEqual(helperChildren(), before, 'the same single helper after 20 sentences');
    assert.ok(handedOut.length >= 1, 'the engine got its helper from the source');
    assert.deepEqual(
      handedOut.filter((d) => existsSync(d)),
      [],
      'the helper removed its FIFO directory once both ends were open',
    );
  });

  test('an unknown voice is a configuration error, and the next sentence still speaks', () => {
    assert.throws(
      () => speak(e(), 'Hello.', 'no-such-voice'),
      (err: unknown) =>
        err instanceof VoiceError && err.code === ErrorCode.ConfigInvalid && /no-such-voice/.test(err.message),
    );
    assert.ok(speak(e(), 'Hello again.').length > 0);
  });

  test('a killed helper fails the sentence in flight with a clear error (no hang) and is replaced', {
    timeout: 20_000,
  }, async () => {
    const [pid] = helperChildren();
    assert.ok(pid, 'a helper runs');
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !helperChildren().includes(pid), { what: 'the helper is gone', timeoutMs: 5000 });
    assert.throws(
      () => speak(e(), 'Are you there?'),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ProviderFailed,
    );
    await waitFor(
      () => {
        try {
          return speak(e(), 'I am back.').length > 0;
        } catch {
          return false;
        }
      },
      { what: 'a new helper speaks', timeoutMs: 10_000 },
    );
    const now = helperChildren();
    assert.equal(now.length, 1);
    assert.notEqual(now[0], pid);
  });

  test('when a new helper cannot be had, a later sentence asks again, at most once a second', {
    timeout: 20_000,
  }, async () => {
    const local = localHelperSource({ log: silentLogger });
    let asked = 0;
    const flaky = {
      next: async (): Promise<string> => {
        asked++;
        // The first restart fails (as when the helper cannot start for a moment).
        if (asked === 2) throw new VoiceError(ErrorCode.ProviderUnavailable, 'not now');
        return local.next();
      },
      close: () => local.close(),
    };
    const mine = new Set(helperChildren());
    const other = await within(startNativeEspeak({ helpers: flaky, log: silentLogger }), 10_000, 'start');
    try {
      const [pid] = helperChildren().filter((p) => !mine.has(p));
      assert.ok(pid, 'the second engine has its own helper');
      process.kill(pid, 'SIGKILL');
      await waitFor(() => !helperChildren().includes(pid), { what: 'the helper is gone', timeoutMs: 5000 });
      assert.throws(() => other.synthesize('One.', { voice: 'en-us' }, () => {}), VoiceError);
      // The failed restart left the engine without a helper; sentences keep asking for one.
      const t0 = performance.now();
      await waitFor(
        () => {
          try {
            let n = 0;
            other.synthesize('Two.', { voice: 'en-us' }, (c) => (n += c.length));
            return n > 0;
          } catch {
            return false;
          }
        },
        { what: 'a helper again', timeoutMs: 10_000 },
      );
      assert.equal(asked, 3, 'one start, one failed restart, one good one');
      assert.ok(performance.now() - t0 >= 900, 'the second restart waited about a second after the first');
    } finally {
      await other.close();
    }
  });

  test('close stops the helper; a closed engine refuses to speak', async () => {
    const pids = helperChildren();
    assert.equal(pids.length, 1);
    await within(e().close(), 5000, 'close');
    assert.deepEqual(helperChildren(), [], 'the helper exited and was reaped (no zombie left)');
    assert.throws(
      () => speak(e(), 'Hello?'),
      (err: unknown) => err instanceof VoiceError && /closed/.test(err.message),
    );
  });
});
