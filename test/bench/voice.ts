/**
 * Bench: the whole server, over real WebSockets, with the fake LLM and the embedded providers.
 * Prints end of speech → first audio frame for spoken and typed turns, latency under concurrent
 * sessions, and memory after many sessions (growth per session).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { join } from 'node:path';
import { startFakeOpenAi, fakeText, fakeToolCalls, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startHttpFileServer } from '../fixtures/http-file-server.ts';
import { makeToneMp3, removeDir, tempDir } from '../integration/examples/media-files.ts';
import { sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

function line(label: string, xs: number[]): string {
  return `${label}: median ${Math.round(pct(xs, 50))} ms, p90 ${Math.round(pct(xs, 90))} ms, max ${Math.round(Math.max(...xs))} ms (n=${xs.length})`;
}

function timings(srv: VoiceApp, from: number): Array<Record<string, unknown>> {
  return srv.logs.find('turn timings').slice(from);
}

async function spokenTurns(srv: VoiceApp, n: number): Promise<void> {
  const packets = await utterancePackets(speak16k('what is the weather today'));
  const from = timings(srv, 0).length;
  for (let i = 0; i < n; i++) {
    const dev = new DeviceSim({ url: srv.wsUrl });
    await dev.hello();
    dev.listen('start', { mode: 'auto' });
    await sendPaced(dev, packets, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
    await dev.waitJson('tts', 'stop', 30_000);
    dev.close();
  }
  const t = timings(srv, from).slice(1); // the first turn warms up espeak and the codecs
  console.log(
    line(
      '  spoken turn, end of speech (VAD decision) → first audio frame',
      t.map((x) => Number(x.firstAudioMs)),
    ),
  );
  console.log(
    line(
      '    of which ASR (pocketsphinx)',
      t.map((x) => Number(x.asrMs)),
    ),
  );
  console.log(
    line(
      '    of which LLM first token (fake, loopback)',
      t.map((x) => Number(x.llmFirstTokenMs)),
    ),
  );
  console.log(
    `    (the VAD waits vad.minSilenceMs = ${srv.config.vad.minSilenceMs} ms of silence before deciding; that is on top)`,
  );
}

async function typedTurns(srv: VoiceApp, n: number): Promise<void> {
  const from = timings(srv, 0).length;
  const dev = new DeviceSim({ url: srv.wsUrl });
  await dev.hello();
  for (let i = 0; i < n; i++) {
    const before = dev.json.length;
    dev.listen('detect', { text: `what is ${i} plus ${i}?` });
    await dev.waitJson('tts', 'stop', 30_000, before);
  }
  dev.close();
  const t = timings(srv, from);
  console.log(
    line(
      '  typed turn (detect text) → first audio frame',
      t.map((x) => Number(x.firstAudioMs)),
    ),
  );
}

async function concurrent(srv: VoiceApp, sessions: number): Promise<void> {
  const from = timings(srv, 0).length;
  const devs = Array.from(
    { length: sessions },
    (_, i) =>
      new DeviceSim({
        url: srv.wsUrl,
        deviceId: `be:00:00:00:${String(Math.floor(i / 256)).padStart(2, '0')}:${(i % 256).toString(16).padStart(2, '0')}`,
      }),
  );
  await Promise.all(devs.map((d) => d.hello()));
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    devs.map(async (d, i) => {
      d.listen('detect', { text: `Tell me fact number ${i} about the moon.` });
      await d.waitJson('tts', 'stop', 60_000);
    }),
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  lag.disable();
  const audioMs = devs.reduce((n, d) => n + d.audio.length * 60, 0);
  for (const d of devs) d.close();
  const t = timings(srv, from);
  const late = t.reduce((n, x) => n + Number(x.lateFrames), 0);
  const frames = devs.reduce((n, d) => n + d.audio.length, 0);
  console.log(
    line(
      `  ${sessions} sessions answering at once → first audio frame`,
      t.map((x) => Number(x.firstAudioMs)),
    ),
  );
  console.log(
    `    late frames ${late} of ${frames} (${((late / Math.max(1, frames)) * 100).toFixed(2)} %), ` +
      `CPU ${(((cpu.user + cpu.system) / 1000 / wall) * 100).toFixed(0)} % of one core for ${(audioMs / wall).toFixed(1)}× real-time audio out (server and clients in one process), ` +
      `event-loop delay p50 ${(lag.percentile(50) / 1e6).toFixed(1)} ms p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms max ${(lag.max / 1e6).toFixed(1)} ms`,
  );
}

/** Drops what the in-process test harness records (logs, the fake LLM's requests): not server memory. */
function clearHarness(srv: VoiceApp, llm: FakeOpenAi): void {
  srv.logs.lines.length = 0;
  (llm.requests as unknown[]).length = 0;
}

async function memory(srv: VoiceApp, llm: FakeOpenAi, sessions: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const run = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          const d = new DeviceSim({ url: srv.wsUrl });
          await d.hello();
          d.listen('detect', { text: 'hi there' });
          await d.waitJson('tts', 'stop', 30_000);
          d.close();
          await d.closed;
        }),
      );
      clearHarness(srv, llm);
    }
  };
  await run(20);
  gc?.();
  const before = process.memoryUsage();
  await run(sessions);
  await new Promise((r) => setTimeout(r, 500));
  gc?.();
  const after = process.memoryUsage();
  const mb = (b: number): string => (b / 1024 / 1024).toFixed(1);
  console.log(
    `  memory after ${sessions} more sessions with one turn each: heap ${mb(before.heapUsed)} → ${mb(after.heapUsed)} MB, ` +
      `RSS ${mb(before.rss)} → ${mb(after.rss)} MB (${((after.heapUsed - before.heapUsed) / sessions / 1024).toFixed(1)} KB heap per session${gc ? '' : '; run with --expose-gc for exact figures'}), live sessions ${srv.app.registry.size}`,
  );
}

async function memoryOneSession(srv: VoiceApp, llm: FakeOpenAi, turns: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const dev = new DeviceSim({ url: srv.wsUrl });
  await dev.hello();
  const turn = async (): Promise<void> => {
    const from = dev.json.length;
    dev.listen('detect', { text: 'hi there' });
    await dev.waitJson('tts', 'stop', 30_000, from);
  };
  for (let i = 0; i < 20; i++) await turn();
  clearHarness(srv, llm);
  dev.json.length = 0;
  dev.timeline.length = 0;
  dev.audio.length = 0;
  gc?.();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < turns; i++) {
    await turn();
    // The simulator's own records are not the server's memory.
    clearHarness(srv, llm);
    dev.json.length = 0;
    dev.timeline.length = 0;
    dev.audio.length = 0;
  }
  gc?.();
  const after = process.memoryUsage().heapUsed;
  dev.close();
  console.log(
    `  memory over ${turns} turns in one session: heap ${(before / 1048576).toFixed(1)} → ${(after / 1048576).toFixed(1)} MB (${((after - before) / turns / 1024).toFixed(1)} KB per turn; history is bounded by llm.historyTurns)`,
  );
}

/** Music through the example MCP server (resource template, 100 KB pages): tool result → first frame. */
async function musicStart(llmUrl: string, llm: FakeOpenAi, plays: number): Promise<void> {
  const dir = await tempDir('bench-music-');
  const mp3 = join(dir, 'track.mp3');
  await makeToneMp3(mp3, 120, 128);
  const files = await startHttpFileServer({ files: { '/track.mp3': { path: mp3 } } });
  const srv = await startVoiceApp(llmUrl, {
    logging: { level: 'info' },
    // The production default (one media worker per core); the test helper's default is one.
    audio: { workers: 'auto' },
    mcpServers: {
      audio: {
        command: process.execPath,
        args: [
          '--import',
          'tsx',
          'examples/mcp-audio-server/main.ts',
          '--stdio',
          '--urls',
          `Bench Track | ${files.url('/track.mp3')}`,
          '--allow-hosts',
          files.host,
        ],
      },
    },
  });
  try {
    for (let i = 0; i < plays; i++) {
      const dev = new DeviceSim({ url: srv.wsUrl });
      await dev.hello();
      llm.script(fakeToolCalls([{ name: 'audio__musicPlayer', arguments: { query: 'bench' } }]));
      dev.listen('detect', { text: 'play some music' });
      await dev.waitFor('music frames', () => dev.audio.length >= 5, 30_000);
      dev.abort();
      await dev.waitJson('tts', 'stop', 10_000);
      dev.close();
    }
    const starts = srv.logs.find('media started').map((l) => Number(l.firstFrameMs));
    console.log(
      line(
        '  music via MCP ResourceLink (template, 100 KB pages, 1.9 MB mp3): tool result → first audio frame',
        starts.slice(1),
      ),
    );
  } finally {
    await srv.close();
    await files.close();
    await removeDir(dir);
  }
}

export async function run(): Promise<void> {
  console.log('voice pipeline (real server, WebSocket devices, Silero VAD, pocketsphinx, espeak-ng, fake LLM)');
  const llm = await startFakeOpenAi();
  llm.rule({
    when: (r) => /moon/.test(r.lastUserText),
    reply: fakeText('The Moon is about three hundred and eighty thousand kilometres away. It has no air.'),
  });
  // The production default (one media worker per core); the test helper's default is one. One
  // session asks for turns back to back, faster than a person would: no turn budget.
  const srv = await startVoiceApp(llm.url, {
    logging: { level: 'info' },
    audio: { workers: 'auto' },
    conversation: { maxTurnsPerMinute: 0 },
  });
  try {
    if (!process.env.BENCH_SKIP_SPOKEN) await spokenTurns(srv, 6);
    if (!process.env.BENCH_ONLY_MEMORY) {
      await typedTurns(srv, 10);
      for (const n of [10, 25, 50]) await concurrent(srv, n);
    }
    if (!process.env.BENCH_ONLY_MEMORY) await musicStart(llm.url, llm, 6);
    if (!process.env.BENCH_SKIP_MEMORY) {
      await memory(srv, llm, 200);
      await memoryOneSession(srv, llm, 100);
    }
  } finally {
    await srv.close();
    await llm.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
