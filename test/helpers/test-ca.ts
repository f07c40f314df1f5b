/**
 * A throw-away certificate authority and a server certificate it signed, made with openssl at test
 * time (nothing secret is committed): for stand-ins that must speak TLS because the client under
 * test dials `wss://`/`https://` whatever it is given. The client trusts `caFile` (or `ca`) and
 * nothing else, as a deployment with a private CA would; the server certificate names 127.0.0.1,
 * ::1 and localhost. `close()` removes the directory.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCa {
  /** PEM of the CA certificate, and its file. */
  readonly ca: Buffer;
  readonly caFile: string;
  /** PEM of the server certificate and its key (for `https`/`tls` servers). */
  readonly cert: Buffer;
  readonly key: Buffer;
  close(): void;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function makeTestCa(): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'test-ca-'));
  const file = (name: string): string => join(dir, name);
  const openssl = (args: string[]): void => {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  };
  try {
    openssl([
      'req',
      '-x509',
      ...EC_KEY,
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=xiaozhi test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    openssl([
      'req',
      '-x509',
      ...EC_KEY,
      '-keyout',
      file('server.key'),
      '-out',
      file('server.pem'),
      '-days',
      '1',
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost',
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-addext',
      'extendedKeyUsage=serverAuth',
    ]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    ca: readFileSync(file('ca.pem')),
    caFile: file('ca.pem'),
    cert: readFileSync(file('server.pem')),
    key: readFileSync(file('server.key')),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
