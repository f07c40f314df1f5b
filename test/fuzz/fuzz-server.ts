/**
 * The target of the fuzz properties: the real server (real VAD, ASR, TTS and media workers, as
 * server/main.ts wires them) in this process on a loopback port, with the fake OpenAI-compatible
 * LLM, plus the watchers every property checks after each case: no uncaught exception or
 * unhandled rejection in this process, no error-level log line, and counters for the report.
 */
import { startFakeOpenAi, fakeText, fakeToolCalls, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';
import { closeAll } from '../helpers/close-all.ts';
import { createLogWatch, type LogWatch } from './log-watch.ts';
import { watchHealth } from './health-watch.ts';
import { PROBE_EXPOSED } from './mcp-arbitraries.ts';

/** Text the MCP property sends in `listen detect` to make the model call the probe tool. */
export const PROBE_TEXT = 'fuzz probe';

export interface FuzzStats {
  cases: number;
  /** Messages sent, by kind ('text', 'badUtf8', 'binary', 'mcp'). */
  inputs: Map<string, number>;
  /** Close codes seen by fuzzed connections (the server's, or 1000/1005 when we closed first). */
  closeCodes: Map<number, number>;
  maxRssBytes: number;
}

export interface FuzzServer {
  srv: VoiceApp;
  llm: FakeOpenAi;
  logs: LogWatch;
  stats: FuzzStats;
  /** Uncaught exceptions and unhandled rejections seen in this process since the start. */
  crashes: unknown[];
  /** A device id no other connection uses (the same id would replace a session). */
  nextDeviceId(): string;
  count(kind: string, n?: number): void;
  /** Throws if anything crashed or logged an error since the last call (attributed to the case just run). */
  assertHealthy(what: string): void;
  close(): Promise<void>;
}

/**
 * `overrides`: configuration merged over the fuzz server's (e.g. the MQTT transport turned on), or
 * made from the fake LLM's URL (the vision fuzz points its vision model there).
 */
export async function startFuzzServer(
  overrides: Record<string, unknown> | ((llmUrl: string) => Record<string, unknown>) = {},
): Promise<FuzzServer> {
  const logs = createLogWatch();
  const health = watchHealth(logs);
  let llm: FakeOpenAi | undefined;
  let srv: VoiceApp | undefined;
  try {
    llm = await startFakeOpenAi();
    // The probe tool is called when the session's model sees it; its result ends in a short answer.
    llm.rule({
      when: (r) => r.toolResults.length === 0 && r.lastUserText.includes(PROBE_TEXT),
      reply: (r) =>
        r.toolNames.includes(PROBE_EXPOSED)
          ? fakeToolCalls([{ name: PROBE_EXPOSED, arguments: {} }])
          : fakeText('No probe.'),
    });
    llm.rule({ when: (r) => r.toolResults.length > 0, reply: fakeText('Done.') });
    // Info, not debug: a debug line per fuzzed message would be most of the CPU of a long run.
    const extra = typeof overrides === 'function' ? overrides(llm.url) : overrides;
    srv = await startVoiceApp(llm.url, { logging: { level: 'info' }, ...extra }, logs);
    const stats: FuzzStats = { cases: 0, inputs: new Map(), closeCodes: new Map(), maxRssBytes: 0 };
    let devices = 0;
    const server = srv;
    const fakeLlm = llm;
    return {
      srv: server,
      llm: fakeLlm,
      logs,
      stats,
      crashes: health.crashes,
      nextDeviceId: () => {
        const n = ++devices;
        return `02:fe:${[(n >> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
      },
      count: (kind, n = 1) => {
        stats.inputs.set(kind, (stats.inputs.get(kind) ?? 0) + n);
      },
      assertHealthy: (what) => {
        stats.maxRssBytes = Math.max(stats.maxRssBytes, process.memoryUsage.rss());
        health.assertHealthy(what);
      },
      close: async () => {
        try {
          await closeAll(server, fakeLlm);
        } finally {
          health.stop();
        }
      },
    };
  } catch (err) {
    // A set-up that failed half-way must not leave the LLM listening (the test would hang).
    await closeAll(srv, llm).catch(() => {});
    health.stop();
    throw err;
  }
}
