/**
 * play_music checks its allowlist against what is really fetched, not only the host's name: the
 * address a listed name resolves to (loopback and private ones are refused), the port, and every
 * redirect; the connection then goes to the address that was checked, so a second lookup cannot
 * point elsewhere. Real HTTP servers on loopback; a name is resolved by an injected resolver where
 * the test needs to say what it resolves to.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { playMusicTool, type PlayMusicToolOptions } from '../../../mcp/local-tools/play-music.ts';
import { isPublicAddress } from '../../../mcp/local-tools/address-guard.ts';
import { startHttpFileServer, type HttpFileServer } from '../../fixtures/http-file-server.ts';

const SONG = Buffer.alloc(20_000, 7);

/** Runs the tool; resolves with the bytes it streamed, or the reason it refused (before or while opening). */
async function play(opts: PlayMusicToolOptions, url: string): Promise<{ bytes: number } | { refused: string }> {
  const result = await playMusicTool(opts).handler({ url }, { signal: new AbortController().signal } as never);
  if (result.isError || !result.media)
    return { refused: result.content.map((c) => ('text' in c ? c.text : '')).join(' ') };
  let bytes = 0;
  try {
    for await (const chunk of result.media.open(AbortSignal.timeout(5000))) bytes += chunk.byteLength;
  } catch (err) {
    return { refused: err instanceof Error ? err.message : String(err) };
  }
  return { bytes };
}

const resolvesTo =
  (...ips: string[]) =>
  async (): Promise<LookupAddress[]> =>
    ips.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('play_music: no SSRF through allowed host names', () => {
  let files: HttpFileServer;
  let other: HttpFileServer;
  before(async () => {
    files = await startHttpFileServer({ files: { '/song.mp3': SONG } });
    other = await startHttpFileServer({ files: { '/secret.mp3': SONG } });
    files.options.redirects = { '/hop.mp3': `${other.origin}/secret.mp3` };
  });
  after(async () => {
    await files?.close();
    await other?.close();
  });

  test('an allowed name that resolves to loopback is refused, and nothing is fetched', async () => {
    const before = files.requests.length;
    const r = await play(
      { folder: '', allowedHosts: [`music.example:${files.port}`], resolve: resolvesTo('127.0.0.1') },
      `http://music.example:${files.port}/song.mp3`,
    );
    assert.ok('refused' in r && /127\.0\.0\.1.*not a public address/.test(r.refused), JSON.stringify(r));
    assert.equal(files.requests.length, before, 'no request reached the loopback server');
  });

  test('localhost by name and by literal is refused unless private addresses are allowed', async () => {
    for (const host of ['localhost', '127.0.0.1']) {
      const denied = await play(
        { folder: '', allowedHosts: [`${host}:${files.port}`] },
        `http://${host}:${files.port}/song.mp3`,
      );
      assert.ok('refused' in denied, `${host}: ${JSON.stringify(denied)}`);
      const allowed = await play(
        { folder: '', allowedHosts: [`${host}:${files.port}`], allowPrivateAddresses: true },
        `http://${host}:${files.port}/song.mp3`,
      );
      assert.deepEqual(allowed, { bytes: SONG.length }, host);
    }
  });

  test('an answer mixing a public and a private address is refused (no choosing the public one to pass the check)', async () => {
    const r = await play(
      {
        folder: '',
        allowedHosts: [`music.example:${files.port}`],
        resolve: resolvesTo('93.184.216.34', '::ffff:127.0.0.1'),
      },
      `http://music.example:${files.port}/song.mp3`,
    );
    assert.ok('refused' in r && /::ffff:127\.0\.0\.1/.test(r.refused), JSON.stringify(r));
  });

  test('a resolver that rebinds to loopback on a later lookup never gets a connection there', async () => {
    let calls = 0;
    const rebinding = async (): Promise<LookupAddress[]> =>
      calls++ % 2 === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    const before = files.requests.length;
    for (let i = 0; i < 4; i++)
      await play(
        { folder: '', allowedHosts: [`music.example:${files.port}`], resolve: rebinding },
        `http://music.example:${files.port}/song.mp3`,
      );
    assert.ok(calls >= 4, 'every attempt resolved the name itself');
    assert.equal(files.requests.length, before, 'no connection went to the loopback address');
  });

  test('only the default port unless the entry names one', async () => {
    const r = await play(
      { folder: '', allowedHosts: ['127.0.0.1'], allowPrivateAddresses: true },
      `http://127.0.0.1:${files.port}/song.mp3`,
    );
    assert.ok('refused' in r && r.refused.includes(`port ${files.port}`), JSON.stringify(r));
  });

  test('a redirect to another port of the same host is refused', async () => {
    const before = other.requests.length;
    const r = await play(
      { folder: '', allowedHosts: [`127.0.0.1:${files.port}`], allowPrivateAddresses: true },
      `http://127.0.0.1:${files.port}/hop.mp3`,
    );
    assert.ok('refused' in r && /redirect refused/.test(r.refused), JSON.stringify(r));
    assert.equal(other.requests.length, before, 'the redirect target was not fetched');
  });

  test('public and non-public addresses in every notation', () => {
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(isPublicAddress(ip), true, ip);
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::10.0.0.1',
      '64:ff9b::a00:1',
      '::127.0.0.1',
      'not-an-ip',
    ]) {
      assert.equal(isPublicAddress(ip), false, ip);
    }
  });
});
