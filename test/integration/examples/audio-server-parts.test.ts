// Pure parts of the example audio server: flags, catalog matching, URL policy, body cache.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BodyCache } from '../../../examples/mcp-audio-server/body-cache.ts';
import { findTrack, parseUrlEntry } from '../../../examples/mcp-audio-server/catalog.ts';
import { ConfigError, parseConfig } from '../../../examples/mcp-audio-server/config.ts';
import { checkUrl, normalizeHosts } from '../../../examples/mcp-audio-server/url-policy.ts';

const noFile = (): string => {
  throw new Error('no file expected');
};

describe('example audio server parts', () => {
  test('flags win over env; bad flags are refused with a reason', () => {
    const c = parseConfig(
      ['--http', '--port', '0', '--urls', 'A | http://h/a.mp3'],
      { MCP_AUDIO_PORT: '9', MCP_AUDIO_ALLOW_HOSTS: 'h, *.cdn.test' },
      noFile,
    );
    assert.equal(c.transport, 'http');
    assert.equal(c.port, 0);
    assert.deepEqual(c.urls, ['A | http://h/a.mp3']);
    assert.deepEqual(c.allowHosts, ['h', '*.cdn.test']);
    const fromFile = parseConfig(
      ['--stdio', '--url-file', 'list.txt'],
      {},
      () => '# tracks\nhttp://h/b.mp3\n\nB | http://h/c.mp3\n',
    );
    assert.deepEqual(fromFile.urls, ['http://h/b.mp3', 'B | http://h/c.mp3']);
    assert.throws(() => parseConfig(['--stdio'], {}, noFile), /no catalog/);
    assert.throws(() => parseConfig(['--stdio', '--http', '--urls', 'http://h/a'], {}, noFile), /choose one/);
    assert.throws(
      () => parseConfig(['--urls', 'http://h/a', '--port', '70000'], {}, noFile),
      /port must be an integer/,
    );
    assert.throws(() => parseConfig(['--urls', 'http://h/a', '--bogus', '1'], {}, noFile), ConfigError);
  });

  test('catalog entries and matching', () => {
    const a = parseUrlEntry('http://h/music/Blue%20Moon.mp3');
    assert.deepEqual(a, { title: 'Blue Moon', url: 'http://h/music/Blue%20Moon.mp3', mimeType: 'audio/mpeg' });
    const b = parseUrlEntry('月亮代表我的心 | https://h/x.ogg');
    assert.equal(b?.title, '月亮代表我的心');
    assert.equal(b?.mimeType, 'audio/ogg');
    assert.equal(parseUrlEntry('not a url'), undefined);
    const tracks = [a, b].filter((t) => t !== undefined);
    assert.equal(findTrack(tracks, 'blue moon')?.title, 'Blue Moon');
    assert.equal(findTrack(tracks, '月亮代表我的心')?.title, '月亮代表我的心');
    assert.equal(findTrack(tracks, 'play some music')?.title, 'Blue Moon', 'a generic request plays the first track');
    assert.equal(findTrack(tracks, 'heavy metal'), undefined);
  });

  test('URL policy: exact hosts, host:port, wildcards, schemes, credentials', async () => {
    const policy = {
      allowHosts: normalizeHosts(['Music.Test', '127.0.0.1:8080', '*.cdn.test', 'https://with-scheme.test/path']),
    };
    for (const ok of [
      'http://music.test/a.mp3',
      'https://music.test/a',
      'http://127.0.0.1:8080/a',
      'https://x.cdn.test/a',
      'http://with-scheme.test/a',
    ]) {
      assert.equal((await checkUrl(ok, policy)).ok, true, ok);
    }
    const refused: Array<[string, RegExp]> = [
      ['http://127.0.0.1:8081/a', /not in the allowlist/],
      // An entry without a port allows only the scheme's default port.
      ['https://music.test:8443/a', /not in the allowlist/],
      ['http://cdn.test/a', /not in the allowlist/],
      ['http://evilcdn.test/a', /not in the allowlist/],
      ['http://music.test.evil.com/a', /not in the allowlist/],
      ['gopher://music.test/a', /gopher scheme is refused/],
      ['http://user:pw@music.test/a', /credentials/],
      ['file:///etc/passwd', /no music folder/],
      ['::::', /not a valid URL/],
    ];
    for (const [url, why] of refused) {
      const v = await checkUrl(url, policy);
      assert.ok(!v.ok && why.test(v.reason), `${url}: ${JSON.stringify(v)}`);
    }
  });

  test('body cache is bounded in bytes and evicts the least recently used', () => {
    const cache = new BodyCache(100);
    cache.set('a', Buffer.alloc(40));
    cache.set('b', Buffer.alloc(40));
    assert.ok(cache.get('a'));
    cache.set('c', Buffer.alloc(40));
    assert.equal(cache.get('b'), undefined, 'b was least recently used');
    assert.ok(cache.get('a') && cache.get('c'));
    cache.set('huge', Buffer.alloc(101));
    assert.equal(cache.get('huge'), undefined);
    assert.equal(cache.size, 2);
  });
});
