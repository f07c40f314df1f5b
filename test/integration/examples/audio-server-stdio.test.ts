// The example MCP audio server over real stdio (SDK client) against a local HTTP file server:
// tools, Range 206 / ignored Range 200 / 416, the allowlist, and the paged stream end to end.
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { readResourceStream } from '../../../mcp/resource-stream/stream.ts';
import type { ResourceLinkContent } from '../../../mcp/contract/tool-source.ts';
import type { HttpFileServer } from '../../fixtures/http-file-server.ts';
import { startHttpFileServer } from '../../fixtures/http-file-server.ts';
import type { Connected } from '../../fixtures/sdk-resource-source.ts';
import { connectStdio } from '../../fixtures/sdk-resource-source.ts';
import { decodedPcmBytes, makeSpeechMp3, makeToneMp3, removeDir, tempDir, waitGone } from './media-files.ts';
import { sleep } from '../../helpers/wait.ts';

const MAIN = 'examples/mcp-audio-server/main.ts';
const PAGE = 64 * 1024;

let dir: string;
let musicDir: string;
let files: HttpFileServer;
let mcp: Connected;
let speech: Buffer;
let tone: Buffer;

function readUri(url: string, start: number, end: number): string {
  return `resource://read_from_http?url=${encodeURIComponent(url)}&start=${start}&end=${end}`;
}

async function link(query: string): Promise<ResourceLinkContent> {
  const r = await mcp.client.callTool({ name: 'musicPlayer', arguments: { query } });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const block = (r.content as ResourceLinkContent[])[0];
  assert.equal(block?.type, 'resource_link');
  return block;
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of it) parts.push(c);
  return Buffer.concat(parts);
}

before(async () => {
  dir = await tempDir('mcp-audio-stdio-');
  musicDir = join(dir, 'music');
  await (await import('node:fs/promises')).mkdir(musicDir);
  await makeSpeechMp3(join(dir, 'speech.mp3'));
  await makeToneMp3(join(dir, 'tone.mp3'), 40);
  speech = await readFile(join(dir, 'speech.mp3'));
  tone = await readFile(join(dir, 'tone.mp3'));
  await copyFile(join(dir, 'speech.mp3'), join(musicDir, 'Local Speech.mp3'));
  // Not a track: a file in the music folder that the server must not serve.
  await (await import('node:fs/promises')).writeFile(join(musicDir, 'notes.txt'), 'private notes');
  files = await startHttpFileServer({
    files: { '/tone.mp3': tone, '/speech.mp3': speech, '/plain/tone.mp3': tone },
    redirects: { '/elsewhere.mp3': 'http://localhost:1/tone.mp3', '/same-host.mp3': '/tone.mp3' },
  });
  mcp = await connectStdio(process.execPath, [
    '--import',
    'tsx',
    MAIN,
    '--stdio',
    '--music-dir',
    musicDir,
    '--urls',
    // Redirecting entries are catalog tracks too: the redirect check is what must refuse them.
    `Remote Tone | ${files.url('/tone.mp3')},Remote Speech | ${files.url('/speech.mp3')},Plain Tone | ${files.url('/plain/tone.mp3')},Moved Away | ${files.url('/elsewhere.mp3')},Moved Here | ${files.url('/same-host.mp3')}`,
    '--allow-hosts',
    files.host,
  ]);
});

after(async () => {
  const pid = mcp?.pid;
  await mcp?.close();
  if (pid !== undefined) await waitGone(pid, 'the server process to exit when the client closes');
  await files?.close();
  await removeDir(dir);
});

describe('example audio server over stdio', () => {
  test('lists musicPlayer, set_volume and the paged template', async () => {
    const tools = (await mcp.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(tools, ['musicPlayer', 'set_volume']);
    const templates = await mcp.source.listResourceTemplates();
    assert.deepEqual(
      templates.map((t) => t.uriTemplate),
      ['resource://read_from_http{?url,start,end}'],
    );
  });

  test('musicPlayer returns a resource_link whose description is the track URL', async () => {
    const l = await link('remote tone');
    assert.equal(l.uri, 'resource://read_from_http');
    assert.equal(l.description, files.url('/tone.mp3'));
    assert.equal(l.mimeType, 'audio/mpeg');
    assert.equal(l.name, 'Remote Tone');
    const local = await link('local speech');
    assert.match(local.description ?? '', /^file:\/\/.*Local%20Speech\.mp3$/);
    const none = await mcp.client.callTool({ name: 'musicPlayer', arguments: { query: 'zzzz nothing' } });
    assert.equal(none.isError, true);
    assert.match(JSON.stringify(none.content), /No track matches/);
  });

  test('set_volume accepts 1..100 integers and rejects the rest', async () => {
    const ok = await mcp.client.callTool({ name: 'set_volume', arguments: { volume: 35 } });
    assert.notEqual(ok.isError, true);
    assert.match(JSON.stringify(ok.content), /Volume set to 35/);
    for (const volume of [0, 101, 50.5, 'loud']) {
      const bad = await mcp.client.callTool({ name: 'set_volume', arguments: { volume } });
      assert.equal(bad.isError, true, `volume ${String(volume)} must be refused`);
    }
  });

  test('Range 206: the stream over the template returns the exact bytes, one read and one upstream request per page', async () => {
    const l = await link('remote tone');
    const before = files.requests.length;
    const readsBefore = mcp.source.reads.length;
    let readsAtFirstChunk = -1;
    const parts: Uint8Array[] = [];
    for await (const chunk of readResourceStream(mcp.source, l, {
      pageSize: PAGE,
      signal: new AbortController().signal,
    })) {
      if (readsAtFirstChunk < 0) readsAtFirstChunk = mcp.source.reads.length - readsBefore;
      parts.push(chunk);
    }
    const got = Buffer.concat(parts);
    assert.ok(got.equals(tone), `got ${got.length} bytes, want ${tone.length}`);
    const pages = Math.floor(tone.length / PAGE) + 1;
    assert.equal(mcp.source.reads.length - readsBefore, pages);
    assert.equal(readsAtFirstChunk, 1, 'the first page is yielded before the later pages are read');
    const upstream = files.requests.slice(before);
    assert.equal(upstream.length, pages);
    assert.ok(upstream.every((r) => r.status === 206 && r.range?.startsWith('bytes=')));
    assert.equal(upstream[1]?.range, `bytes=${PAGE}-${2 * PAGE - 1}`);
    for (const r of mcp.source.reads.slice(readsBefore)) assert.equal(r.arguments, undefined);
  });

  test('a local-folder track streams through file:// and decodes to the same PCM length', async () => {
    const l = await link('local speech');
    const got = await collect(readResourceStream(mcp.source, l, { signal: new AbortController().signal }));
    assert.ok(got.equals(speech));
    const [streamed, direct] = await Promise.all([
      decodedPcmBytes(readResourceStream(mcp.source, l, { signal: new AbortController().signal })),
      decodedPcmBytes(speech),
    ]);
    assert.ok(direct > 16000 * 2 * 10, 'the speech lasts more than 10 s');
    assert.ok(Math.abs(streamed - direct) / direct < 0.05, `decoded ${streamed} vs ${direct}`);
  });

  test('416 and start past the end answer a [DONE] blob', async () => {
    const before = files.requests.length;
    const contents = await mcp.source.readResource(
      readUri(files.url('/speech.mp3'), speech.length + 10, speech.length + 20),
    );
    assert.equal(Buffer.from(contents[0]?.blob ?? '', 'base64').toString(), '[DONE]');
    assert.equal(files.requests[before]?.status, 416);
  });

  test('a host that ignores Range (200): pages are sliced and the body is downloaded once', async () => {
    files.options.ignoreRange = true;
    try {
      const url = files.url('/plain/tone.mp3');
      const before = files.requests.length;
      const l: ResourceLinkContent = { type: 'resource_link', uri: 'resource://read_from_http', description: url };
      const got = await collect(
        readResourceStream(mcp.source, l, { pageSize: PAGE, signal: new AbortController().signal }),
      );
      assert.ok(got.equals(tone));
      const upstream = files.requests.slice(before);
      assert.equal(upstream.length, 1, 'later pages come from the cached body');
      assert.equal(upstream[0]?.status, 200);
    } finally {
      files.options.ignoreRange = false;
    }
  });

  test('only catalog tracks are read: other URLs, other files of the folder and off-list redirects are refused, and it says why', async () => {
    const notInCatalog = /not a track of this server's catalog/;
    const cases: Array<[string, RegExp]> = [
      [`http://localhost:${files.port}/tone.mp3`, notInCatalog],
      ['http://169.254.169.254/latest/meta-data', notInCatalog],
      ['ftp://127.0.0.1/tone.mp3', notInCatalog],
      ['file:///etc/passwd', notInCatalog],
      [pathToFileURL(join(musicDir, 'notes.txt')).href, notInCatalog],
      [files.url('/elsewhere.mp3'), /redirect refused: host localhost:1 is not in the allowlist/],
    ];
    for (const [url, why] of cases) {
      await assert.rejects(mcp.source.readResource(readUri(url, 0, 100)), (err: Error) => why.test(err.message), url);
    }
    const same = await mcp.source.readResource(readUri(files.url('/same-host.mp3'), 0, 100));
    assert.ok(
      Buffer.from(same[0]?.blob ?? '', 'base64').equals(tone.subarray(0, 100)),
      'a redirect on an allowed host is followed',
    );
  });

  test('bad page bounds are refused', async () => {
    await assert.rejects(
      mcp.source.readResource(readUri(files.url('/tone.mp3'), 100, 100)),
      /must be greater than start/,
    );
    await assert.rejects(
      mcp.source.readResource(readUri(files.url('/tone.mp3'), 0, 10 * 1024 * 1024)),
      /larger than the \d+-byte limit/,
    );
    await assert.rejects(mcp.source.readResource(readUri(files.url('/tone.mp3'), -5, 100)), /non-negative integer/);
  });

  test('a refused read through the stream ends with a clear VoiceError', async () => {
    const l: ResourceLinkContent = {
      type: 'resource_link',
      uri: 'resource://read_from_http',
      description: 'http://evil.test/x.mp3',
    };
    await assert.rejects(
      collect(
        readResourceStream(mcp.source, l, { retryDelayMs: 10, maxTries: 2, signal: new AbortController().signal }),
      ),
      (err: unknown) =>
        err instanceof VoiceError &&
        err.code === ErrorCode.ToolFailed &&
        /not a track of this server's catalog/.test(err.message),
    );
  });

  test('the mcp-go-style read (the base URI + arguments { url, start, end }) returns the exact bytes, as the template does', async () => {
    const l = await link('remote tone');
    assert.equal(l.uri, 'resource://read_from_http');
    const readsBefore = mcp.source.reads.length;
    const got = await collect(
      readResourceStream(mcp.source, l, { style: 'arguments', pageSize: PAGE, signal: new AbortController().signal }),
    );
    assert.ok(got.equals(tone), `got ${got.length} of ${tone.length} bytes`);
    const reads = mcp.source.reads.slice(readsBefore);
    assert.ok(
      reads.every((r) => r.uri === 'resource://read_from_http' && r.arguments !== undefined),
      'every read was mcp-go-style',
    );
    assert.equal(reads.length, Math.floor(tone.length / PAGE) + 1);
  });

  test('abort mid-stream stops the reads', async () => {
    files.options.delayMs = 100;
    try {
      const l = await link('remote tone');
      const ac = new AbortController();
      const readsBefore = mcp.source.reads.length;
      let chunks = 0;
      await assert.rejects(
        (async () => {
          for await (const _chunk of readResourceStream(mcp.source, l, { pageSize: 16 * 1024, signal: ac.signal })) {
            if (++chunks === 2) setTimeout(() => ac.abort(), 20);
          }
        })(),
        (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted,
      );
      const readsAtAbort = mcp.source.reads.length - readsBefore;
      assert.ok(readsAtAbort <= 3, `reads ${readsAtAbort}`);
      await sleep(300);
      assert.equal(mcp.source.reads.length - readsBefore, readsAtAbort, 'no read after the abort');
    } finally {
      files.options.delayMs = 0;
    }
  });
});
