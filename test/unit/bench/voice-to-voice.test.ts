/**
 * Voice-to-voice in the simulator: the end of the user's voice found in the PCM the device
 * encodes (energy on 10 ms windows), and each turn's stages put on one time line from it: the
 * device's first frame, and the server's log line (its stages count from its own end-of-speech
 * decision) matched to the turn.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FRAME_MS, prepareUtterance, type TurnRecord } from '../../bench/sim/device.ts';
import { PROFILES, firstSentenceStreamMs } from '../../bench/sim/provider-profiles.ts';
import type { ServerTurnTiming } from '../../bench/sim/server.ts';
import { voiceEndSample } from '../../bench/sim/voiced.ts';
import { voiceToVoiceLines, voiceToVoiceTable } from '../../bench/sim/report.ts';
import {
  matchServerTurn,
  providerDelay,
  summarizeVoiceToVoice,
  voiceTurn,
  type VoiceTurn,
} from '../../bench/sim/voice-to-voice.ts';

/** 16 kHz PCM: silence, a tone from `fromMs` to `toMs` (amplitude `amp`), silence to `totalMs`. */
function pcmWithTone(totalMs: number, tones: Array<[fromMs: number, toMs: number, amp: number]>): Int16Array {
  const pcm = new Int16Array(totalMs * 16);
  for (const [from, to, amp] of tones)
    for (let i = Math.round(from * 16); i < Math.round(to * 16); i++)
      pcm[i] = Math.round(amp * Math.sin((2 * Math.PI * 220 * i) / 16000));
  return pcm;
}

test('the end of the voice is the end of the last voiced 10 ms window, past breath-level noise and inner pauses', () => {
  // Voice 300–800 ms, then noise at about -56 dBFS (under the 100 RMS floor) until 1000 ms.
  assert.equal(
    voiceEndSample(
      pcmWithTone(1400, [
        [300, 800, 8000],
        [800, 1000, 70],
      ]),
    ),
    800 * 16,
  );
  // A voice that ends inside a window counts to that window's end (10 ms resolution).
  assert.equal(voiceEndSample(pcmWithTone(1400, [[300, 812.5, 8000]])), 820 * 16);
  // A pause inside the utterance: the voice ends with the second part.
  assert.equal(
    voiceEndSample(
      pcmWithTone(2000, [
        [200, 600, 8000],
        [1100, 1530, 6000],
      ]),
    ),
    1530 * 16,
  );
  assert.equal(voiceEndSample(new Int16Array(16000)), null, 'silence has no voice');
});

test("the simulator's utterance: its voice ends where the synthesized speech does, after the lead-in", async () => {
  const audio = await prepareUtterance('turn on the light');
  // The lead-in is 300 ms; the speech was trimmed on the same windows, so they agree to the sample.
  assert.equal(audio.voiceEndMs, 300 + audio.speechMs);
  assert.ok(audio.voiceEndMs <= audio.speech.length * FRAME_MS, 'the voice ends within the speech packets');
  assert.ok(audio.voiceEndMs > (audio.speech.length - 1) * FRAME_MS, 'in the last of them');
});

function record(over: Partial<TurnRecord> = {}): TurnRecord {
  return {
    device: 3,
    deviceId: '02:00:00:00:00:03',
    turn: 1,
    done: true,
    bargeIn: false,
    silencePackets: 12,
    sentences: 3,
    strayFrames: 0,
    playback: { frames: 40, intervals: 39, lateIntervals: 0, gaps: 0, underrunMs: 0 },
    speechStartAt: 0,
    voiceEndAt: 1000,
    firstFrameAt: 2500,
    ...over,
  };
}

function timing(over: Partial<ServerTurnTiming> = {}): ServerTurnTiming {
  return {
    deviceId: '02:00:00:00:00:03',
    sessionId: 's',
    source: 'voice',
    outcome: 'answered',
    totalMs: 5000,
    lateFrames: 0,
    frameIntervals: 39,
    lateIntervals: 0,
    endedAt: 1750,
    asrMs: 50,
    llmFirstTokenMs: 450,
    firstSentenceMs: 600,
    firstAudioMs: 749,
    ...over,
  };
}

test("a turn's stages are times after the end of the voice: the server's decision plus its own stage times", () => {
  const v = voiceTurn(record(), timing({ endOfTurnMs: 700 }));
  assert.deepEqual(v, {
    device: 3,
    deviceId: '02:00:00:00:00:03',
    turn: 1,
    voiceToVoiceMs: 1500,
    endOfTurnMs: 750,
    heardSilenceMs: 700,
    finalTranscriptMs: 800,
    // transcript + request → first token (500) comes before the first sentence (600).
    firstTokenMs: 1250,
    firstSentenceMs: 1350,
    firstFrameOutMs: 1499,
    // The device's first frame (1500) less the first token (1250), this turn's own.
    firstFrameAfterFirstTokenMs: 250,
  });
  // An early start had the transcript ready at the decision (0): the first token is bounded by the first sentence.
  assert.equal(
    voiceTurn(record(), timing({ asrMs: 0, llmFirstTokenMs: 900, firstSentenceMs: 200 }))?.firstTokenMs,
    950,
  );
  // Fields the server may log are taken as they are.
  const logged = voiceTurn(record(), timing({ firstTokenMs: 420, ttsFirstAudioMs: 700 }));
  assert.equal(logged?.firstTokenMs, 1170);
  assert.equal(logged?.firstAudioByteMs, 1450);
  // Without the server's line (a server given by --url) only the device's figure is known.
  assert.deepEqual(voiceTurn(record(), undefined), {
    device: 3,
    deviceId: '02:00:00:00:00:03',
    turn: 1,
    voiceToVoiceMs: 1500,
  });
  assert.equal(voiceTurn(record({ firstFrameAt: undefined }), timing()), null, 'no answer frame: no figure');
});

test("a device turn is matched to the same device's decision between its first packet and its first frame", () => {
  const rec = record({ speechStartAt: 10_000, voiceEndAt: 11_500, firstFrameAt: 13_000 });
  const mine = timing({ endedAt: 12_250 });
  const lines = [
    timing({ endedAt: 9_000 }), // the device's previous turn
    timing({ deviceId: '02:00:00:00:00:04', endedAt: 12_300 }), // another device, same moment
    timing({ endedAt: 12_100, source: 'text' }),
    mine,
    timing({ endedAt: 13_400 }), // the device's next turn
  ];
  assert.equal(matchServerTurn(rec, lines), mine);
  assert.equal(matchServerTurn(rec, lines.slice(0, 3)), undefined);
});

test("the providers' delays add up as issue 43 counts them, and ours is what is left of the p50", () => {
  const answer = 'It is sunny today. The high is twenty two degrees.';
  // The first sentence and the space after it are 19 characters: 5 tokens, 4 after the first at 40/s.
  assert.equal(firstSentenceStreamMs(answer, PROFILES.cloud), 100);
  assert.equal(firstSentenceStreamMs(answer, PROFILES.instant), 0);
  const d = providerDelay(PROFILES.cloud, answer, { requests: 4, audioMs: 8000, delayMs: 1800 });
  assert.deepEqual(d, {
    path: 'per-sentence',
    asrMs: 450,
    asrAudioMs: 2000,
    llmFirstTokenMs: 450,
    firstSentenceStreamMs: 100,
    ttsFirstAudioMs: 250,
    totalMs: 1250,
  });
  // The embedded TTS costs the fakes nothing.
  assert.equal(providerDelay(PROFILES.instant, answer, { requests: 1, audioMs: 2000, delayMs: 0 }).totalMs, 0);
  assert.equal(providerDelay(PROFILES.cloud, answer, null).totalMs, null, 'no ASR counts: unknown');

  const turns = [1400, 1500, 1600, 2000].map((ms, i) => ({
    device: i,
    deviceId: `d${i}`,
    turn: 0,
    voiceToVoiceMs: ms,
    endOfTurnMs: 700 + i,
  }));
  const v = summarizeVoiceToVoice(turns, d);
  assert.equal(v.turns, 4);
  assert.deepEqual(v.stages.voiceToVoiceMs, { p50: 1500, p95: 2000, n: 4 });
  assert.deepEqual(v.stages.endOfTurnMs, { p50: 701, p95: 703, n: 4 });
  assert.equal(v.stages.firstTokenMs.n, 0);
  assert.equal(v.oursP50Ms, 250);
});

test("the first frame after the model's first token is taken per turn, then its p50/p95: not a difference of percentiles", () => {
  const turn = (i: number, voiceToVoiceMs: number, firstTokenMs?: number): VoiceTurn => {
    const t = voiceTurn(
      record({ voiceEndAt: 1000, firstFrameAt: 1000 + voiceToVoiceMs }),
      // The server's decision at the end of the voice; its first token logged as it came.
      firstTokenMs === undefined ? undefined : timing({ endedAt: 1000, firstTokenMs }),
    );
    assert.ok(t);
    return { ...t, device: i };
  };
  const turns = [turn(0, 1000, 900), turn(1, 1100, 500), turn(2, 3000, 2800), turn(3, 1200, 1000), turn(4, 1300)];
  assert.deepEqual(
    turns.map((t) => t.firstFrameAfterFirstTokenMs),
    [100, 600, 200, 200, undefined],
  );
  const v = summarizeVoiceToVoice(turns, null);
  // p95 of the differences is 600; the difference of the p95s (3000 − 2800) would say 200.
  assert.deepEqual(v.firstFrameAfterFirstTokenMs, { p50: 200, p95: 600, n: 4 });
  assert.equal(v.stages.voiceToVoiceMs.p95 - v.stages.firstTokenMs.p95, 200);
  const lines = voiceToVoiceLines({ voiceToVoice: v });
  assert.ok(
    lines.some((l) =>
      /first frame at the device after the model's first token +200 \/ 600 +\(per turn, 4 turns\)/.test(l),
    ),
    lines.join('\n'),
  );
  const table = voiceToVoiceTable([{ devices: 5, voiceToVoice: v }]).split('\n');
  const header = (table[0] as string).split(' | ');
  const row = (table[2] as string).split(' | ');
  const col = header.findIndex((h) => h.includes("first frame after the model's first token"));
  assert.ok(col > 0, table[0]);
  assert.equal(row[col], '200 / 600');
});

test("with the streaming TTS the providers' delays count its first audio after the first text, or after the stand-in's first sentence when that is later", () => {
  // The stand-in (as the simulator starts it) speaks ttsStreamFirstAudioMs after the first text,
  // or once its first sentence is whole if later: here the ';' of the second 4-character token
  // (25 ms) is well within the 150 ms; the server's per-sentence path waits for the '.' (7 tokens).
  const answer = 'Sunny; high of twenty two. Enjoy!';
  const asr = { requests: 4, audioMs: 8000, delayMs: 1800 };
  assert.deepEqual(providerDelay({ ...PROFILES.cloud, tts: 'streaming' }, answer, asr), {
    path: 'streaming',
    asrMs: 450,
    asrAudioMs: 2000,
    llmFirstTokenMs: 450,
    firstSentenceStreamMs: 0,
    ttsFirstAudioMs: 150,
    totalMs: 1050,
  });
  const remote = providerDelay(PROFILES.cloud, answer, asr);
  assert.equal(remote.path, 'per-sentence');
  assert.equal(remote.firstSentenceStreamMs, 150);
  assert.equal(remote.ttsFirstAudioMs, 250);
  // Text with no mark of the stand-in's: its first sentence is whole only at the end of the
  // answer (50 characters, 13 tokens: 300 ms), 150 ms past the first-audio figure.
  assert.equal(
    providerDelay({ ...PROFILES.cloud, tts: 'streaming' }, 'no mark at all in this one, it goes on for a while', asr)
      .firstSentenceStreamMs,
    150,
  );
});
