// The paged stream against an mcp-go-style server (hand-written JSON-RPC over real stdio) that
// reads `arguments { url, start, end }` and fetches the URL with Range from a local HTTP server.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { readResourceStream } from '../../../mcp/resource-stream/stream.ts';
import type { ResourceLinkContent } from '../../../mcp/contract/tool-source.ts';
import type { HttpFileServer } from '../../fixtures/http-file-server.ts';
import { startHttpFileServer } from '../../fixtures/http-file-server.ts';
import type { Connected } from '../../fixtures/sdk-resource-source.ts';
import { connectStdio } from '../../fixtures/sdk-resource-source.ts';
import { decodedPcmBytes, makeSpeechMp3, makeToneMp3, removeDir, tempDir, waitGone } from './media-files.ts';
import { sleep } from '../../helpers/wait.ts';

const PAGE = 100 * 1024;
const StatsSchema = z.object({ reads: z.number(), cancelled: z.number(), inFlight: z.number() });

let dir: string;
let files: HttpFileServer;
let mcp: Connected;
let speech: Buffer;
let tone: Buffer;

async function musicLink(query: string): Promise<ResourceLinkContent> {
  const r = await mcp.client.callTool({ name: 'musicPlayer', arguments: { query } });
  const l = (r.content as ResourceLinkContent[])[0];
  assert.equal(l?.type, 'resource_link');
  return l;
}

function stats(): Promise<z.infer<typeof StatsSchema>> {
  return mcp.client.request({ method: 'fixture/stats', params: {} }, StatsSchema);
}

before(async () => {
  dir = await tempDir('mcp-go-');
  await makeSpeechMp3(join(dir, 'speech.mp3'));
  await makeToneMp3(join(dir, 'tone.mp3'), 60);
  speech = await readFile(join(dir, 'speech.mp3'));
  tone = await readFile(join(dir, 'tone.mp3'));
  files = await startHttpFileServer({ files: { '/speech.mp3': speech, '/tone.mp3': tone } });
  mcp = await connectStdio(process.execPath, [
    '--import',
    'tsx',
    'test/fixtures/mcp-go-style-server.ts',
    '--track',
    `speech|${files.url('/speech.mp3')}`,
    '--track',
    `tone|${files.url('/tone.mp3')}`,
  ]);
});

after(async () => {
  const pid = mcp?.pid;
  await mcp?.close();
  if (pid !== undefined) await waitGone(pid, 'the fixture to exit when the client closes');
  await files?.close();
  await removeDir(dir);
});

describe('paged stream against an mcp-go-style server', () => {
  test('auto style falls back to arguments, bytes are exact, reads equal pages, first page before the last read', async () => {
    const link = await musicLink('tone');
    assert.equal(link.uri, 'resource://read_from_http');
    assert.equal(link.description, files.url('/tone.mp3'));
    const readsBefore = mcp.source.reads.length;
    let readsAtFirst = -1;
    const parts: Uint8Array[] = [];
    for await (const c of readResourceStream(mcp.source, link, { signal: new AbortController().signal })) {
      if (readsAtFirst < 0) readsAtFirst = mcp.source.reads.length - readsBefore;
      parts.push(c);
    }
    assert.ok(Buffer.concat(parts).equals(tone));
    const reads = mcp.source.reads.slice(readsBefore);
    assert.equal(reads.length, Math.floor(tone.length / PAGE) + 1);
    assert.equal(readsAtFirst, 1);
    assert.ok(reads.length > 3, 'the file spans several pages');
    assert.deepEqual(reads[2], { uri: link.uri, arguments: { url: link.description, start: 2 * PAGE, end: 3 * PAGE } });
  });

  test('the streamed speech decodes to the same PCM length as the source (within 5 %)', async () => {
    const link = await musicLink('speech');
    const [streamed, direct] = await Promise.all([
      decodedPcmBytes(
        readResourceStream(mcp.source, link, { pageSize: 32 * 1024, signal: new AbortController().signal }),
      ),
      decodedPcmBytes(speech),
    ]);
    assert.ok(direct > 0);
    assert.ok(Math.abs(streamed - direct) / direct < 0.05, `decoded ${streamed} vs ${direct}`);
  });

  test('a page that times out once is retried after about 1 s and the stream completes', async () => {
    files.options.faults = [{ start: PAGE, times: 1, kind: 'hang' }];
    try {
      const link = await musicLink('tone');
      const cancelledBefore = (await stats()).cancelled;
      const at: number[] = [];
      const t0 = performance.now();
      const parts: Uint8Array[] = [];
      for await (const c of readResourceStream(mcp.source, link, {
        pageTimeoutMs: 800,
        retryDelayMs: 1000,
        signal: new AbortController().signal,
        onPage: () => at.push(performance.now() - t0),
      })) {
        parts.push(c);
      }
      assert.ok(Buffer.concat(parts).equals(tone));
      // Not before the 800 ms timeout and the 1000 ms pause (the exact schedule is checked on
      // mocked time in the resource-stream unit test; here a loaded machine may only add to it).
      const gap = (at[1] ?? 0) - (at[0] ?? 0);
      assert.ok(gap >= 1750, `page 1 took ${gap} ms (800 ms timeout + 1000 ms pause)`);
      assert.equal((await stats()).cancelled - cancelledBefore, 1, 'the timed-out read was cancelled on the server');
    } finally {
      files.options.faults = [];
    }
  });

  test('a page the server fails with a JSON-RPC error ends the stream at once with that error (no retry)', async () => {
    files.options.faults = [{ start: 2 * PAGE, times: Infinity, kind: 'error' }];
    try {
      const link = await musicLink('tone');
      const readsBefore = mcp.source.reads.length;
      await assert.rejects(
        (async () => {
          for await (const _c of readResourceStream(mcp.source, link, {
            retryDelayMs: 50,
            maxTries: 3,
            signal: new AbortController().signal,
          })) {
            // consume
          }
        })(),
        (err: unknown) =>
          err instanceof VoiceError &&
          err.code === ErrorCode.ToolFailed &&
          /page 2 .* after 1 try: .*HTTP 500/.test(err.message),
      );
      assert.equal(mcp.source.reads.length - readsBefore, 2 + 1);
    } finally {
      files.options.faults = [];
    }
  });

  test('abort mid-stream: the iterator stops at once and the server sees no further reads', async () => {
    files.options.delayMs = 150;
    try {
      const link = await musicLink('tone');
      const ac = new AbortController();
      const readsBefore = (await stats()).reads;
      let chunks = 0;
      await assert.rejects(
        (async () => {
          for await (const _c of readResourceStream(mcp.source, link, { signal: ac.signal })) {
            if (++chunks === 2) setTimeout(() => ac.abort(), 30);
          }
        })(),
        (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted,
      );
      // That the abort alone settles an in-flight read is checked on mocked time in the
      // resource-stream unit test; here: the real server sees the reads stop.
      const atAbort = await stats();
      assert.ok(
        atAbort.reads - readsBefore <= 3,
        `reads ${atAbort.reads - readsBefore}: two pages and at most one in flight`,
      );
      await sleep(400);
      const later = await stats();
      assert.equal(later.reads, atAbort.reads, 'no read after the abort');
      assert.equal(later.inFlight, 0, 'the in-flight read was cancelled');
    } finally {
      files.options.delayMs = 0;
    }
  });
});
