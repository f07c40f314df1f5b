/**
 * The native espeak-ng engine (`audio/tts/espeak-native.ts` + the `build/espeak-pcm` helper built by
 * scripts/setup.sh): real speech from the Debian library, one helper process for many sentences,
 * a clear error for an unknown voice, a killed helper replaced without hanging the caller, and
 * nothing left behind (process, FIFOs) after close.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { silentLogger } from '../../../core/logger.ts';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { nativeEspeakHelper, startNativeEspeak, type NativeEspeakEngine } from '../../../audio/tts/espeak-native.ts';
import { pollUntil, within } from '../../helpers/wait.ts';

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

const fifoDirs = (): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith('xiaozhi-espeak-'));

function speak(e: NativeEspeakEngine, text: string, voice = 'en-us'): Int16Array {
  const chunks: Int16Array[] = [];
  e.synthesize(text, { voice }, (c) => chunks.push(c.slice()));
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

describe('native espeak-ng engine', { skip: process.platform !== 'linux' && 'the helper uses Linux FIFOs and PR_SET_PDEATHSIG' }, () => {
  let engine: NativeEspeakEngine | undefined;
  const e = (): NativeEspeakEngine => {
    assert.ok(engine, 'engine started');
    return engine;
  };
  const dirsBefore = new Set(fifoDirs());

  before(async () => {
    assert.ok(nativeEspeakHelper(), 'build/espeak-pcm is built (scripts/setup.sh runs scripts/build-espeak-helper.sh)');
    engine = await within(startNativeEspeak({ log: silentLogger }), 10_000, 'helper start');
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

  test('one helper serves every sentence: no process per sentence, nothing left on disk', () => {
    const before = helperChildren();
    assert.equal(before.length, 1, `one helper running (${before.join(', ')})`);
    for (let i = 0; i < 20; i++) assert.ok(speak(e(), `Sentence number ${i}.`).length > 0);
    assert.deepEqual(helperChildren(), before, 'the same single helper after 20 sentences');
    assert.deepEqual(fifoDirs().filter((d) => !dirsBefore.has(d)), [], 'the helper removed its FIFO directory once both ends were open');
  });

  test('an unknown voice is a configuration error, and the next sentence still speaks', () => {
    assert.throws(
      () => speak(e(), 'Hello.', 'no-such-voice'),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ConfigInvalid && /no-such-voice/.test(err.message),
    );
    assert.ok(speak(e(), 'Hello again.').length > 0);
  });

  test('a killed helper fails the sentence in flight with a clear error (no hang) and is replaced', { timeout: 20_000 }, async () => {
    const [pid] = helperChildren();
    assert.ok(pid, 'a helper runs');
    process.kill(pid, 'SIGKILL');
    await pollUntil('the helper is gone', () => !helperChildren().includes(pid), 5000);
    assert.throws(
      () => speak(e(), 'Are you there?'),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ProviderFailed,
    );
    await pollUntil('a new helper speaks', () => {
      try {
        return speak(e(), 'I am back.').length > 0;
      } catch {
        return false;
      }
    }, 10_000);
    const now = helperChildren();
    assert.equal(now.length, 1);
    assert.notEqual(now[0], pid);
  });

  test('close stops the helper; a closed engine refuses to speak', async () => {
    const pids = helperChildren();
    assert.equal(pids.length, 1);
    await within(e().close(), 5000, 'close');
    assert.deepEqual(helperChildren(), [], 'the helper exited and was reaped (no zombie left)');
    assert.throws(() => speak(e(), 'Hello?'), (err: unknown) => err instanceof VoiceError && /closed/.test(err.message));
  });
});
