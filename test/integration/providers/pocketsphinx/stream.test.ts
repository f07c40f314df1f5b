/**
 * The streaming engine of the embedded recogniser (`providers/pocketsphinx/`, engine `stream`):
 * the real helper (`build/pocketsphinx-stream`, built by scripts/setup.sh) against Debian's
 * pocketsphinx and its US English model, on flite speech. Faults are real too: decoder processes
 * killed or stopped, the helper killed, and a stand-in helper (a shell script) for what ours
 * never writes (garbage, an oversized frame).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Asr, AsrStream } from '../../../../audio/asr/asr.ts';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import { silentLogger, type Logger } from '../../../../core/logger.ts';
import { createAsr } from '../../../../providers/index.ts';
import { PocketsphinxHelper, streamHelperPath } from '../../../../providers/pocketsphinx/helper.ts';
import {
  descendantProcesses,
  flitePcm,
  makeTempDir,
  waitForNoAudioChildren,
} from '../../../fixtures/audio/make-audio.ts';
import { sleep, waitFor } from '../../../helpers/wait.ts';

const PHRASES = ['what is the weather today', 'turn the volume up to fifty percent', 'play some music'] as const;
const JOKE = 'tell me a joke about cats';
const tmp = makeTempDir();
const audio = new Map<string, Int16Array>();
before(() => {
  for (const p of [...PHRASES, JOKE]) audio.set(p, flitePcm(p, tmp.dir));
});
after(() => tmp.cleanup());

const speech = (p: string): Int16Array => audio.get(p) as Int16Array;
const FRAME = 960; // 60 ms at 16 kHz, the uplink's frame

/** Pushes like a device, 60 ms frames, at three times real time (the decoder runs at ~10×). */
async function pushPaced(stream: AsrStream, pcm: Int16Array, upTo = pcm.length): Promise<void> {
  for (let i = 0; i < upTo; i += FRAME) {
    stream.push(pcm.subarray(i, Math.min(upTo, i + FRAME)));
    await sleep(20);
  }
}

/** Resolves once the helper has loaded its models (a stream opened earlier waits for them). */
async function loaded(asr: Asr): Promise<void> {
  assert.equal(
    await asr.transcribe(new Int16Array(1600), { signal: new AbortController().signal, sampleRate: 16000 }),
    '',
  );
}

/** The helper (its parent is this process) and its decoders (one per utterance). */
function helperProcesses(): { helper: number[]; decoders: number[] } {
  const all = descendantProcesses().filter((d) => d.comm.startsWith('pocketsphinx-st'));
  const pids = new Set(all.map((d) => d.pid));
  const ppid = (pid: number): number => {
    try {
      return Number(/PPid:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    } catch {
      return -1;
    }
  };
  return {
    helper: all.filter((d) => !pids.has(ppid(d.pid))).map((d) => d.pid),
    decoders: all.filter((d) => pids.has(ppid(d.pid))).map((d) => d.pid),
  };
}

function recordingLogger(): Logger & { lines: Array<{ level: string; msg: string; obj: object }> } {
  const lines: Array<{ level: string; msg: string; obj: object }> = [];
  const fn =
    (level: string) =>
    (a: object | string, b?: string): void => {
      lines.push(typeof a === 'string' ? { level, msg: a, obj: {} } : { level, msg: b ?? '', obj: a });
    };
  const log = {
    lines,
    trace: fn('trace'),
    debug: fn('debug'),
    info: fn('info'),
    warn: fn('warn'),
    error: fn('error'),
    fatal: fn('fatal'),
    child: () => log,
  };
  return log;
}

const available = streamHelperPath() !== undefined;
const skip = available ? false : 'build/pocketsphinx-stream is not built (scripts/setup.sh builds it)';

function open(
  asr: Asr,
  signal: AbortSignal,
  onPartial: (t: string) => void = () => {},
  log: Logger = silentLogger,
): AsrStream {
  assert.ok(asr.openStream, 'the pocketsphinx provider streams');
  return asr.openStream({ sampleRate: 16000, signal, onPartial, log });
}

describe('pocketsphinx streaming engine', { skip }, () => {
  let asr: Asr;
  before(async () => {
    asr = await createAsr(
      // A generous final: on a loaded 2-core machine two decoders may take seconds (the timeout has its own test).
      { provider: 'pocketsphinx', engine: 'stream', maxStreams: 2, finalTimeoutMs: 20_000 },
      silentLogger,
    );
    await loaded(asr);
  });
  after(async () => {
    await asr.close();
    assert.deepEqual(await waitForNoAudioChildren(), [], 'no helper or decoder left after close');
  });

  test('partial hypotheses while the utterance is pushed, each a change, then the final', async () => {
    const partials: string[] = [];
    const log = recordingLogger();
    const stream = open(asr, new AbortController().signal, (t) => partials.push(t), log);
    await pushPaced(stream, speech(PHRASES[1]));
    const beforeFinish = partials.length;
    assert.equal(await stream.finish(), PHRASES[1]);
    assert.ok(beforeFinish >= 3, `partials came while the audio was pushed (${beforeFinish}: ${partials.join(' | ')})`);
    for (let i = 1; i < partials.length; i++)
      assert.notEqual(partials[i], partials[i - 1], 'only changes are reported');
    assert.ok(
      partials.some((p) => p.startsWith('turn the')),
      `a partial has the start of the sentence: ${partials.join(' | ')}`,
    );
    const count = partials.length;
    await sleep(100);
    assert.equal(partials.length, count, 'no partial after the final');
    assert.equal(await stream.finish(), PHRASES[1], 'finish is idempotent');
    assert.deepEqual(
      log.lines.filter((l) => l.level === 'debug').map((l) => l.msg),
      [...partials.map(() => 'pocketsphinx partial'), 'pocketsphinx final'],
      'partials and the final are logged at debug',
    );
    assert.deepEqual(
      log.lines.filter((l) => l.level === 'debug').map((l) => l.obj),
      [...partials, PHRASES[1]].map((text) => ({ pii: { text } })),
      'the texts under pii, which the server log drops unless logContent is on',
    );
  });

  test('utterances beyond maxStreams wait with their audio and each gets its own final', async () => {
    const streams = PHRASES.map(() => open(asr, new AbortController().signal));
    // All three speak at once: with maxStreams 2 the third waits for a decoder, its audio kept.
    await Promise.all(streams.map((s, i) => pushPaced(s, speech(PHRASES[i] as string))));
    const during = helperProcesses();
    assert.equal(during.helper.length, 1, 'one helper');
    assert.ok(during.decoders.length <= 2, `at most maxStreams decoders at once (${during.decoders.length})`);
    assert.deepEqual(await Promise.all(streams.map((s) => s.finish())), [...PHRASES]);
    await waitFor(() => helperProcesses().decoders.length === 0, { what: 'the decoders to exit' });
  });

  test('transcribe (the batch path) decodes a whole utterance, resampled when not at 16 kHz', async () => {
    const never = new AbortController().signal;
    const { resample } = await import('../../../../audio/pcm/resample.ts');
    const results = await Promise.all([
      asr.transcribe(speech(PHRASES[0]), { signal: never, sampleRate: 16000 }),
      asr.transcribe(resample(speech(PHRASES[2]), 16000, 24000), { signal: never, sampleRate: 24000 }),
      asr.transcribe(new Int16Array(16000), { signal: never, sampleRate: 16000 }),
    ]);
    assert.deepEqual(results, [PHRASES[0], PHRASES[2], '']);
  });

  test('the signal cancels mid-utterance: finish rejects Aborted, no callback after, its decoder is gone', async () => {
    const ac = new AbortController();
    const partials: string[] = [];
    const stream = open(asr, ac.signal, (t) => partials.push(t));
    const pcm = speech(PHRASES[1]);
    await pushPaced(stream, pcm, Math.floor(pcm.length / 2));
    await waitFor(() => helperProcesses().decoders.length === 1, { what: 'the utterance to have a decoder' });
    ac.abort();
    const count = partials.length;
    stream.push(pcm.subarray(Math.floor(pcm.length / 2))); // ignored
    await assert.rejects(
      stream.finish(),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted,
    );
    await waitFor(() => helperProcesses().decoders.length === 0, { what: 'the cancelled decoder to be killed' });
    await sleep(150);
    assert.equal(partials.length, count, 'no partial after the abort');
  });

  test('an utterance still waiting for a decoder is dropped by its signal and never decoded', async () => {
    const busy = [open(asr, new AbortController().signal), open(asr, new AbortController().signal)];
    const ac = new AbortController();
    const waiting = open(asr, ac.signal, () => assert.fail('no partial for a cancelled utterance'));
    waiting.push(speech(PHRASES[0]));
    ac.abort();
    await assert.rejects(
      waiting.finish(),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted,
    );
    for (const [i, s] of busy.entries()) s.push(speech(PHRASES[i] as string));
    assert.deepEqual(await Promise.all(busy.map((s) => s.finish())), [PHRASES[0], PHRASES[1]]);
  });

  test("the helper runs in a process group of its own: Ctrl-C to the server's group does not kill recognitions mid-drain", async () => {
    const s = open(asr, new AbortController().signal);
    s.push(speech(PHRASES[0] as string));
    await waitFor(() => helperProcesses().helper.length === 1, { what: 'the helper' });
    const pgid = (pid: number): number =>
      Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[2]);
    const helper = helperProcesses().helper[0] as number;
    assert.equal(pgid(helper), helper, 'it leads its own group');
    assert.notEqual(pgid(helper), pgid(process.pid));
    assert.equal(await s.finish(), PHRASES[0]);
  });

  test('nothing a stream holds outlives it: its final timer and its abort listener go with the final or the abort', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const idle = timers();
    const ac = new AbortController();
    const done = open(asr, ac.signal);
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    done.push(speech(PHRASES[2]));
    const final = done.finish();
    // Counted process-wide, so another timer of the runner may come or go meanwhile: the stream's
    // own is seen as one more while it waits and one fewer once the final is in.
    const during = timers();
    assert.ok(during >= idle + 1, 'the wait for the final is bounded by a timer');
    assert.equal(await final, PHRASES[2]);
    assert.ok(timers() <= during - 1, 'its timer is cleared with the final');
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'its abort listener is removed');

    const ac2 = new AbortController();
    const aborted = open(asr, ac2.signal);
    aborted.push(speech(PHRASES[0]));
    const pending = aborted.finish();
    ac2.abort();
    await assert.rejects(pending, (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted);
    assert.ok(timers() <= idle, 'an aborted stream keeps no timer');
    assert.equal(getEventListeners(ac2.signal, 'abort').length, 0);
    await waitFor(() => helperProcesses().decoders.length === 0, { what: 'no decoder left' });
  });

  test('what finished utterances taught about the microphone (the cepstral mean) carries to the next, as in pocketsphinx_continuous', async () => {
    // From the model's initial mean, flite's "tell me a joke about cats" comes out as "tell me a
    // job in town pants"; once a few utterances have adapted the mean it is right.
    const fresh = await createAsr({ provider: 'pocketsphinx', engine: 'stream' }, silentLogger);
    try {
      const never = new AbortController().signal;
      for (const p of PHRASES) assert.equal(await fresh.transcribe(speech(p), { signal: never, sampleRate: 16000 }), p);
      assert.equal(await fresh.transcribe(speech(JOKE), { signal: never, sampleRate: 16000 }), JOKE);
    } finally {
      await fresh.close();
    }
  });

  test('push never throws: audio at a rate the resampler refuses fails the stream (bad_input) at finish', async () => {
    const stream = asr.openStream?.({
      sampleRate: 0,
      signal: new AbortController().signal,
      log: silentLogger,
      onPartial: () => {},
    });
    assert.ok(stream);
    assert.doesNotThrow(() => stream.push(speech(PHRASES[2])));
    await assert.rejects(
      stream.finish(),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.BadInput,
    );
  });

  test('a decoder that dies fails its own utterance (provider_failed) and no other', async () => {
    const a = open(asr, new AbortController().signal);
    const b = open(asr, new AbortController().signal);
    await Promise.all([pushPaced(a, speech(PHRASES[0])), pushPaced(b, speech(PHRASES[2]))]);
    const [first] = helperProcesses().decoders.sort((x, y) => x - y); // forked first: a's
    assert.ok(first);
    process.kill(first, 'SIGKILL');
    await assert.rejects(
      a.finish(),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ProviderFailed,
    );
    assert.equal(await b.finish(), PHRASES[2]);
  });

  test('a decoder that stalls past finalTimeoutMs: finish rejects with a timeout and the decoder is killed', async () => {
    const quick = await createAsr({ provider: 'pocketsphinx', engine: 'stream', finalTimeoutMs: 400 }, silentLogger);
    try {
      await loaded(quick);
      const stream = open(quick, new AbortController().signal);
      await pushPaced(stream, speech(PHRASES[2]));
      const [decoder] = await waitFor(() => helperProcesses().decoders, { what: 'the utterance to have a decoder' });
      assert.ok(decoder);
      process.kill(decoder, 'SIGSTOP');
      await assert.rejects(
        stream.finish(),
        (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Timeout,
      );
      await waitFor(() => !helperProcesses().decoders.includes(decoder), { what: 'the stalled decoder to be killed' });
    } finally {
      await quick.close();
    }
  });

  test('the helper dying fails the utterances in flight; the next one gets a new helper', async () => {
    const stream = open(asr, new AbortController().signal);
    await pushPaced(stream, speech(PHRASES[0]));
    const [helper] = helperProcesses().helper;
    assert.ok(helper);
    process.kill(helper, 'SIGKILL');
    await assert.rejects(
      stream.finish(),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ProcessFailed,
    );
    await waitFor(() => helperProcesses().decoders.length === 0, { what: 'its decoders to die with it' });
    const next = open(asr, new AbortController().signal);
    await pushPaced(next, speech(PHRASES[2]));
    assert.equal(await next.finish(), PHRASES[2]);
  });
});

test('a helper that stops reading is restarted once 16 MiB wait for it, not buffered for without end', {
  skip,
}, async () => {
  const log = recordingLogger();
  const asr = await createAsr({ provider: 'pocketsphinx', engine: 'stream' }, log);
  try {
    await loaded(asr);
    const [helper] = helperProcesses().helper;
    assert.ok(helper);
    process.kill(helper, 'SIGSTOP');
    const stream = open(asr, new AbortController().signal);
    const second = new Int16Array(16000);
    for (let s = 0; s < 9 * 60; s++) stream.push(second); // 9 minutes: 17 MB
    await assert.rejects(
      stream.finish(),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.ProcessFailed,
    );
    assert.ok(
      log.lines.some((l) => l.level === 'error' && l.msg === 'pocketsphinx helper stopped reading; restarting it'),
    );
    assert.equal(
      await asr.transcribe(speech(PHRASES[2]), { signal: new AbortController().signal, sampleRate: 16000 }),
      PHRASES[2],
    );
  } finally {
    await asr.close();
  }
});

describe('pocketsphinx streaming engine: what the helper sends is checked', () => {
  /** A stand-in helper: a shell script that announces itself ready, then writes `frames`. */
  function fakeHelper(name: string, printf: string): string {
    const path = join(tmp.dir, name);
    writeFileSync(
      path,
      `#!/bin/sh\nprintf 'Y\\0\\0\\0\\0\\0\\0\\0\\0'\nhead -c 9 >/dev/null\nprintf '${printf}'\nexec sleep 5\n`,
    );
    chmodSync(path, 0o755);
    return path;
  }

  for (const [what, printf] of [
    ['a frame of an unknown kind', 'Z\\1\\0\\0\\0\\0\\0\\0\\0'],
    ['a frame longer than the helper can write at once', 'P\\1\\0\\0\\0\\210\\23\\0\\0'],
  ] as const) {
    test(`${what} is logged as an error, fails the utterance and ends the helper`, async () => {
      const log = recordingLogger();
      const helper = new PocketsphinxHelper({ path: fakeHelper('garbage.sh', printf), args: [], maxStreams: 1, log });
      try {
        const failed = await new Promise<VoiceError>((resolve, reject) => {
          const u = helper.utterance({
            partial: () => reject(new Error('a partial')),
            final: () => reject(new Error('a final')),
            failed: resolve,
          });
          u.push(new Int16Array(10));
          u.finish();
        });
        assert.equal(failed.code, ErrorCode.ProcessFailed);
        assert.ok(
          log.lines.some((l) => l.level === 'error' && /malformed frame/.test(l.msg)),
          log.lines.map((l) => l.msg).join(' | '),
        );
      } finally {
        await helper.close();
      }
    });
  }
});
