/**
 * The fleet simulator (`npm run simulate`) end to end: it starts the fakes and the real server as
 * a child process, runs 2 devices × 1 spoken turn and a tiny idle step, returns numbers for every
 * column, and leaves no server process behind. No wall-clock thresholds beyond sanity bounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROFILES } from '../bench/sim/provider-profiles.ts';
import { runSimulation } from '../bench/simulate.ts';
import { childProcesses } from '../helpers/speech.ts';

/** The simulator's children: the server and the fakes' process. */
const SIM_CHILDREN = /server\/main\.ts|fakes-main\.ts/;

function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

const finite = (v: unknown, what: string): void =>
  assert.ok(typeof v === 'number' && Number.isFinite(v), `${what} is a number (got ${String(v)})`);

test('simulator: 2 devices × 1 turn and 5 idle devices against a self-started server', {
  timeout: 90_000,
}, async () => {
  const lines: string[] = [];
  const result = await runSimulation({
    devices: [2],
    turns: 1,
    idle: 5,
    warmup: false,
    settleMs: 300,
    sttTimeoutMs: 10_000,
    answerTimeoutMs: 20_000,
    connectTimeoutMs: 10_000,
    maxRunMs: 80_000,
    print: (l) => lines.push(l),
  });

  assert.equal(result.startedServer, true);
  const pid = result.serverPid;
  assert.ok(pid !== null && pid > 0, 'the child server had a pid');
  assert.ok(isGone(pid), 'the child server process is gone afterwards');
  assert.deepEqual(childProcesses(SIM_CHILDREN), [], 'no server or fakes process left');

  assert.equal(result.steps.length, 1);
  const s = result.steps[0];
  assert.ok(s);
  assert.equal(s.turnsExpected, 2);
  assert.equal(s.turnsDone, 2, `both turns done; problems: ${JSON.stringify(s.errors)}`);
  assert.equal(s.turns.length, 2);
  for (const t of s.turns) {
    assert.ok(t.playback.frames > 0, `turn of device ${t.device} received frames`);
    assert.ok(t.sentences >= 1, 'a sentence_start arrived');
    finite(t.eosToFirstFrameMs, 'end of speech → first frame');
    finite(t.voiceToVoiceMs, 'end of voice → first frame');
  }
  // Voice-to-voice: every done turn, matched to its server log line (the decision after the voice
  // ended, by at least the end of turn's short silence less a VAD frame) and the stages in their order.
  const v = s.voiceToVoice;
  assert.equal(v.turns, 2);
  for (const t of v.perTurn) {
    assert.ok((t.endOfTurnMs ?? NaN) > 200, `decision ${t.endOfTurnMs} ms after the voice ended`);
    assert.ok(
      (t.endOfTurnMs as number) <= (t.finalTranscriptMs as number) &&
        (t.finalTranscriptMs as number) <= (t.firstSentenceMs as number) &&
        (t.firstSentenceMs as number) <= (t.firstFrameOutMs as number),
      `stages in order: ${JSON.stringify(t)}`,
    );
  }
  finite(v.stages.voiceToVoiceMs.p50, 'voice-to-voice p50');
  assert.equal(v.providerDelay?.totalMs, 0, 'the instant fakes put no delay on the path');
  assert.equal(v.oursP50Ms, v.stages.voiceToVoiceMs.p50, 'with instant fakes it is all ours');
  assert.equal(result.profile, 'instant');
  finite(s.eosToFirstFrameMs.p50, 'device p50');
  finite(s.eosToFirstFrameMs.p95, 'device p95');
  // Sanity only: the figure includes the VAD window and must not be absurd.
  assert.ok(s.eosToFirstFrameMs.p50 > 0 && s.eosToFirstFrameMs.p95 < 20_000);
  assert.equal(result.vadSilenceMs, 700);
  for (const [name, v] of [
    ['server-added', s.serverFirstAudioMs],
    ['ASR', s.serverAsrMs],
    ['LLM first token', s.serverLlmFirstTokenMs],
    ['first sentence', s.serverFirstSentenceMs],
  ] as const) {
    assert.ok(v && v.n === 2, `${name}: two turn-timings log lines`);
    finite(v.p50, `${name} p50`);
    finite(v.p95, `${name} p95`);
  }
  // One turn per device: both are first turns (the burst), none is a later one.
  assert.equal(s.serverStages?.first.turns, 2);
  assert.equal(s.serverStages?.later.turns, 0);
  finite(s.serverStages?.first.firstSentence.p95, 'first turns: first sentence p95');
  assert.ok(
    (s.serverStages?.first.firstSentence.p50 ?? NaN) <= (s.serverStages?.first.firstFrame.p50 ?? NaN),
    'the first sentence is cut before its first frame leaves',
  );
  assert.equal(s.serverTurns?.length, 2, 'the server log lines are in the JSON');
  // The server's end-of-speech decisions, moved onto this process's clock: within the run.
  for (const t of s.serverTurns ?? [])
    assert.ok(
      t.endedAt !== undefined && t.endedAt > 0 && t.endedAt < performance.now(),
      `endedAt ${t.endedAt} on this clock`,
    );
  // While both devices sent their utterance (the /proc sampler is Linux only).
  if (process.platform === 'linux') {
    const talk = s.talkingCpu;
    assert.ok(talk, 'a talking window was measured');
    const speechMs = s.turns.map((t) => (t.speechEndAt ?? NaN) - (t.speechStartAt ?? NaN));
    assert.ok(
      talk.windowMs >= 200 && talk.windowMs <= Math.min(...speechMs) + 1,
      `talking window ${talk.windowMs} ms, within each device's speech (${speechMs.join(', ')} ms)`,
    );
    assert.ok(talk.server.total > 0 && talk.machineBusyPct > 0, 'the server worked while the devices talked');
    // The devices' speech is sent from this process; the fakes' process is sampled (idle or not).
    assert.ok(talk.rig.simulator > 0, `the simulator's own share is measured (${talk.rig.simulator} %)`);
    assert.ok(talk.rig.fakes !== null && talk.rig.fakes >= 0, 'the fakes are sampled');
  }
  finite(s.latePct, 'late %');
  finite(s.serverLatePct, 'sent late %');
  finite(s.gapPct, 'gap %');
  finite(s.underrunMs, 'underrun ms');
  finite(s.serverCpuCores, 'server CPU');
  finite(s.serverPeakRssMb, 'server peak RSS');
  finite(s.serverLoopP99Ms, 'server loop p99');
  finite(s.serverLoopMaxMs, 'server loop max');
  finite(s.simLoopP99Ms, 'sim loop p99');
  finite(s.simLoopMaxMs, 'sim loop max');
  assert.ok((s.serverPeakRssMb as number) > 10 && (s.serverPeakRssMb as number) < 8192);

  const idle = result.idle;
  assert.ok(idle);
  assert.equal(idle.connected, 5);
  assert.equal(idle.sessionsActive, 5);
  finite(idle.rssBeforeMb, 'RSS with 0 devices');
  finite(idle.rssIdleMb, 'RSS with 5 devices');
  finite(idle.rssPerDeviceKb, 'RSS per device');

  // The printed report: a row, the Markdown table, the idle lines.
  const printed = lines.join('\n').split('\n');
  assert.ok(
    printed.some((l) => l.startsWith('| devices |')),
    'Markdown table printed',
  );
  assert.ok(
    printed.some((l) => /^ {2}stages \(server.*first turns ASR \d+ \/ \d+/.test(l)),
    'the stages line printed under the row',
  );
  assert.ok(
    printed.some((l) => /^\| 2 \| 2\/2 \|/.test(l)),
    'the step row is in the table',
  );
  assert.ok(
    printed.some((l) => /^ {4}first frame at the device +\d+ \/ \d+$/.test(l)),
    'the voice-to-voice stage table printed',
  );
  assert.ok(
    printed.some((l) => /^\| 2 \| 2 \| \d+ \/ \d+ \| \d+ \/ \d+ \|/.test(l)),
    'the voice-to-voice row is in its Markdown table',
  );
  if (process.platform === 'linux')
    assert.ok(
      printed.some((l) =>
        /^ {2}talking \(first turns\): \d+ ms while all 2 devices sent speech; all \d+ CPUs .*, the simulator \d+ %, the fakes \d+ %; waited for a CPU: the server's main thread \d+ ms, the simulator's \d+ ms; an idle thread's timer over 5 ms late \d+ of \d+ times$/.test(
          l,
        ),
      ),
      'the talking line printed',
    );
  if (process.platform === 'linux') {
    const waits = s.talkingCpu?.cpuWaitMs;
    finite(waits?.serverMain ?? null, "the server main thread's CPU wait while devices talk");
    finite(waits?.simulator ?? null, "the simulator's CPU wait while devices talk");
    finite(s.talkingCpu?.stealPct ?? null, "the hypervisor's share while devices talk");
    finite(s.stealPct, "the hypervisor's share over the step");
    assert.ok(
      printed.some((l) =>
        /^ {2}sim: [\d.]+ CPU cores; machine load average [\d.]+ on \d+ CPUs; the hypervisor took [\d.]+ % of the CPUs' time; a nearly idle thread's timer fired over 5 ms late in [\d.]+ % of its ticks \(max \d+ ms\); step took/.test(
          l,
        ),
      ),
      'the sim line says what the hypervisor took and how a timer kept time',
    );
    // The probe's 20 ms timer ticked through the whole step: about one tick per 20 ms of it.
    const t = s.timerJitter;
    assert.ok(
      t && t.ticks >= s.wallMs / 20 / 2 && t.ticks <= s.wallMs / 20 + 2,
      `probe ticks ${JSON.stringify(t)} over ${s.wallMs} ms`,
    );
    assert.ok(t.late <= t.ticks && t.maxLateMs >= 0, JSON.stringify(t));
  }
  assert.ok(
    printed.some((l) => l.startsWith('idle: server RSS with 0 devices')),
    'idle figures printed',
  );
});

test('simulator: with the cloud profile the server speaks through the paced fakes, and voice-to-voice holds their delays', {
  timeout: 90_000,
}, async () => {
  const lines: string[] = [];
  const result = await runSimulation({
    devices: [1],
    turns: 1,
    warmup: false,
    settleMs: 300,
    maxRunMs: 80_000,
    profile: 'cloud',
    providers: PROFILES.cloud,
    print: (l) => lines.push(l),
  });
  assert.deepEqual(childProcesses(SIM_CHILDREN), [], 'no server or fakes process left');
  assert.equal(result.profile, 'cloud');
  const s = result.steps[0];
  assert.ok(s);
  assert.equal(
    s.turnsDone,
    1,
    `the turn was answered through the remote TTS fake; problems: ${JSON.stringify(s.errors)}`,
  );
  assert.deepEqual(result.serverErrors, [], 'the server logged no error (it decoded the fake pcm)');
  assert.equal(s.fakeWork?.speeches, 3, "the answer's three sentences were spoken by the TTS fake");
  const d = s.voiceToVoice.providerDelay;
  assert.ok(d && d.asrMs !== null && d.asrAudioMs !== null, 'the fake ASR counted the upload');
  // 350 ms + 5 % of what was uploaded (at least the utterance itself).
  assert.ok(d.asrAudioMs > 1000 && Math.abs(d.asrMs - (350 + 0.05 * d.asrAudioMs)) < 0.01, JSON.stringify(d));
  assert.equal(d.ttsFirstAudioMs, 250);
  // Each delay is on the path one after the other: the user cannot wait less than their sum.
  const v2v = s.voiceToVoice.stages.voiceToVoiceMs.p50;
  assert.ok(v2v >= (d.totalMs as number), `voice-to-voice ${v2v} ms holds the ${d.totalMs} ms the fakes wait`);
  assert.ok(
    lines.some((l) =>
      l.startsWith(
        '  TTS: the fake OpenAI-compatible /v1/audio/speech, one request per sentence (pcm, 24 kHz): first audio after 250 ms',
      ),
    ),
    'the effective figures printed at the start',
  );
});

test('simulator: with --tts streaming the server speaks through the Volcengine stand-in, text pushed as written, and the first frame after the first token is reported per turn', {
  timeout: 90_000,
}, async () => {
  const lines: string[] = [];
  const result = await runSimulation({
    devices: [1],
    turns: 1,
    warmup: false,
    settleMs: 300,
    maxRunMs: 80_000,
    profile: 'cloud',
    providers: { ...PROFILES.cloud, tts: 'streaming' },
    print: (l) => lines.push(l),
  });
  assert.deepEqual(childProcesses(SIM_CHILDREN), [], 'no server or fakes process left');
  const s = result.steps[0];
  assert.ok(s);
  assert.equal(s.turnsDone, 1, `answered through the streaming stand-in; problems: ${JSON.stringify(s.errors)}`);
  assert.deepEqual(result.serverErrors, [], 'the server logged no error');
  assert.equal(s.fakeWork?.speeches, 1, 'one vendor session for the whole answer, not one per sentence');
  const d = s.voiceToVoice.providerDelay;
  assert.equal(d?.path, 'streaming');
  assert.equal(d?.ttsFirstAudioMs, 150);
  const after = s.voiceToVoice.firstFrameAfterFirstTokenMs;
  assert.ok(
    after.n === 1 && after.p50 >= 150,
    `first frame ${after.p50} ms after the first token holds the stand-in's 150 ms`,
  );
  assert.ok(
    lines.some((l) => l.startsWith('  TTS: streaming, the Volcengine bidirectional stand-in')),
    'the effective figures printed at the start',
  );
});

test('simulator: a server that cannot start fails fast and leaves nothing running', { timeout: 30_000 }, async () => {
  await assert.rejects(
    runSimulation({
      devices: [1],
      turns: 1,
      warmup: false,
      serverConfig: { server: { port: 'not a port' } },
      maxRunMs: 25_000,
      print: () => {},
    }),
    /did not become healthy|exited/,
  );
  assert.deepEqual(childProcesses(SIM_CHILDREN), [], 'no server or fakes process left');
});
