/**
 * Signals sent to what the user started reach the server: `npm start` (and `npm run dev`) killed by
 * its PID with SIGTERM or SIGINT stops the server, closes its port and leaves no process of its
 * tree behind (npm runs the script through `sh -c`; a shell that does not hand its place to the
 * server would die alone and leave the server running as an orphan).
 *
 * A signal to the whole process group (Ctrl-C in a terminal, systemd's default KillMode) reaches
 * npm and the server; npm forwards its copy, so the server hears the signal twice within
 * milliseconds. That is one request: the server drains and exits 0. A signal seconds later is a
 * second request and ends the drain at once.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, jsonLogLines } from './helpers/spawned-server.ts';
import { startFakeOpenAi, fakeText, type FakeOpenAi } from '../../fixtures/fake-openai.ts';
import { DeviceSim } from '../../fixtures/device-sim.ts';
import { sleep } from '../../helpers/wait.ts';
import { listDescendants } from '../../../features/metrics/child-processes.ts';

interface Proc {
  pid: number;
  pgid: number;
  state: string;
  cmd: string;
}

/** Whether process `pid` is still running (not ended, not a zombie). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
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
      const p = {
        pid: Number(name),
        state: rest[0] ?? '',
        pgid: Number(rest[2]),
        cmd: readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim(),
      };
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

interface NpmRun {
  pgid: number;
  url: string;
  wsUrl: string;
  /** The last 200 kB of what npm and the server wrote (stdout and stderr). */
  output(): string;
  /** The server's JSON log lines whose `msg` is `msg`. */
  logLines(msg: string): Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Env without the variables that would override the test's config file. */
function cleanEnv(config: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, XIAOZHI_CONFIG: config };
  for (const k of [
    'HOST',
    'PORT',
    'LOG_LEVEL',
    'PUBLIC_WS_URL',
    'DATABASE_URL',
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'LLM_MODEL',
  ])
    delete env[k];
  return env;
}

/**
 * `npm ARGS` exactly as typed, in its own process group (as a shell runs a job, so the group can be
 * signalled and every process it starts found), with a config file and data directory in `dir`;
 * resolves once the server answers /healthz.
 */
async function startNpm(
  dir: string,
  groups: number[],
  args: string[],
  settings: Record<string, unknown>,
  level = 'warn',
): Promise<NpmRun> {
  const port = await freePort();
  const config = join(dir, `config-${port}.yaml`);
  const server = {
    host: '127.0.0.1',
    port,
    drainTimeoutMs: 1000,
    dataDir: join(dir, `data-${port}`),
    ...((settings.server as object | undefined) ?? {}),
  };
  writeFileSync(config, stringify({ ...settings, server, logging: { level } }));
  const npm = spawn('npm', args, {
    cwd: process.cwd(),
    env: cleanEnv(config),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pgid = npm.pid ?? -1;
  groups.push(pgid);
  let output = '';
  npm.stdout.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-200_000)));
  npm.stderr.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-200_000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const url = `http://127.0.0.1:${port}`;
  await until(`npm ${args.join(' ')} to listen`, () => listening(url), 90_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${output}`);
  });
  return {
    pgid,
    url,
    wsUrl: `ws://127.0.0.1:${port}/xiaozhi/v1/`,
    output: () => output,
    logLines: (msg) => jsonLogLines(output, msg),
    exited,
  };
}

describe('signals to npm reach the server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'npm-signals-'));
  const groups: number[] = [];
  let llm: FakeOpenAi | undefined;
  after(async () => {
    // Whatever a failed case left behind.
    for (const g of groups)
      for (const p of groupMembers(g)) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    await llm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cases: Array<[string, string[], NodeJS.Signals]> = [
    ['npm start', ['start'], 'SIGTERM'],
    ['npm start', ['start'], 'SIGINT'],
    ['npm run dev', ['run', 'dev'], 'SIGTERM'],
  ];
  for (const [label, args, signal] of cases) {
    test(`${label}, ${signal} to npm's PID: the port closes and no process of its tree remains`, async () => {
      const run = await startNpm(dir, groups, args, {});
      const before = groupMembers(run.pgid);
      assert.ok(
        before.some((p) => p.cmd.includes('server/main.ts')),
        before.map((p) => p.cmd).join('\n'),
      );

      process.kill(run.pgid, signal);
      // Generous bounds: the drain deadline is 1 s, the machine may be loaded.
      await until('the port to close', async () => !(await listening(run.url)), 20_000);
      await until('no process of the tree to remain', () => groupMembers(run.pgid).length === 0, 20_000).catch(
        (err: Error) => {
          throw new Error(
            `${err.message}: ${groupMembers(run.pgid)
              .map((p) => `${p.pid} ${p.cmd}`)
              .join('; ')}`,
          );
        },
      );
      await run.exited;
    });
  }

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`npm start, ${signal} to its process group during a turn (npm forwards a second copy): one drain, the turn ends, exit 0`, async () => {
      llm ??= await startFakeOpenAi();
      const run = await startNpm(
        dir,
        groups,
        ['start'],
        {
          server: { drainTimeoutMs: 15_000 },
          llm: { baseURL: llm.url, model: 'fake-model', maxRetries: 0, timeoutMs: 30_000 },
        },
        'info',
      );
      const dev = new DeviceSim({ url: run.wsUrl, deviceId: 'e4:00:00:00:00:60' });
      try {
        await dev.hello();
        // The model starts answering a second later: the signals land while the turn is thinking,
        // so the drain lasts long enough for npm's forwarded copy to arrive during it.
        llm.script(fakeText('The drain lets this answer finish.', { firstDelayMs: 1500 }));
        dev.listen('detect', { text: 'Say something while I press Ctrl-C.' });
        await dev.waitJson('stt', undefined, 10_000);
        // Every process npm started, also those in groups of their own (the TTS helpers).
        const tree = await listDescendants({ pid: run.pgid });
        assert.ok(
          tree.some((p) => p.name === 'espeak-pcm'),
          `the TTS helpers run: ${tree.map((p) => p.name).join(', ')}`,
        );
        // The negative PID: every process of the group, as a terminal's Ctrl-C or systemd does.
        process.kill(-run.pgid, signal);
        const [code, exit] = await Promise.all([dev.closed, run.exited]);
        await until(
          'no process of the tree to remain',
          () => groupMembers(run.pgid).length === 0 && !tree.some((p) => alive(p.pid)),
          20_000,
        );
        const log = run.output().slice(-4000);
        assert.equal(
          run.logLines('second signal: exiting now').length,
          0,
          `the forwarded copy is not a second request:\n${log}`,
        );
        assert.equal(run.logLines('shutting down').length, 1, log);
        assert.equal(run.logLines('stopped').length, 1, `the drain ran to its end:\n${log}`);
        assert.equal(run.logLines('turn timings').at(-1)?.outcome, 'answered', `the turn finished:\n${log}`);
        assert.equal(code, 1001, 'the device got the going-away close');
        assert.deepEqual(exit, { code: 0, signal: null }, log);
      } finally {
        dev.close();
      }
    });
  }

  test('npm start, a second Ctrl-C seconds after the first ends a long drain at once (exit 1)', async () => {
    llm ??= await startFakeOpenAi();
    const run = await startNpm(
      dir,
      groups,
      ['start'],
      {
        server: { drainTimeoutMs: 60_000 },
        llm: { baseURL: llm.url, model: 'fake-model', maxRetries: 0, timeoutMs: 120_000 },
      },
      'info',
    );
    const dev = new DeviceSim({ url: run.wsUrl, deviceId: 'e4:00:00:00:00:61' });
    try {
      await dev.hello();
      // The model takes a minute to answer: the drain would wait for the turn until its deadline.
      llm.script(fakeText('Too late.', { firstDelayMs: 60_000 }));
      dev.listen('detect', { text: 'Take your time.' });
      await dev.waitJson('stt', undefined, 10_000);
      process.kill(-run.pgid, 'SIGINT');
      await until('the drain to start', () => run.logLines('shutting down').length === 1, 10_000);
      // Seconds later: a second request, not npm's forwarded copy.
      await sleep(3000);
      assert.equal(run.logLines('stopped').length, 0, 'still draining (the turn is in progress)');
      process.kill(-run.pgid, 'SIGINT');
      // Generous: far below the 60 s drain deadline.
      const exit = await Promise.race([run.exited, sleep(20_000).then(() => 'still running' as const)]);
      assert.notEqual(exit, 'still running', run.output().slice(-4000));
      assert.equal(run.logLines('second signal: exiting now').length, 1, run.output().slice(-4000));
      assert.equal(run.logLines('stopped').length, 0);
      assert.deepEqual(
        exit,
        { code: 1, signal: null },
        "a forced exit is not a clean one (npm passes on the server's code)",
      );
      await until('no process of the tree to remain', () => groupMembers(run.pgid).length === 0, 20_000);
    } finally {
      dev.close();
    }
  });
});
