/**
 * The fake LLM, the fake ASR and (with a remote or streaming TTS) the fake speech service of the fleet
 * simulator, in their own process so that their work and the simulated devices' work do not delay
 * each other (each would otherwise show up in the other's figures). Usage: `node --import tsx
 * test/bench/sim/fakes-main.ts '{"transcript":…,"answer":…,"providers":{…}}'`.
 * Prints one JSON line `{"llm", "asr", "asrKind", "tts", "ttsKind", "stats"}` (URLs and which provider each is for; `tts` null with the embedded TTS) once
 * they listen on 127.0.0.1, and exits when its stdin closes (so it never outlives the simulator,
 * whatever happens to it) or on SIGTERM.
 */
import { resample } from '../../../audio/pcm/resample.ts';
import { speak16k } from '../../helpers/speech.ts';
import { utteranceSpeech } from './device.ts';
import { startLeanFakes, TTS_SAMPLE_RATE } from './lean-fakes.ts';
import { PROFILES, type ProviderLatency } from './provider-profiles.ts';

const cfg = JSON.parse(process.argv[2] ?? '{}') as {
  transcript?: string;
  answer?: string;
  providers?: ProviderLatency;
};
const answer = cfg.answer ?? 'It is sunny today. Enjoy your day!';
const providers = cfg.providers ?? PROFILES.instant;
// The remote TTS answers with real speech: the whole answer spoken once, here, before any turn.
const ttsClip =
  providers.tts === 'remote' && providers.pipeline !== 'realtime'
    ? resample(speak16k(answer, 'espeak'), 16_000, TTS_SAMPLE_RATE)
    : undefined;
const transcript = cfg.transcript ?? 'what is the weather like today';
// The streaming recogniser's stand-in paces its words by the voice it hears of the devices' utterance.
const utterance = providers.asr === 'streaming' ? utteranceSpeech(transcript) : undefined;
const fakes = await startLeanFakes({
  transcript,
  answer,
  providers,
  ...(ttsClip ? { ttsClip } : {}),
  ...(utterance ? { utterance } : {}),
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
process.stdout.write(
  `${JSON.stringify({ llm: fakes.llm, asr: fakes.asr, asrKind: fakes.asrKind, tts: fakes.tts, ttsKind: fakes.ttsKind, realtime: fakes.realtime, stats: fakes.stats })}\n`,
);
