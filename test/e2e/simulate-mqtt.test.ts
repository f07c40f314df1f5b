/**
 * The fleet simulator over the firmware's MQTT+UDP transport (`--transport mqtt`), end to end: the
 * server as a child process with its broker on, four simulated firmwares connecting at once (each
 * publishes its hello as soon as the broker answers, from another process than the server's) and
 * holding a spoken turn, then idle devices that keep only their broker connection. Same report
 * as over WebSocket; no wall-clock thresholds beyond sanity bounds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSimulation } from '../bench/simulate.ts';
import { childProcesses } from '../helpers/speech.ts';

test('simulator over MQTT+UDP: 4 devices × 1 turn and 5 idle devices', { timeout: 90_000 }, async () => {
  const lines: string[] = [];
  const result = await runSimulation({
    transport: 'mqtt',
    devices: [4],
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
  assert.equal(result.transport, 'mqtt');
  assert.deepEqual(childProcesses(/server\/main\.ts|fakes-main\.ts/), [], 'no server or fakes process left');
  const s = result.steps[0];
  assert.ok(s);
  assert.deepEqual(s.errors, {}, 'no device had a problem');
  assert.equal(s.connected, 4);
  assert.equal(s.turnsDone, 4);
  for (const t of s.turns) {
    assert.ok(t.playback.frames > 0 && t.sentences >= 1, `turn of device ${t.device} received its answer`);
    assert.equal(t.strayFrames, 0, 'no frame outside tts start/stop');
  }
  assert.ok(s.eosToFirstFrameMs.p50 > 0 && s.eosToFirstFrameMs.p95 < 20_000);
  assert.equal(s.serverTurns?.length, 4, 'the server logged the four turns');

  const idle = result.idle;
  assert.ok(idle);
  assert.equal(idle.transport, 'mqtt');
  assert.equal(idle.connected, 5);
  assert.equal(idle.sessionsActive, 0, 'idle MQTT devices hold no session');
  assert.ok(
    lines.some((l) => /^idle: 5\/5 devices connected \(OTA \+ MQTT broker, no audio session\)/.test(l)),
    'the idle line says what an idle MQTT device holds',
  );
  assert.deepEqual(result.serverErrors, [], 'the server logged no error');
});
