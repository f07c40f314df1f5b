/**
 * The fake LLM and the fake ASR of the fleet simulator, in their own process so that their work
 * and the simulated devices' work do not delay each other (each would otherwise show up in the
 * other's figures). Usage: `node --import tsx test/bench/sim/fakes-main.ts '{"transcript":…,"answer":…}'`.
 * Prints one JSON line `{"llm": url, "asr": baseURL}` once both listen on 127.0.0.1, and exits when
 * its stdin closes (so it never outlives the simulator, whatever happens to it) or on SIGTERM.
 */
import { startLeanFakes } from './lean-fakes.ts';

const cfg = JSON.parse(process.argv[2] ?? '{}') as { transcript?: string; answer?: string };
const fakes = await startLeanFakes({
  transcript: cfg.transcript ?? 'what is the weather like today',
  answer: cfg.answer ?? 'It is sunny today. Enjoy your day!',
});

let closing = false;
const shutdown = (): void => {
  if (closing) return;
  closing = true;
  setTimeout(() => process.exit(0), 2000).unref();
  void fakes.close().then(() => process.exit(0));
};
process.stdin.on('end', shutdown);
process.stdin.on('error', shutdown);
process.stdin.resume();
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.stdout.write(`${JSON.stringify({ llm: fakes.llm, asr: fakes.asr })}\n`);
