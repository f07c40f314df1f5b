/**
 * The MQTT+UDP transport under fast-check in CI: a fixed seed and a few dozen cases of each kind (a few seconds)
 * against the real server while a simulated firmware holds a session on it (see mqtt-run.ts).
 * `npm run fuzz -- --mqtt-runs N` runs the same properties at length.
 */
import { test } from 'node:test';
import { runMqttFuzz } from './mqtt-run.ts';

/** Fixed so CI is reproducible; the long run takes any seed. */
const SEED = 20_261_128;

test(`seed ${SEED}: broker bytes, published messages and datagrams; no crash, no error line, the bystander's session untouched`, async () => {
  const lines = await runMqttFuzz({ seed: SEED, brokerRuns: 40, helloRuns: 20, udpRuns: 40 });
  for (const l of lines) console.log(`mqtt fuzz: ${l}`);
});
