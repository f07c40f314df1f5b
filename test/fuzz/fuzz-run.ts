/**
 * One fuzz run, shared by the CI test (fixed seed, few runs) and `npm run fuzz` (many runs):
 * both properties with fast-check against one server, an honest device talking throughout, then
 * the checks that nothing was left behind (every fuzzed session gone, its media state released)
 * and that the honest device still completes a spoken turn.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { waitFor } from '../helpers/wait.ts';
import { connectionScript } from './script-arbitrary.ts';
import { runConnection } from './connection-property.ts';
import { mcpScript } from './mcp-arbitraries.ts';
import { runMcpExchange } from './mcp-property.ts';
import { HonestDevice } from './honest-device.ts';
import type { FuzzServer } from './fuzz-server.ts';

export interface FuzzRunOptions {
  seed: number;
  /** fast-check runs of the connection property (one fuzzed connection each). */
  connectionRuns: number;
  /** fast-check runs of the device MCP property (one device each). */
  mcpRuns: number;
  /** Called every ~progressMs with a progress line. */
  progress?: (line: string) => void;
  progressMs?: number;
  /** Stop starting new cases after this long (fast-check's interruptAfterTimeLimit); the cases run are reported. */
  timeLimitMs?: number;
}

export interface FuzzRunResult {
  honestTurns: number;
  recognised: string;
  elapsedMs: number;
}

export function describeStats(fz: FuzzServer, startedAt: number): string {
  const inputs = [...fz.stats.inputs].map(([k, n]) => `${k} ${n}`).join(', ');
  const sent = [...fz.stats.inputs.values()].reduce((a, b) => a + b, 0);
  const codes = [...fz.stats.closeCodes]
    .sort(([a], [b]) => a - b)
    .map(([c, n]) => `${c}×${n}`)
    .join(' ');
  return (
    `cases ${fz.stats.cases}, inputs ${sent} (${inputs}), crashes ${fz.crashes.length}, error lines ${fz.logs.errorCount()}, ` +
    `close codes ${codes || 'none'}, elapsed ${((Date.now() - startedAt) / 1000).toFixed(1)} s, ` +
    `RSS ${(process.memoryUsage.rss() / 2 ** 20).toFixed(0)} MB (max ${(fz.stats.maxRssBytes / 2 ** 20).toFixed(0)} MB)`
  );
}

export async function runFuzz(fz: FuzzServer, opts: FuzzRunOptions): Promise<FuzzRunResult> {
  const startedAt = Date.now();
  const honest = await HonestDevice.connect(fz.srv.wsUrl);
  const timer = opts.progress
    ? setInterval(() => opts.progress?.(describeStats(fz, startedAt)), opts.progressMs ?? 10_000)
    : undefined;
  try {
    // Paced to leave room in the session's turn budget for the spoken turn at the end.
    const perMinute = fz.srv.config.conversation.maxTurnsPerMinute;
    honest.startTalking(perMinute > 0 ? Math.ceil(60_000 / Math.max(1, perMinute - 1)) + 100 : 0);
    // Shrinking re-runs cases against the live server; a failure is reported with its seed and path.
    const limit = (share: number) => (opts.timeLimitMs ? { interruptAfterTimeLimit: opts.timeLimitMs * share } : {});
    const mcpShare = opts.mcpRuns / (opts.mcpRuns + opts.connectionRuns);
    // MCP runs first and short: they are the slow ones (each probe call is a spoken turn).
    if (opts.mcpRuns > 0)
      await fc.assert(
        fc.asyncProperty(mcpScript, (s) => runMcpExchange(fz, s)),
        { seed: opts.seed, numRuns: opts.mcpRuns, ...limit(Math.max(0.1, mcpShare)) },
      );
    await fc.assert(
      fc.asyncProperty(connectionScript, (s) => runConnection(fz, s)),
      { seed: opts.seed, numRuns: opts.connectionRuns, ...limit(1 - Math.max(0.1, mcpShare)) },
    );
    await honest.stopTalking();
    assert.deepEqual(honest.failures, [], 'the honest device kept talking during the fuzzing');
    assert.ok(honest.turns > 0, 'the honest device completed typed turns during the fuzzing');
    assert.equal(honest.dev.closeCode, null, 'the honest session is still open');
    // Nothing of the fuzzed devices is left: sessions end and release their media state.
    await waitFor(() => fz.srv.app.registry.size === 1, { what: 'every fuzzed session to end', timeoutMs: 10_000 });
    await waitFor(() => fz.srv.deps.media.stats().sessions <= 1, {
      what: 'the fuzzed sessions’ media state to be released',
      timeoutMs: 10_000,
    });
    const recognised = await honest.voiceTurn();
    assert.match(recognised, /weather/i, 'the honest device’s speech was recognised after the fuzzing');
    fz.assertHealthy('after the fuzz run');
    return { honestTurns: honest.turns, recognised, elapsedMs: Date.now() - startedAt };
  } finally {
    clearInterval(timer);
    await honest.stopTalking();
    honest.close();
  }
}
