/**
 * LLM-side benchmarks: sentence-cutter throughput, and the ReAct loop's own cost per round against
 * the local fake OpenAI server (real HTTP + SSE on loopback, no model time), plus the time from the
 * start of a turn to the first speakable sentence piece.
 */
import { createAsr } from '../../providers/index.ts';
import { silentLogger } from '../../core/logger.ts';
import { createLlmClient } from '../../providers/openai/llm.ts';
import { createHistory } from '../../llm/history.ts';
import { runReact } from '../../llm/react.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';
import { createLocalTools, dateTimeTool } from '../../mcp/local-tools.ts';
import { fakeText, fakeToolCalls, startFakeOpenAi } from '../fixtures/fake-openai.ts';
import { procCpu } from './sim/proc.ts';
import { startFakes, stopFakes } from './sim/server.ts';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function benchCutter(): void {
  const en =
    'Well, the weather today is great, and tomorrow too. Pi is about 3.14, e.g. for circles! **Bold** and [links](http://x.y) too?\n';
  const zh = '今天北京天气晴朗，气温二十度，适合出门。明天会下雨！你要带伞吗？';
  const text = (en + zh).repeat(200);
  const rounds = 20;
  const t0 = performance.now();
  let pieces = 0;
  for (let r = 0; r < rounds; r++) {
    const c = createSentenceCutter();
    // Model-sized deltas of about 4 characters.
    for (let i = 0; i < text.length; i += 4) pieces += c.push(text.slice(i, i + 4)).length;
    pieces += c.flush().length;
  }
  const ms = performance.now() - t0;
  const chars = text.length * rounds;
  console.log(
    `llm sentence cutter: ${Math.round(chars / (ms / 1000) / 1000)} k chars/s, ${Math.round((pieces / ms) * 1000)} pieces/s (${Math.round(ms)} ms for ${chars} chars)`,
  );
}

async function benchReact(): Promise<void> {
  const fake = await startFakeOpenAi();
  try {
    const llm = createLlmClient({ baseURL: fake.url, apiKey: '', model: 'fake' }, silentLogger);
    const tools = createLocalTools([dateTimeTool()]);
    const plain: number[] = [];
    const withTool: number[] = [];
    const firstPiece: number[] = [];
    const n = 30;
    for (let i = 0; i < n; i++) {
      const history = createHistory({ systemPrompt: 'You are a voice assistant.', historyTurns: 10 });
      fake.script(fakeText('Sure, here is a short answer for you. And a second sentence.'));
      const cutter = createSentenceCutter();
      const t0 = performance.now();
      let first = 0;
      const a = await runReact({
        llm,
        tools,
        history,
        userText: 'hi',
        maxRounds: 3,
        signal: new AbortController().signal,
        log: silentLogger,
        onText: (d) => {
          if (first === 0 && cutter.push(d).length > 0) first = performance.now() - t0;
        },
      });
      plain.push(a.totalMs);
      firstPiece.push(first);
      fake.script(fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }]), fakeText('It is noon.'));
      const b = await runReact({
        llm,
        tools,
        history,
        userText: 'time?',
        maxRounds: 3,
        signal: new AbortController().signal,
        log: silentLogger,
        onText: () => {},
      });
      withTool.push(b.totalMs);
    }
    const m1 = median(plain);
    const m2 = median(withTool);
    console.log(
      `llm react, 1 round (fake server, loopback): median ${m1.toFixed(1)} ms per turn; first sentence piece after ${median(firstPiece).toFixed(1)} ms`,
    );
    console.log(
      `llm react, tool round + answer: median ${m2.toFixed(1)} ms per turn (≈ ${(m2 - m1).toFixed(1)} ms per extra tool round)`,
    );
  } finally {
    await fake.close();
  }
}

/**
 * What the provider thread pays per turn when fifty turns start at once: 50 ASR uploads (2.5 s
 * WAV) and 50 chat streams (a voice prompt, 12 tools) together against the simulator's fakes in
 * their own process, as in `npm run simulate`. Prints this process's CPU per turn (the clients)
 * and the fakes' (their own queue in a burst), median of the rounds after the first.
 */
async function benchProviderBurst(): Promise<void> {
  const fakes = await startFakes(
    'what is the weather like today',
    'It is sunny today. The high is twenty two degrees. Enjoy your day!',
    20_000,
  );
  try {
    const llm = createLlmClient({ baseURL: fakes.llm, apiKey: '', model: 'fake' }, silentLogger);
    const asr = await createAsr(
      { provider: 'openai', baseURL: fakes.asr, apiKey: '', model: 'whisper-1' },
      silentLogger,
    );
    const tools = Array.from({ length: 12 }, (_, i) => ({
      name: `device_tool_${i}`,
      description: 'Sets or reads something on the speaker, such as its volume, screen or battery. '.repeat(2),
      inputSchema: {
        type: 'object',
        properties: { value: { type: 'string' }, level: { type: 'number' } },
        required: ['value'],
      },
    }));
    const messages = [
      {
        role: 'system' as const,
        content: 'You are a friendly voice assistant on a small speaker. Answer briefly. '.repeat(25),
      },
      { role: 'user' as const, content: 'what is the weather like today' },
    ];
    const pcm = new Int16Array(16000 * 2.5).map((_, i) => Math.round(3000 * Math.sin(i / 5)));
    const clients: number[] = [];
    const fakesMs: number[] = [];
    const turns = 50;
    for (let round = 0; round < 6; round++) {
      const c0 = process.cpuUsage();
      const f0 = procCpu(fakes.proc.pid ?? 0)?.self ?? 0;
      await Promise.all(
        Array.from({ length: turns }, async () => {
          const signal = new AbortController().signal;
          await asr.transcribe(pcm, { signal, sampleRate: 16000 });
          for await (const _ev of llm.stream({ messages, tools, signal })) {
            // drained, as the turn would
          }
        }),
      );
      const c = process.cpuUsage(c0);
      if (round > 0) {
        clients.push((c.user + c.system) / 1000 / turns);
        fakesMs.push((((procCpu(fakes.proc.pid ?? 0)?.self ?? 0) - f0) * 1000) / turns);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    console.log(
      `provider clients, ${turns} turns at once (ASR upload + chat stream): ${median(clients).toFixed(2)} ms of CPU per turn here, ${median(fakesMs).toFixed(2)} ms in the fakes' process`,
    );
  } finally {
    await stopFakes(fakes);
  }
}

export async function run(): Promise<void> {
  benchCutter();
  await benchReact();
  await benchProviderBurst();
}
