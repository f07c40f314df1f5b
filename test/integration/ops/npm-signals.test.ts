/**
 * Signals sent to what the user started reach the server: `npm start` (and `npm run dev`) killed by
 * its PID with SIGTERM or SIGINT stops the server, closes its port and leaves no process of its
 * tree behind (npm runs the script through `sh -c`; a shell that does not hand its place to the
 * server would die alone and leave the server running as an orphan).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './helpers/spawned-server.ts';

interface Proc {
  pid: number;
  pgid: number;
  state: string;
  cmd: string;
}

/** Every live process in process group `pgid` (zombies excluded: they have ended), from /proc. */
function groupMembers(pgid: number): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its closing parenthesis.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const p = { pid: Number(name), state: rest[0] ?? '', pgid: Number(rest[2]), cmd: readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim() };
      if (p.pgid === pgid && p.state !== 'Z') out.push(p);
    } catch {
      // Gone while reading.
    }
  }
  return out;
}

async function listening(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

async function until(what: string, pred: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('signals to npm reach the server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'npm-signals-'));
  const groups: number[] = [];
  after(() => {
    // Whatever a failed case left behind.
    for (const g of groups) for (const p of groupMembers(g)) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const cases: Array<[string, string[], NodeJS.Signals]> = [
    ['npm start', ['start'], 'SIGTERM'],
    ['npm start', ['start'], 'SIGINT'],
    ['npm run dev', ['run', 'dev'], 'SIGTERM'],
  ];
  for (const [label, args, signal] of cases) {
    test(`${label}, ${signal} to npm's PID: the port closes and no process of its tree remains`, async () => {
      const port = await freePort();
      const config = join(dir, `config-${port}.yaml`);
      writeFileSync(config, stringify({ server: { host: '127.0.0.1', port, drainTimeoutMs: 1000, dataDir: join(dir, `data-${port}`) }, logging: { level: 'warn' } }));
      const env: NodeJS.ProcessEnv = { ...process.env, XIAOZHI_CONFIG: config };
      for (const k of ['HOST', 'PORT', 'LOG_LEVEL', 'PUBLIC_WS_URL']) delete env[k];
      // Its own process group, as a shell gives a job, so every process it starts can be found.
      const npm = spawn('npm', args, { cwd: process.cwd(), env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      const pgid = npm.pid ?? -1;
      groups.push(pgid);
      let output = '';
      npm.stdout.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-20_000)));
      npm.stderr.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-20_000)));
      const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
      const url = `http://127.0.0.1:${port}`;
      await until(`${label} to listen`, () => listening(url), 90_000).catch((err: Error) => {
        throw new Error(`${err.message}\n${output}`);
      });
      const before = groupMembers(pgid);
      assert.ok(before.some((p) => p.cmd.includes('server/main.ts')), before.map((p) => p.cmd).join('\n'));

      process.kill(pgid, signal);
      // Generous bounds: the drain deadline is 1 s, the machine may be loaded.
      await until('the port to close', async () => !(await listening(url)), 20_000);
      await until('no process of the tree to remain', () => groupMembers(pgid).length === 0, 20_000).catch((err: Error) => {
        throw new Error(`${err.message}: ${groupMembers(pgid).map((p) => `${p.pid} ${p.cmd}`).join('; ')}`);
      });
      await exited;
    });
  }
});
