/**
 * LLM-side benchmarks: sentence-cutter throughput, and the ReAct loop's own cost per round against
 * the local fake OpenAI server (real HTTP + SSE on loopback, no model time), plus the time from the
 * start of a turn to the first speakable sentence piece.
 */
import { silentLogger } from '../../core/logger.ts';
import { createLlmClient } from '../../llm/client.ts';
import { createHistory } from '../../llm/history.ts';
import { runReact } from '../../llm/react.ts';
import { createSentenceCutter } from '../../llm/sentences.ts';
import { createLocalTools, dateTimeTool } from '../../mcp/local-tools.ts';
import { fakeText, fakeToolCalls, startFakeOpenAi } from '../fixtures/fake-openai.ts';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function benchCutter(): void {
  const en = 'Well, the weather today is great, and tomorrow too. Pi is about 3.14, e.g. for circles! **Bold** and [links](http://x.y) too?\n';
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
  console.log(`llm sentence cutter: ${Math.round(chars / (ms / 1000) / 1000)} k chars/s, ${Math.round((pieces / ms) * 1000)} pieces/s (${Math.round(ms)} ms for ${chars} chars)`);
}

async function benchReact(): Promise<void> {
  const fake = await startFakeOpenAi();
  try {
    const llm = createLlmClient({ baseURL: fake.url, apiKey: '', model: 'fake', log: silentLogger });
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
        llm, tools, history, userText: 'hi', maxRounds: 3, signal: new AbortController().signal, log: silentLogger,
        onText: (d) => {
          if (first === 0 && cutter.push(d).length > 0) first = performance.now() - t0;
        },
      });
      plain.push(a.totalMs);
      firstPiece.push(first);
      fake.script(fakeToolCalls([{ name: 'get_current_datetime', arguments: {} }]), fakeText('It is noon.'));
      const b = await runReact({ llm, tools, history, userText: 'time?', maxRounds: 3, signal: new AbortController().signal, log: silentLogger, onText: () => {} });
      withTool.push(b.totalMs);
    }
    const m1 = median(plain);
    const m2 = median(withTool);
    console.log(`llm react, 1 round (fake server, loopback): median ${m1.toFixed(1)} ms per turn; first sentence piece after ${median(firstPiece).toFixed(1)} ms`);
    console.log(`llm react, tool round + answer: median ${m2.toFixed(1)} ms per turn (≈ ${(m2 - m1).toFixed(1)} ms per extra tool round)`);
  } finally {
    await fake.close();
  }
}

export async function run(): Promise<void> {
  benchCutter();
  await benchReact();
}
