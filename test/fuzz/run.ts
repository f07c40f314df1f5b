/**
 * The long fuzz run: `npm run fuzz -- --runs 100000 [--seed N] [--mcp-share 0.01] [--ota-runs 2000] [--admin-runs 2000] [--endpoint-runs 500] [--bridge-runs 500] [--mqtt-runs 3000] [--vision-runs 2000] [--max-minutes M]`.
 * The same properties as the CI tests (fuzz-run.ts for the device protocol, ota-run.ts for OTA
 * and the identity fields, `--ota-runs` per auth mode, admin-run.ts for the admin API (routes,
 * methods, bodies, headers, tokens: declared answers only, every wrong token budgeted), mcp-endpoint-run.ts for the MCP endpoint's
 * answers to the server's requests, mcp-bridge-run.ts for what a bridge sends it unasked, bad
 * tokens, floods of pages and tools, and its bounds, mqtt-run.ts for the MQTT+UDP transport: `--mqtt-runs` split between broker bytes,
 * published messages and datagrams, vision-run.ts for the camera endpoint's uploads), many more cases; prints progress every
 * 10 s and a final report (inputs sent, crashes, close codes, OTA answers, elapsed, RSS, heap
 * after GC). Exit code 1 on any failure, with fast-check's seed and path to replay it.
 */
import { parseArgs } from 'node:util';
import { startFuzzServer } from './fuzz-server.ts';
import { describeStats, runFuzz } from './fuzz-run.ts';
import { OTA_MODES, runOtaFuzz } from './ota-run.ts';
import { runAdminFuzz } from './admin-run.ts';
import { runMcpEndpointFuzz } from './mcp-endpoint-run.ts';
import { runMcpBridgeFuzz } from './mcp-bridge-run.ts';
import { runMqttFuzz } from './mqtt-run.ts';
import { runVisionFuzz } from './vision-run.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    'mcp-share': { type: 'string', default: '0.01' },
    'ota-runs': { type: 'string', default: '2000' },
    'admin-runs': { type: 'string', default: '2000' },
    'endpoint-runs': { type: 'string', default: '500' },
    'bridge-runs': { type: 'string', default: '500' },
    'mqtt-runs': { type: 'string', default: '3000' },
    'vision-runs': { type: 'string', default: '2000' },
    'max-minutes': { type: 'string' },
  },
});
const runs = Number(values.runs);
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
const mcpRuns = Math.round(runs * Number(values['mcp-share']));
const otaRuns = Number(values['ota-runs']);
const adminRuns = Number(values['admin-runs']);
const endpointRuns = Number(values['endpoint-runs']);
const bridgeRuns = Number(values['bridge-runs']);
const mqttRuns = Number(values['mqtt-runs']);
const visionRuns = Number(values['vision-runs']);
const timeLimitMs = values['max-minutes'] !== undefined ? Number(values['max-minutes']) * 60_000 : undefined;
if (
  !Number.isInteger(runs) ||
  runs < 1 ||
  !Number.isInteger(seed) ||
  !Number.isInteger(otaRuns) ||
  otaRuns < 0 ||
  !Number.isInteger(adminRuns) ||
  adminRuns < 0
) {
  throw new Error('--runs, --seed, --ota-runs and --admin-runs take integers');
}

/** Heap in use after a full collection (run with --expose-gc, as `npm run fuzz` does). */
function heapAfterGc(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

const mb = (n: number): string => `${(n / 2 ** 20).toFixed(0)} MB`;
console.log(
  `fuzz: seed ${seed}, runs ${runs - mcpRuns} connections + ${mcpRuns} MCP exchanges + ${otaRuns} OTA requests per auth mode (${OTA_MODES.join(', ')}) + ${adminRuns} admin API requests${timeLimitMs ? `, at most ${values['max-minutes']} min` : ''}`,
);
let failed = false;
if (otaRuns > 0) {
  // OTA first, on servers of its own: a tenth of the time limit, if one is given.
  try {
    await runOtaFuzz({
      seed,
      runsPerMode: otaRuns,
      progress: (l) => console.log(`  ota ${l}`),
      progressMs: 10_000,
      ...(timeLimitMs ? { timeLimitMsPerMode: timeLimitMs / 10 / OTA_MODES.length } : {}),
    });
    console.log('fuzz: OTA PASSED');
  } catch (err) {
    failed = true;
    console.error(`fuzz: OTA FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`);
  }
}
if (adminRuns > 0) {
  // On a server of its own: a twentieth of the time limit.
  try {
    await runAdminFuzz({
      seed,
      runs: adminRuns,
      progress: (l) => console.log(`  ${l}`),
      progressMs: 10_000,
      ...(timeLimitMs ? { timeLimitMs: timeLimitMs / 20 } : {}),
    });
    console.log('fuzz: admin API PASSED');
  } catch (err) {
    failed = true;
    console.error(
      `fuzz: admin API FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
if (Number.isInteger(endpointRuns) && endpointRuns > 0) {
  try {
    for (const l of await runMcpEndpointFuzz({ seed, runs: endpointRuns })) console.log(`  mcp endpoint ${l}`);
    console.log('fuzz: MCP endpoint PASSED');
  } catch (err) {
    failed = true;
    console.error(
      `fuzz: MCP endpoint FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
if (Number.isInteger(bridgeRuns) && bridgeRuns > 0) {
  // A tenth of the time limit, if one is given.
  try {
    for (const l of await runMcpBridgeFuzz({
      seed,
      runs: bridgeRuns,
      ...(timeLimitMs ? { timeLimitMs: timeLimitMs / 10 } : {}),
    }))
      console.log(`  mcp bridge ${l}`);
    console.log('fuzz: MCP endpoint bridges PASSED');
  } catch (err) {
    failed = true;
    console.error(
      `fuzz: MCP endpoint bridges FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
if (Number.isInteger(mqttRuns) && mqttRuns > 0) {
  // Two fifths broker bytes, one fifth published messages, two fifths datagrams; a tenth of the time limit.
  try {
    const lines = await runMqttFuzz({
      seed,
      brokerRuns: Math.round(mqttRuns * 0.4),
      helloRuns: Math.round(mqttRuns * 0.2),
      udpRuns: Math.round(mqttRuns * 0.4),
      progress: (l) => console.log(`  ${l}`),
      progressMs: 10_000,
      ...(timeLimitMs ? { timeLimitMs: timeLimitMs / 10 } : {}),
    });
    for (const l of lines) console.log(`  mqtt ${l}`);
    console.log('fuzz: MQTT+UDP PASSED');
  } catch (err) {
    failed = true;
    console.error(
      `fuzz: MQTT+UDP FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`,
    );
    if (err instanceof Error && err.cause) console.error(String(err.cause));
  }
}
if (Number.isInteger(visionRuns) && visionRuns > 0) {
  try {
    console.log(
      `  vision ${await runVisionFuzz({ seed, runs: visionRuns, ...(timeLimitMs ? { timeLimitMs: timeLimitMs / 10 } : {}) })}`,
    );
    console.log('fuzz: vision endpoint PASSED');
  } catch (err) {
    failed = true;
    console.error(
      `fuzz: vision endpoint FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
const fz = await startFuzzServer();
const startedAt = Date.now();
const heapBefore = heapAfterGc();
try {
  const r = await runFuzz(fz, {
    seed,
    connectionRuns: runs - mcpRuns,
    mcpRuns,
    progress: (l) => console.log(`  ${l}`),
    progressMs: 10_000,
    ...(timeLimitMs ? { timeLimitMs } : {}),
  });
  console.log(`fuzz: PASSED. Honest device: ${r.honestTurns} typed turns during the run, then heard "${r.recognised}"`);
} catch (err) {
  failed = true;
  console.error(`fuzz: FAILED (replay with --seed ${seed})\n${err instanceof Error ? err.message : String(err)}`);
  if (err instanceof Error && err.cause) console.error(String(err.cause));
} finally {
  console.log(`fuzz: ${describeStats(fz, startedAt)}`);
  console.log(`fuzz: heap after GC ${mb(heapBefore)} before, ${mb(heapAfterGc())} after`);
  await fz.close();
}
process.exit(failed ? 1 : 0);
