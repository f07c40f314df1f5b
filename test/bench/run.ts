/**
 * `npm run bench`: runs each bench module in turn. A module exports `run(): Promise<void>` and
 * prints its own figures as plain lines. Add new modules to BENCHES. Pass names to run a subset
 * (`npm run bench -- audio`).
 */
interface BenchModule {
  run(): Promise<void>;
}

const BENCHES: Record<string, () => Promise<BenchModule>> = {
  audio: () => import('./audio.ts'),
  voice: () => import('./voice.ts'),
  llm: () => import('./llm.ts'),
  media: () => import('./media.ts'),
  redaction: () => import('./redaction.ts'),
  store: () => import('./store.ts'),
  'turn-start': () => import('./turn-start.ts'),
  'remote-tts': () => import('./remote-tts.ts'),
};

const only = process.argv.slice(2);
for (const [name, load] of Object.entries(BENCHES)) {
  if (only.length > 0 && !only.includes(name)) continue;
  console.log(`\n=== bench: ${name} ===`);
  const started = performance.now();
  try {
    await (await load()).run();
    console.log(`=== ${name} done in ${((performance.now() - started) / 1000).toFixed(1)} s ===`);
  } catch (err) {
    // One broken module must not hide the figures of the others.
    console.log(`=== ${name} FAILED: ${err instanceof Error ? err.stack : String(err)} ===`);
    process.exitCode = 1;
  }
}
