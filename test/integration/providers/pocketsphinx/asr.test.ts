import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Asr } from '../../../../audio/asr/asr.ts';
import { createAsr } from '../../../../providers/index.ts';
import { resample } from '../../../../audio/pcm/resample.ts';
import { silentLogger } from '../../../../core/logger.ts';
import {
  descendantProcesses,
  flitePcm,
  makeTempDir,
  waitForNoAudioChildren,
} from '../../../fixtures/audio/make-audio.ts';
import { sleep, waitFor } from '../../../helpers/wait.ts';
import { streamHelperPath } from '../../../../providers/pocketsphinx/helper.ts';

const PHRASES = ['what is the weather today', 'turn the volume up to fifty percent', 'play some music'];
const GRAMMAR = `#JSGF V1.0;
grammar cmd;
public <cmd> = <weather> | <volume> | <music>;
<weather> = what is the weather (today | tomorrow);
<volume> = turn the volume (up | down) [to <num> percent];
<num> = ten | twenty | thirty | forty | fifty;
<music> = (play | stop) [some] music | pause;
`;

const tmp = makeTempDir();
const audio = new Map<string, Int16Array>();
before(() => {
  for (const p of [...PHRASES, 'stop music', 'turn the volume down to twenty percent'])
    audio.set(p, flitePcm(p, tmp.dir));
});
after(() => tmp.cleanup());

const never = (): AbortSignal => new AbortController().signal;

/** The streaming helper's engine runs where scripts/setup.sh built it; the continuous one everywhere. */
const ENGINES = [
  {
    engine: 'stream',
    skip: streamHelperPath() ? false : 'build/pocketsphinx-stream is not built (scripts/setup.sh builds it)',
  },
  { engine: 'continuous', skip: false },
] as const;

for (const { engine, skip } of ENGINES)
  describe(`pocketsphinx (${engine} engine: one long-lived process)`, { skip }, () => {
    let asr: Asr;
    before(async () => {
      asr = await createAsr({ provider: 'pocketsphinx', engine }, silentLogger);
    });
    after(async () => {
      await asr.close();
      assert.deepEqual(await waitForNoAudioChildren(), [], 'no pocketsphinx left after close');
    });

    test('transcribes three flite phrases with the open language model, one process for all', async () => {
      for (const p of PHRASES)
        assert.equal(await asr.transcribe(audio.get(p) as Int16Array, { signal: never(), sampleRate: 16000 }), p);
      // The streaming helper's per-utterance decoders exit with their utterance.
      const recognisers = (): number => descendantProcesses().filter((d) => d.comm.startsWith('pocketsphinx')).length;
      await waitFor(() => recognisers() === 1, { what: 'one recogniser process' }).catch(() => {});
      assert.equal(recognisers(), 1, 'exactly one recogniser process');
    });

    test('queued utterances keep their own results; other sample rates are resampled', async () => {
      const at24k = resample(audio.get(PHRASES[2] as string) as Int16Array, 16000, 24000);
      const results = await Promise.all([
        asr.transcribe(audio.get(PHRASES[0] as string) as Int16Array, { signal: never(), sampleRate: 16000 }),
        asr.transcribe(at24k, { signal: never(), sampleRate: 24000 }),
        asr.transcribe(new Int16Array(16000), { signal: never(), sampleRate: 16000 }),
      ]);
      assert.deepEqual(results, [PHRASES[0], PHRASES[2], '']);
    });

    test('an aborted utterance rejects and does not leak its text into the next', async () => {
      const ac = new AbortController();
      const p = asr.transcribe(audio.get(PHRASES[1] as string) as Int16Array, { signal: ac.signal, sampleRate: 16000 });
      setTimeout(() => ac.abort(), 20);
      await assert.rejects(p, /aborted/);
      assert.equal(
        await asr.transcribe(audio.get(PHRASES[2] as string) as Int16Array, { signal: never(), sampleRate: 16000 }),
        PHRASES[2],
      );
    });

    test('the recogniser is restarted if it dies', async () => {
      const victim = descendantProcesses().find((d) => d.comm.startsWith('pocketsphinx'));
      assert.ok(victim);
      process.kill(victim.pid, 'SIGKILL');
      await sleep(200);
      assert.equal(
        await asr.transcribe(audio.get(PHRASES[0] as string) as Int16Array, { signal: never(), sampleRate: 16000 }),
        PHRASES[0],
      );
    });
  });

for (const { engine, skip } of ENGINES)
  describe(`pocketsphinx (${engine} engine) with a JSGF command grammar`, { skip }, () => {
    let asr: Asr;
    before(async () => {
      asr = await createAsr({ provider: 'pocketsphinx', engine, grammar: GRAMMAR }, silentLogger);
    });
    after(async () => {
      await asr.close();
      assert.deepEqual(await waitForNoAudioChildren(), []);
    });

    test('recognises grammar-constrained commands', async () => {
      for (const p of ['turn the volume down to twenty percent', 'stop music', PHRASES[0] as string]) {
        assert.equal(await asr.transcribe(audio.get(p) as Int16Array, { signal: never(), sampleRate: 16000 }), p);
      }
    });
  });

for (const { engine, skip } of ENGINES)
  test(`a grammar that does not parse fails clearly instead of hanging (${engine} engine)`, { skip }, async () => {
    const asr = await createAsr(
      {
        provider: 'pocketsphinx',
        engine,
        grammar: '#JSGF V1.0;\ngrammar broken;\npublic <x> = ( ;\n',
        timeoutMs: 5000,
      },
      silentLogger,
    );
    await assert.rejects(
      asr.transcribe(audio.get('stop music') as Int16Array, { signal: never(), sampleRate: 16000 }),
      /pocketsphinx exited/,
    );
    await asr.close();
    assert.deepEqual(await waitForNoAudioChildren(), []);
  });
