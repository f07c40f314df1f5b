/**
 * Media bench: a ResourceLink from the example MCP audio server (real stdio process)
 * read through readResourceStream (100 KB pages, template style, HTTP Range from a local file
 * server) and piped into ffmpeg decoding to 16 kHz PCM, as fast as ffmpeg takes it (no pacer).
 * Prints the time from the tool result to the first page and to the first PCM bytes, and the
 * peak RSS of this process (and of the MCP server) while streaming a 50 MB mp3.
 * Run alone: `npx tsx test/bench/media.ts`.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readResourceStream } from '../../mcp/resource-stream/stream.ts';
import type { ResourceLinkContent } from '../../mcp/contract/tool-source.ts';
import { startHttpFileServer } from '../fixtures/http-file-server.ts';
import { connectStdio } from '../fixtures/sdk-resource-source.ts';

const run_ = promisify(execFile);
const TARGET_BYTES = 50 * 1024 * 1024;
const MB = 1024 * 1024;

/** A ≥ 50 MB mp3: one 320 kb/s tone chunk without tags, repeated (a valid MPEG audio stream). */
async function makeBigMp3(dir: string, targetBytes: number): Promise<string> {
  const chunk = join(dir, 'chunk.mp3');
  await run_('ffmpeg', [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=330:duration=120',
    '-ac',
    '2',
    '-b:a',
    '320k',
    '-write_xing',
    '0',
    '-id3v2_version',
    '0',
    chunk,
  ]);
  const bytes = await readFile(chunk);
  const out = join(dir, 'big.mp3');
  await writeFile(out, bytes);
  for (let size = bytes.length; size < targetBytes; size += bytes.length) await appendFile(out, bytes);
  return out;
}

/** VmHWM (peak resident set) of another process, in bytes, from /proc. */
async function peakRssOf(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const m = /VmHWM:\s+(\d+) kB/.exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export async function run(targetBytes = TARGET_BYTES): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-media-'));
  const files = await startHttpFileServer({});
  let mcp: Awaited<ReturnType<typeof connectStdio>> | undefined;
  try {
    const path = await makeBigMp3(dir, targetBytes);
    const size = (await stat(path)).size;
    files.options.files = { '/big.mp3': { path } };
    mcp = await connectStdio(process.execPath, [
      '--import',
      'tsx',
      'examples/mcp-audio-server/main.ts',
      '--stdio',
      '--urls',
      `Big Tone | ${files.url('/big.mp3')}`,
    ]);

    const result = await mcp.client.callTool({ name: 'musicPlayer', arguments: { query: 'big tone' } });
    const tLink = performance.now();
    const link = (result.content as ResourceLinkContent[])[0];
    if (link?.type !== 'resource_link') throw new Error(`no resource_link: ${JSON.stringify(result)}`);

    global.gc?.();
    const baseRss = process.memoryUsage().rss;
    let peakRss = baseRss;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 10);

    let firstPageMs = -1;
    let firstPcmMs = -1;
    let pages = 0;
    let pcmBytes = 0;
    const ac = new AbortController();
    const ff = spawn(
      'ffmpeg',
      ['-loglevel', 'error', '-i', 'pipe:0', '-f', 's16le', '-ac', '1', '-ar', '16000', 'pipe:1'],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    ff.stdin.on('error', () => {});
    ff.stdout.on('data', (d: Buffer) => {
      if (firstPcmMs < 0) firstPcmMs = performance.now() - tLink;
      pcmBytes += d.length;
    });
    const exited = new Promise<number | null>((resolve) => ff.on('close', resolve));
    let streamed = 0;
    for await (const chunk of readResourceStream(mcp.source, link, {
      signal: ac.signal,
      onPage: () => {
        if (firstPageMs < 0) firstPageMs = performance.now() - tLink;
        pages++;
      },
    })) {
      streamed += chunk.length;
      if (!ff.stdin.write(chunk)) await new Promise((r) => ff.stdin.once('drain', r));
    }
    ff.stdin.end();
    const code = await exited;
    const totalMs = performance.now() - tLink;
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    const serverPeak = mcp.pid !== undefined ? await peakRssOf(mcp.pid) : undefined;

    const audioSeconds = pcmBytes / 32000;
    console.log(
      `media bench: ${(size / MB).toFixed(1)} MB mp3 (${(audioSeconds / 60).toFixed(1)} min of audio), ${pages} reads of 100 KB, ffmpeg exit ${code}`,
    );
    console.log(`  tool result -> first page:        ${firstPageMs.toFixed(1)} ms`);
    console.log(`  tool result -> first PCM bytes:   ${firstPcmMs.toFixed(1)} ms`);
    console.log(
      `  whole file streamed + decoded:    ${(totalMs / 1000).toFixed(2)} s (${(size / MB / (totalMs / 1000)).toFixed(1)} MB/s, ${(audioSeconds / (totalMs / 1000)).toFixed(0)}x real time)`,
    );
    console.log(
      `  peak RSS (this process):          ${(peakRss / MB).toFixed(1)} MB (baseline ${(baseRss / MB).toFixed(1)} MB, +${((peakRss - baseRss) / MB).toFixed(1)} MB)`,
    );
    if (serverPeak !== undefined) console.log(`  peak RSS (example MCP server):    ${(serverPeak / MB).toFixed(1)} MB`);
    if (streamed !== size) throw new Error(`streamed ${streamed} bytes of ${size}`);
  } finally {
    await mcp?.close();
    await files.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
