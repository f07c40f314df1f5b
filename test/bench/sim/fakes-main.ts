/**
 * The fake LLM and the fake ASR of the fleet simulator, in their own process so that their work
 * and the simulated devices' work do not delay each other (each would otherwise show up in the
 * other's figures). Usage: `node --import tsx test/bench/sim/fakes-main.ts '{"transcript":…,"answer":…}'`.
 * Prints one JSON line `{"llm": url, "asr": baseURL}` once both listen on 127.0.0.1, and exits when
 * its stdin closes (so it never outlives the simulator, whatever happens to it) or on SIGTERM.
 */
import { startFakeOpenAi, fakeText } from '../../fixtures/fake-openai.ts';
import { startFakeOpenAiAudio } from '../../fixtures/fake-openai-audio.ts';

const cfg = JSON.parse(process.argv[2] ?? '{}') as { transcript?: string; answer?: string };
const llm = await startFakeOpenAi();
llm.rule({ when: () => true, reply: fakeText(cfg.answer ?? 'It is sunny today. Enjoy your day!') });
const asr = await startFakeOpenAiAudio({ transcript: cfg.transcript ?? 'what is the weather like today' });

// Both fakes record every request (the ASR keeps each uploaded WAV): forget them regularly.
const clear = setInterval(() => {
  (llm.requests as unknown[]).length = 0;
  (asr.transcriptions as unknown[]).length = 0;
}, 2000);

let closing = false;
const shutdown = (): void => {
  if (closing) return;
  closing = true;
  clearInterval(clear);
  setTimeout(() => process.exit(0), 2000).unref();
  void Promise.allSettled([llm.close(), asr.close()]).then(() => process.exit(0));
};
process.stdin.on('end', shutdown);
process.stdin.on('error', shutdown);
process.stdin.resume();
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
process.stdout.write(`${JSON.stringify({ llm: llm.url, asr: asr.baseURL })}\n`);
