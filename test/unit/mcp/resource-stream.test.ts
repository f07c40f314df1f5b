import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { DEFAULT_PAGE_SIZE, readResourceStream } from '../../../mcp/resource-stream/stream.ts';
import type { ResourceLinkContent } from '../../../mcp/contract/tool-source.ts';
import type { PagedServer, PagedServerOptions } from '../../fixtures/mcp-paged-server.ts';
import { advanceMocked, mockTime, runMocked } from '../../helpers/mock-timers.ts';
import { waitFor, within } from '../../helpers/wait.ts';
import { PAGED_TEMPLATE, startPagedServer } from '../../fixtures/mcp-paged-server.ts';

const URL_A = 'http://music.test/a.mp3';
const LINK: ResourceLinkContent = {
  type: 'resource_link',
  uri: 'resource://read_from_http',
  name: 'a',
  description: URL_A,
  mimeType: 'audio/mpeg',
};
const PAGE = 4096;

const servers: PagedServer[] = [];
after(async () => {
  for (const s of servers) await s.close();
});

async function serve(opts: PagedServerOptions): Promise<PagedServer> {
  const s = await startPagedServer(opts);
  servers.push(s);
  return s;
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of it) parts.push(chunk);
  return Buffer.concat(parts);
}

/** Reads a stream of `size` bytes in pages of `page` needs: one extra read when size is a multiple of page. */
function expectedReads(size: number, page: number): number {
  return Math.floor(size / page) + 1;
}

describe('readResourceStream: page styles', () => {
  test('arguments style sends uri + arguments { url: description, start, end } and returns the exact bytes', async () => {
    const data = randomBytes(PAGE * 5 + 123);
    const s = await serve({ style: 'mcp-go', files: { [URL_A]: data } });
    const pages: number[] = [];
    const got = await collect(
      readResourceStream(s.source, LINK, {
        pageSize: PAGE,
        style: 'arguments',
        signal: new AbortController().signal,
        onPage: (p) => pages.push(p.bytes),
      }),
    );
    assert.ok(got.equals(data));
    assert.equal(s.source.reads.length, 6);
    assert.deepEqual(pages, [PAGE, PAGE, PAGE, PAGE, PAGE, 123]);
    assert.deepEqual(s.source.reads[1], { uri: LINK.uri, arguments: { url: URL_A, start: PAGE, end: 2 * PAGE } });
  });

  test('a length that is a multiple of the page size ends on the [DONE] page, which is not yielded', async () => {
    const data = randomBytes(PAGE * 3);
    const s = await serve({ style: 'mcp-go', files: { [URL_A]: data } });
    const got = await collect(
      readResourceStream(s.source, LINK, { pageSize: PAGE, style: 'arguments', signal: new AbortController().signal }),
    );
    assert.ok(got.equals(data));
    assert.equal(s.source.reads.length, expectedReads(data.length, PAGE));
  });

  test('template style reads the expanded URI only, no arguments', async () => {
    const data = randomBytes(PAGE * 2 + 7);
    const s = await serve({ style: 'template', files: { [URL_A]: data } });
    const got = await collect(
      readResourceStream(s.source, LINK, {
        pageSize: PAGE,
        style: 'template',
        templates: [{ uriTemplate: PAGED_TEMPLATE }],
        signal: new AbortController().signal,
      }),
    );
    assert.ok(got.equals(data));
    assert.equal(s.source.reads.length, 3);
    for (const r of s.source.reads) assert.equal(r.arguments, undefined);
    assert.equal(
      s.source.reads[1]?.uri,
      `resource://read_from_http?url=${encodeURIComponent(URL_A)}&start=${PAGE}&end=${2 * PAGE}`,
    );
  });

  test('auto style lists the templates itself and picks the paged one', async () => {
    const data = randomBytes(PAGE + 1);
    const s = await serve({ style: 'template', files: { [URL_A]: data } });
    const got = await collect(
      readResourceStream(s.source, LINK, { pageSize: PAGE, signal: new AbortController().signal }),
    );
    assert.ok(got.equals(data));
    assert.ok(s.source.reads.every((r) => r.uri.startsWith('resource://read_from_http?url=')));
  });

  test('auto style falls back to arguments when the server has no templates (mcp-go)', async () => {
    const data = randomBytes(PAGE + 1);
    const s = await serve({ style: 'mcp-go', files: { [URL_A]: data } });
    const got = await collect(
      readResourceStream(s.source, LINK, { pageSize: PAGE, style: 'auto', signal: new AbortController().signal }),
    );
    assert.ok(got.equals(data));
    assert.deepEqual(s.source.reads[0]?.arguments, { url: URL_A, start: 0, end: PAGE });
  });

  test('template style with no fitting template fails with a clear BadInput error', async () => {
    const s = await serve({ style: 'template', files: {} });
    await assert.rejects(
      collect(
        readResourceStream(s.source, LINK, {
          style: 'template',
          templates: [{ uriTemplate: 'x://a/{id}' }],
          signal: new AbortController().signal,
        }),
      ),
      (err: unknown) =>
        err instanceof VoiceError && err.code === ErrorCode.BadInput && /no resource template/.test(err.message),
    );
    assert.equal(s.source.reads.length, 0);
  });

  test('the default page size is 100 KB', async () => {
    const data = randomBytes(DEFAULT_PAGE_SIZE + 10);
    const s = await serve({ style: 'template', files: { [URL_A]: data } });
    const pages: number[] = [];
    const got = await collect(
      readResourceStream(s.source, LINK, { signal: new AbortController().signal, onPage: (p) => pages.push(p.bytes) }),
    );
    assert.ok(got.equals(data));
    assert.deepEqual(pages, [DEFAULT_PAGE_SIZE, 10]);
  });

  test('text entries are not audio: a first page of text fails the stream with that text, nothing is yielded', async () => {
    const s = await serve({
      style: 'template',
      asText: true,
      files: { [URL_A]: Buffer.from('file not found on the NAS '.repeat(3)) },
    });
    const chunks: number[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of readResourceStream(s.source, LINK, {
          pageSize: PAGE,
          signal: new AbortController().signal,
        }))
          chunks.push(c.length);
      })(),
      (err: unknown) =>
        err instanceof VoiceError &&
        err.code === ErrorCode.ToolFailed &&
        /answered text, not audio: file not found on the NAS/.test(err.message),
    );
    assert.deepEqual(chunks, []);
    assert.equal(s.source.reads.length, 1);
  });

  test('a server that ignores start/end (whole resource to every read) is played once, then the stream ends', async () => {
    const data = randomBytes(PAGE * 3 + 77);
    const s = await serve({ style: 'template', ignoreRange: true, files: { [URL_A]: data } });
    const got = await collect(
      readResourceStream(s.source, LINK, { pageSize: PAGE, signal: new AbortController().signal }),
    );
    assert.ok(got.equals(data), `got ${got.length} bytes, the resource has ${data.length}`);
    assert.equal(s.source.reads.length, 1);
  });

  test('an empty result (contents: []) ends the stream', async () => {
    const data = randomBytes(PAGE * 2);
    const s = await serve({ style: 'template', emptyAtEnd: true, files: { [URL_A]: data } });
    const got = await collect(
      readResourceStream(s.source, LINK, { pageSize: PAGE, signal: new AbortController().signal }),
    );
    assert.ok(got.equals(data));
    assert.equal(s.source.reads.length, 3);
  });

  test('a link whose URI already carries ?url= is paged through the template with that url', async () => {
    const data = randomBytes(PAGE + 9);
    const s = await serve({ style: 'template', files: { [URL_A]: data } });
    const link: ResourceLinkContent = {
      type: 'resource_link',
      uri: `resource://read_from_http?url=${encodeURIComponent(URL_A)}`,
    };
    const templates = [{ uriTemplate: 'other://paged{?url,start,end}' }, { uriTemplate: PAGED_TEMPLATE }];
    const got = await collect(
      readResourceStream(s.source, link, { pageSize: PAGE, templates, signal: new AbortController().signal }),
    );
    assert.ok(got.equals(data));
    assert.ok(
      s.source.reads.every((r) => r.uri.startsWith('resource://read_from_http?url=')),
      'the template matching the link is preferred',
    );
  });
});

describe('readResourceStream: backpressure, retries, abort', () => {
  test('pull-based: no page is read before the consumer asks for it', async () => {
    const data = randomBytes(PAGE * 4);
    const s = await serve({ style: 'mcp-go', files: { [URL_A]: data } });
    const it = readResourceStream(s.source, LINK, {
      pageSize: PAGE,
      style: 'arguments',
      signal: new AbortController().signal,
    })[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.done, false);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(s.source.reads.length, 1, 'the second page must wait for the consumer');
    await it.next();
    assert.equal(s.source.reads.length, 2);
    await it.return?.();
    assert.equal(s.source.reads.length, 2, 'closing the iterator reads nothing more');
  });

  test('a page that times out once is retried after retryDelayMs and the stream completes', async (t) => {
    const data = randomBytes(PAGE * 3 + 5);
    const s = await serve({
      style: 'template',
      files: { [URL_A]: data },
      faults: [{ start: PAGE, times: 1, kind: 'hang' }],
    });
    const timers = mockTime(t);
    const times: number[] = [];
    const got = await runMocked(
      timers,
      collect(
        readResourceStream(s.source, LINK, {
          pageSize: PAGE,
          pageTimeoutMs: 300,
          retryDelayMs: 1000,
          signal: new AbortController().signal,
          onPage: () => times.push(Date.now()),
        }),
      ),
      'the stream',
    );
    assert.ok(got.equals(data));
    assert.equal(s.source.reads.length, 5, '4 pages + 1 retry');
    // The second page: its read times out after 300 ms, the retry waits 1000 ms, the retry answers at once.
    assert.deepEqual(times, [0, 1300, 1300, 1300]);
    assert.equal(s.abortedReads(), 1, 'the timed-out read was cancelled on the server');
  });

  test('a JSON-RPC error fails the stream at once, without retries', async () => {
    const data = randomBytes(PAGE * 3);
    const s = await serve({
      style: 'mcp-go',
      files: { [URL_A]: data },
      faults: [{ start: 2 * PAGE, times: Infinity, kind: 'error' }],
    });
    const chunks: number[] = [];
    await assert.rejects(
      (async () => {
        for await (const c of readResourceStream(s.source, LINK, {
          pageSize: PAGE,
          retryDelayMs: 1000,
          maxTries: 3,
          signal: new AbortController().signal,
        }))
          chunks.push(c.length);
      })(),
      (err: unknown) =>
        err instanceof VoiceError &&
        err.code === ErrorCode.ToolFailed &&
        /page 2 \(byte 8192\) after 1 try/.test(err.message) &&
        /injected page failure/.test(err.message),
    );
    assert.deepEqual(chunks, [PAGE, PAGE]);
    assert.equal(s.source.reads.length, 2 + 1, 'the failing page was read once');
  });

  test('a page that always times out gives a Timeout VoiceError', async () => {
    const s = await serve({
      style: 'template',
      files: { [URL_A]: randomBytes(10) },
      faults: [{ start: 0, times: Infinity, kind: 'hang' }],
    });
    await assert.rejects(
      collect(
        readResourceStream(s.source, LINK, {
          pageTimeoutMs: 100,
          retryDelayMs: 10,
          maxTries: 2,
          signal: new AbortController().signal,
        }),
      ),
      (err: unknown) =>
        err instanceof VoiceError && err.code === ErrorCode.Timeout && /timed out after 100 ms/.test(err.message),
    );
    assert.equal(s.source.reads.length, 2);
  });

  test('abort during a hanging read rejects at once, cancels the read and reads nothing more', async (t) => {
    const data = randomBytes(PAGE * 4);
    const s = await serve({
      style: 'mcp-go',
      files: { [URL_A]: data },
      faults: [{ start: PAGE, times: Infinity, kind: 'hang' }],
    });
    const timers = mockTime(t);
    const ac = new AbortController();
    const it = readResourceStream(s.source, LINK, { pageSize: PAGE, style: 'arguments', signal: ac.signal })[
      Symbol.asyncIterator
    ]();
    await it.next();
    const pending = it.next();
    await waitFor(() => s.source.reads.length === 2, { what: 'the second read' });
    ac.abort();
    // No mocked time passes: the abort alone must settle the read, not a timer.
    await within(
      assert.rejects(pending, (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted),
      5000,
      'the abort to settle the pending read',
    );
    await advanceMocked(timers, 10);
    assert.equal(s.source.reads.length, 2);
    assert.equal(s.abortedReads(), 1, 'the server saw the cancellation');
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });

  test('abort during the retry pause stops without another read', async (t) => {
    const s = await serve({
      style: 'mcp-go',
      files: { [URL_A]: randomBytes(10) },
      faults: [{ start: 0, times: Infinity, kind: 'hang' }],
    });
    const timers = mockTime(t);
    const ac = new AbortController();
    const p = collect(
      readResourceStream(s.source, LINK, {
        style: 'arguments',
        pageTimeoutMs: 100,
        retryDelayMs: 10_000,
        signal: ac.signal,
      }),
    );
    // The read times out after 100 ms; the stream then waits 10 s before retrying.
    await advanceMocked(timers, 400);
    ac.abort();
    await assert.rejects(p, (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted);
    assert.equal(s.source.reads.length, 1);
  });

  test('an already aborted signal reads nothing', async () => {
    const s = await serve({ style: 'mcp-go', files: { [URL_A]: randomBytes(10) } });
    await assert.rejects(
      collect(readResourceStream(s.source, LINK, { signal: AbortSignal.abort() })),
      (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Aborted,
    );
    assert.equal(s.source.reads.length, 0);
  });
});

describe('readResourceStream: memory', () => {
  test('heap stays flat over a long stream: no page is retained after it is consumed', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const page = 100 * 1024;
    const data = randomBytes(page * 250);
    const s = await serve({ style: 'template', files: { [URL_A]: data } });
    let n = 0;
    let heapAt20 = 0;
    let total = 0;
    for await (const chunk of readResourceStream(s.source, LINK, { signal: new AbortController().signal })) {
      total += chunk.length;
      if (++n === 20) {
        gc();
        heapAt20 = process.memoryUsage().heapUsed;
      }
    }
    gc();
    const growth = process.memoryUsage().heapUsed - heapAt20;
    assert.equal(total, data.length);
    // 230 more pages of ~140 KB base64 each would be ~32 MB if retained; allow generous noise.
    assert.ok(growth < 8 * 1024 * 1024, `heap grew ${(growth / 1024 / 1024).toFixed(1)} MB over 230 pages`);
  });
});
