/**
 * Log redaction per finished line (server/logger.ts's streamWrite hook: secret values, then URLs),
 * for line sizes a session logs (a stage timing ~300 B, an error with a provider's body ~2 KB, a
 * tool result or prompt under `pii` ~20 KB), with the secrets a running server holds: a few
 * configured keys (one not word-shaped) and 1,000 issued tokens. Printed: µs per line and what
 * 1,000 lines a second (a 200-device burst logs a few hundred) cost of one core.
 */
import { randomBytes } from 'node:crypto';
import { SecretValues } from '../../core/secret-values.ts';
import { redactUrlsInText } from '../../core/redact-url.ts';

function line(bytes: number): string {
  const words = [
    'session',
    'turn',
    'first',
    'audio',
    'frame',
    'deviceId',
    'a0:00:00:00:00:01',
    '3f1c2a9e-5b4d-4c7e-9a1f-0e2d3c4b5a69',
    'https://api.example.com/v1/chat/completions',
    'asrMs',
    '412',
    'the',
    'weather',
    'is',
    'sunny',
  ];
  let msg = '';
  for (let i = 0; msg.length < bytes; i++) msg += `${words[i % words.length]} `;
  return `{"level":30,"time":1764390000000,"pid":1234,"part":"voice","sessionId":"s-1","msg":${JSON.stringify(msg)}}\n`;
}

export async function run(): Promise<void> {
  const secrets = new SecretValues();
  secrets.add('sk-' + randomBytes(24).toString('hex'));
  secrets.add('p@ss/word with space');
  secrets.add(randomBytes(16).toString('base64url'));
  for (let i = 0; i < 1000; i++) secrets.add(randomBytes(24).toString('base64url'), { issued: true });
  const redact = (l: string): string => redactUrlsInText(secrets.redact(l));
  for (const bytes of [300, 2_000, 20_000]) {
    const l = line(bytes);
    const n = Math.max(200, Math.round(2_000_000 / bytes));
    for (let i = 0; i < n / 10; i++) redact(l);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) redact(l);
    const us = ((performance.now() - t0) * 1000) / n;
    console.log(
      `redaction ${l.length} B line: ${us.toFixed(1)} µs/line (${(((us * 1000) / 1e6) * 100).toFixed(2)} % of a core at 1,000 lines/s)`,
    );
  }
}
