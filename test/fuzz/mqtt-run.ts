/**
 * The MQTT+UDP fuzz run, shared by the CI test (fixed seed, few runs) and `npm run fuzz` (many):
 * one server with the transport on and a bystander firmware mid-session; broker cases, published
 * messages and datagrams from fast-check (mqtt-arbitraries.ts) checked one by one
 * (mqtt-property.ts); then the bystander's record (every typed turn answered with audio, no
 * downlink datagram its firmware would drop, no sequence gap), one more typed turn (its downlink
 * still comes to its address), every fuzzed session gone, and a spoken turn over UDP that the
 * server still hears (its uplink sequence was not moved on by a forged datagram).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { utterancePackets } from '../helpers/speech.ts';
import { waitFor } from '../helpers/wait.ts';
import { describeStats } from './fuzz-run.ts';
import { brokerCase, helloCase, udpCase } from './mqtt-arbitraries.ts';
import { describeMqttStats, runBrokerCase, runHelloCase, runUdpCase, startMqttTarget } from './mqtt-property.ts';

export interface MqttFuzzOptions {
  seed: number;
  brokerRuns: number;
  helloRuns: number;
  udpRuns: number;
  /** Stop starting new cases after this long (shared by the three properties by their runs). */
  timeLimitMs?: number;
  progress?: (line: string) => void;
  progressMs?: number;
}

/** Runs the three properties; returns report lines. Throws on the first failing case (with fast-check's seed and path). */
export async function runMqttFuzz(opts: MqttFuzzOptions): Promise<string[]> {
  const t = await startMqttTarget();
  const startedAt = Date.now();
  const timer = opts.progress
    ? setInterval(
        () => opts.progress?.(`${describeStats(t.fz, startedAt)}; ${describeMqttStats(t)}`),
        opts.progressMs ?? 10_000,
      )
    : undefined;
  try {
    // The server learns where the device is from its first datagram: a moment of open microphone
    // before the typed turns, which also leaves datagrams to replay.
    await t.bystander.openMic(await utterancePackets(new Int16Array(0), 0, 1200));
    const perMinute = t.fz.srv.config.conversation.maxTurnsPerMinute;
    t.bystander.startTalking(perMinute > 0 ? Math.ceil(60_000 / Math.max(1, perMinute - 1)) + 100 : 0);
    const total = opts.brokerRuns + opts.helloRuns + opts.udpRuns;
    const limit = (runs: number) =>
      opts.timeLimitMs ? { interruptAfterTimeLimit: (opts.timeLimitMs * runs) / Math.max(1, total) } : {};
    if (opts.brokerRuns > 0)
      await fc.assert(
        fc.asyncProperty(brokerCase, (c) => runBrokerCase(t, c)),
        { seed: opts.seed, numRuns: opts.brokerRuns, ...limit(opts.brokerRuns) },
      );
    if (opts.helloRuns > 0)
      await fc.assert(
        fc.asyncProperty(helloCase, (c) => runHelloCase(t, c)),
        { seed: opts.seed, numRuns: opts.helloRuns, ...limit(opts.helloRuns) },
      );
    if (opts.udpRuns > 0)
      await fc.assert(
        fc.asyncProperty(udpCase, (c) => runUdpCase(t, c)),
        { seed: opts.seed, numRuns: opts.udpRuns, ...limit(opts.udpRuns) },
      );
    await t.bystander.stopTalking();
    assert.deepEqual(t.bystander.failures, [], 'the bystander kept talking during the fuzzing');
    assert.ok(t.bystander.turns > 0, 'the bystander completed typed turns during the fuzzing');
    t.bystander.assertUntouched();
    // Its downlink still goes to it (a typed turn: the server sends before the device says anything).
    await t.bystander.textTurn().catch((err: unknown) => {
      throw new Error(
        `after the fuzzing the bystander's answer no longer reaches it: a datagram from another address moved its session's downlink (${String(err)})`,
      );
    });
    // Nothing of the fuzzed devices is left: their sessions end when they power off.
    await waitFor(() => t.fz.srv.app.registry.size === 1, { what: 'every fuzzed session to end', timeoutMs: 10_000 });
    const recognised = await t.bystander.voiceTurn();
    assert.match(recognised, /weather/i, 'the bystander’s speech over UDP was recognised after the fuzzing');
    t.bystander.assertUntouched();
    t.fz.assertHealthy('after the MQTT fuzz run');
    return [describeStats(t.fz, startedAt), `${describeMqttStats(t)}, then heard "${recognised}"`];
  } finally {
    clearInterval(timer);
    await t.bystander.stopTalking();
    await t.close();
  }
}
