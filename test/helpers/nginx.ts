/**
 * A real nginx for tests (Debian's `nginx` package, /usr/sbin/nginx): the `http {}` contents a
 * test gives (a shipped `conf.d` file, its addresses rewritten) run under a minimal main
 * configuration whose pid file, logs and temp folders are in a temp folder. `stop()` ends it and
 * removes the folder. A missing binary is an error telling what to install: these tests never skip.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { sleep } from './wait.ts';

const NGINX = '/usr/sbin/nginx';

export interface TestNginx {
  /** Everything nginx wrote to stderr (its error log). */
  errors(): string;
  stop(): Promise<void>;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts nginx with `httpConf` inside `http {}`; resolves once 127.0.0.1:`port` accepts connections. */
export async function startNginx(httpConf: string, port: number): Promise<TestNginx> {
  if (!existsSync(NGINX))
    throw new Error(
      `nginx is not installed at ${NGINX}: run scripts/setup.sh --test (it installs Debian's nginx package)`,
    );
  const dir = mkdtempSync(join(tmpdir(), 'nginx-test-'));
  mkdirSync(join(dir, 'temp'));
  const temp = (name: string): string => `${name}_temp_path ${join(dir, 'temp', name)};`;
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      // As root nginx would run its worker as `nobody`, which cannot write in this temp folder.
      ...(userInfo().uid === 0 ? ['user root;'] : []),
      'daemon off;',
      'worker_processes 1;',
      `pid ${join(dir, 'nginx.pid')};`,
      'error_log stderr warn;',
      'events { worker_connections 256; }',
      'http {',
      '  access_log off;',
      `  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}`,
      httpConf,
      '}',
      '',
    ].join('\n'),
  );
  // -e: the error log before the configuration is read (else /var/log/nginx/error.log).
  const proc = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  proc.stderr.on('data', (b: Buffer) => (errors = (errors + b.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const stop = async (): Promise<void> => {
    if (!gone) {
      // QUIT would wait for open WebSockets to end; TERM closes them.
      proc.kill('SIGTERM');
      await Promise.race([exited, sleep(5000)]);
      if (!gone) proc.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = performance.now() + 15_000;
  while (!(await listening(port))) {
    if (gone || performance.now() > deadline) {
      await stop();
      throw new Error(`nginx did not start listening on ${port}: ${errors.slice(-2000)}`);
    }
    await sleep(50);
  }
  return { errors: () => errors, stop };
}
