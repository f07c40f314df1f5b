/**
 * How much the Volcengine TTS provider adds to the vendor's first-audio time, against the stand-in
 * with `firstAudioMs: 150` (what the vendor itself takes from a sentence's text to its audio):
 *   - after the first text: an answer opened and its first sentence pushed whole at t0;
 *   - after finish: text without a sentence end pushed, then `finish()` at t0 (the vendor speaks
 *     the rest at FinishSession).
 * Each over `N` answers (default 20), with connections kept between answers and with one new
 * connection per answer (`keepAliveMs: 0`). Prints p50 and p95 in ms.
 *
 *   node_modules/.bin/node --import tsx test/tools/measure-volcengine-tts.ts [N]
 */
import { canStreamText } from '../../audio/tts/tts.ts';
import { silentLogger } from '../../core/logger.ts';
import { createTts } from '../../providers/index.ts';
import { startFakeVolcengineTts } from '../fixtures/fake-volcengine-tts.ts';

const N = Number(process.argv[2] ?? 20);
const FIRST_AUDIO_MS = 150;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}

const fake = await startFakeVolcengineTts({ firstAudioMs: FIRST_AUDIO_MS });
try {
  for (const keepAliveMs of [15_000, 0]) {
    const tts = await createTts(
      { provider: 'volcengine', url: fake.url, appKey: 'test-app-key', accessKey: 'test-access-key', keepAliveMs },
      silentLogger,
    );
    if (!canStreamText(tts)) throw new Error('not a text-streaming provider');
    const results: Record<'afterFirstText' | 'afterFinish', number[]> = { afterFirstText: [], afterFinish: [] };
    for (const kind of ['afterFirstText', 'afterFinish'] as const) {
      for (let i = 0; i < N + 1; i++) {
        const stream = tts.openTextStream({ signal: new AbortController().signal, log: silentLogger });
        let t0 = performance.now();
        if (kind === 'afterFirstText') {
          stream.push('今天天气很好。');
        } else {
          stream.push('今天天气很好');
          await new Promise((r) => setTimeout(r, 300)); // the session is open, its text waiting
          t0 = performance.now();
        }
        stream.finish();
        let first: number | undefined;
        for await (const e of stream.events) if (e.type === 'audio') first ??= performance.now() - t0;
        // The first answer warms the stand-in and the module cache.
        if (i > 0 && first !== undefined) results[kind].push(first);
      }
    }
    await tts.close();
    for (const [kind, xs] of Object.entries(results))
      console.log(
        `${keepAliveMs > 0 ? 'kept connection' : 'new connection '} ${kind.padEnd(14)} p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms (n=${xs.length}, vendor ${FIRST_AUDIO_MS} ms)`,
      );
  }
} finally {
  await fake.close();
}
