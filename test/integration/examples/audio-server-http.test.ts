// The example MCP audio server over real streamable HTTP (stateless mode, SDK client).
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readResourceStream } from '../../../mcp/resource-stream/stream.ts';
import type { ResourceLinkContent } from '../../../mcp/contract/tool-source.ts';
import type { HttpFileServer } from '../../fixtures/http-file-server.ts';
import { startHttpFileServer } from '../../fixtures/http-file-server.ts';
import type { Connected } from '../../fixtures/sdk-resource-source.ts';
import { connectHttp } from '../../fixtures/sdk-resource-source.ts';
import { makeToneMp3, removeDir, tempDir, waitGone } from './media-files.ts';

let dir: string;
let files: HttpFileServer;
let child: ChildProcess;
let mcpUrl: string;
let mcp: Connected;
let tone: Buffer;

/** Starts the example in HTTP mode on a free port and waits for its "listening" log line. */
async function startExample(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', 'examples/mcp-audio-server/main.ts', '--http', '--port', '0', ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`no listening line: ${buf}`)), 20_000);
    proc.stderr?.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"msg":"listening","url":"([^"]+)"/.exec(buf);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}: ${buf}`));
    });
  });
  proc.stderr?.resume();
  return { child: proc, url };
}

function rawPost(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  });
}

before(async () => {
  dir = await tempDir('mcp-audio-http-');
  await makeToneMp3(join(dir, 'tone.mp3'), 30);
  tone = await readFile(join(dir, 'tone.mp3'));
  files = await startHttpFileServer({ files: { '/tone.mp3': tone } });
  ({ child, url: mcpUrl } = await startExample(['--urls', files.url('/tone.mp3')]));
  mcp = await connectHttp(mcpUrl);
});

after(async () => {
  await mcp?.close();
  if (child?.pid !== undefined) {
    child.kill('SIGTERM');
    await waitGone(child.pid, 'the HTTP server to exit on SIGTERM');
  }
  await files?.close();
  await removeDir(dir);
});

describe('example audio server over streamable HTTP', () => {
  test('musicPlayer + template stream returns the exact bytes, one read per page', async () => {
    const r = await mcp.client.callTool({ name: 'musicPlayer', arguments: { query: 'play some music' } });
    const link = (r.content as ResourceLinkContent[])[0];
    assert.equal(link?.type, 'resource_link');
    assert.equal(link?.description, files.url('/tone.mp3'));
    const readsBefore = mcp.source.reads.length;
    const parts: Uint8Array[] = [];
    for await (const c of readResourceStream(mcp.source, link as ResourceLinkContent, {
      signal: new AbortController().signal,
    }))
      parts.push(c);
    assert.ok(Buffer.concat(parts).equals(tone));
    assert.equal(mcp.source.reads.length - readsBefore, Math.floor(tone.length / (100 * 1024)) + 1);
  });

  test('the mcp-go-style read (the base URI + arguments { url, start, end }) returns the exact bytes over HTTP too', async () => {
    const r = await mcp.client.callTool({ name: 'musicPlayer', arguments: { query: 'play some music' } });
    const link = (r.content as ResourceLinkContent[])[0] as ResourceLinkContent;
    const readsBefore = mcp.source.reads.length;
    const parts: Uint8Array[] = [];
    for await (const c of readResourceStream(mcp.source, link, {
      style: 'arguments',
      signal: new AbortController().signal,
    }))
      parts.push(c);
    assert.ok(Buffer.concat(parts).equals(tone));
    const reads = mcp.source.reads.slice(readsBefore);
    assert.ok(
      reads.every((x) => x.uri === 'resource://read_from_http' && x.arguments !== undefined),
      'every read was mcp-go-style',
    );
    assert.equal(reads.length, Math.floor(tone.length / (100 * 1024)) + 1);
  });

  test('a URL outside the catalog is refused with the reason', async () => {
    const uri = `resource://read_from_http?url=${encodeURIComponent('http://example.com/a.mp3')}&start=0&end=10`;
    await assert.rejects(mcp.source.readResource(uri), /not a track of this server's catalog/);
  });

  test('set_volume validation', async () => {
    const bad = await mcp.client.callTool({ name: 'set_volume', arguments: { volume: 0 } });
    assert.equal(bad.isError, true);
    const ok = await mcp.client.callTool({ name: 'set_volume', arguments: { volume: 100 } });
    assert.notEqual(ok.isError, true);
  });

  test('DNS-rebinding protection: a foreign Host or Origin is refused, loopback is served', async () => {
    assert.equal(await rawPost(mcpUrl, { host: 'evil.example' }), 403);
    assert.equal(await rawPost(mcpUrl, { origin: 'http://evil.example' }), 403);
    assert.notEqual(await rawPost(mcpUrl, {}), 403);
  });
});
