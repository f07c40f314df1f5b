/**
 * @module The fleet simulator's "instant" OpenAI-compatible LLM and ASR: one HTTP server on
 * 127.0.0.1 that answers every chat request with the same streamed text and every transcription
 * with the same JSON, spending as little CPU as it can.
 *
 * Why not the test fixtures (`test/fixtures/fake-openai*.ts`): those record every request, parse
 * each upload with the platform's multipart parser and pace chunks with timers, which is what
 * tests need. On the simulator's two cores that work was a queue of its own: a burst of 50 turns
 * cost their process 2–4 ms per turn, serially, in front of every device's first frame, and the
 * capacity goals in BENCHMARKS.md are stated for fakes that answer at once. What the server receives is unchanged:
 * the same chunk shapes, one `data:` event per 4-character piece, each written separately.
 *
 * Requests are still checked enough to catch a broken client: the chat body must be JSON with a
 * `messages` array and `stream: true`; the upload must be `multipart/form-data` with a WAV `file`
 * part; a speech request JSON with an `input` of at most 4,096 characters and `response_format:
 * pcm`. Anything else gets a 400 with an OpenAI-style error body, which the server reports as a
 * failed turn and the simulator counts.
 *
 * With a latency profile (sim/provider-profiles.ts) the fakes answer as slowly as a real
 * provider: the transcript after a fixed time plus a share of the audio's length, the model's
 * first token after its time to first token and then one piece per token, the speech's first audio
 * after its delay and then the rest at a multiple of real time. All of that waits on one
 * `DueQueue`: a burst of a hundred streams is one timer, not a hundred. With the `instant`
 * figures nothing waits and everything is written at once, as before.
 *
 * The speech fake (`/v1/audio/speech`, only when the run uses a remote TTS) answers every request
 * with a slice of one clip of real speech made once at start, as long as the request's text
 * would take to say (OpenAI's `pcm`: 16-bit mono at 24 kHz).
 *
 * With a streaming TTS the speech comes instead from the Volcengine bidirectional stand-in
 * (test/fixtures/fake-volcengine-tts.ts) on its own port: the server pushes the model's text to
 * it as it is written, and it answers each sentence with a tone, its first audio
 * `ttsStreamFirstAudioMs` after the sentence's text is complete.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { int16ToBuffer } from '../../../audio/pcm/pcm.ts';
import { startFakeFunasr, voicedMs } from '../../fixtures/fake-funasr.ts';
import { startFakeVolcengineTts } from '../../fixtures/fake-volcengine-tts.ts';
import { startFakeRealtimeModel } from '../../fixtures/fake-realtime-model.ts';
import { DueQueue } from './due-queue.ts';
import { CHARS_PER_TOKEN, PROFILES, type ProviderLatency } from './provider-profiles.ts';

export interface LeanFakes {
  /** Chat base URL (…/v1). */
  llm: string;
  /** Transcription base URL (…/v1), or the streaming stand-in's ws:// URL. */
  asr: string;
  /** Which server provider `asr` is for. */
  asrKind: 'openai' | 'funasr';
  /** Speech base URL (…/v1), or the streaming stand-in's ws:// URL (`ttsKind`); null when the run uses the server's embedded TTS. */
  tts: string | null;
  /** Which server provider `tts` is for (null with the embedded TTS). */
  ttsKind: 'openai' | 'volcengine' | null;
  /** The realtime stand-in's base URL (http://…/v1, plain: the server's `ws:` way in); null on the cascade. */
  realtime: string | null;
  /** `GET` this for the work done so far (`FakeStats`). */
  stats: string;
  close(): Promise<void>;
}

export interface LeanFakesOptions {
  transcript: string;
  answer: string;
  /** How slowly to answer (default: the instant profile). */
  providers?: ProviderLatency;
  /** The speech the TTS fake slices its answers from: 16-bit mono PCM at 24 kHz (needed when `providers.tts` is remote). */
  ttsClip?: Int16Array;
  /**
   * The utterance the devices say (16 kHz PCM, needed when `providers.asr` is streaming): the
   * streaming stand-in gives the transcript's words in proportion to the voice heard of it.
   */
  utterance?: Int16Array;
}

/** What the fake ASR did: uploads, their audio and the delay it waited, in all. */
export interface AsrWork {
  requests: number;
  audioMs: number;
  delayMs: number;
}

/** What the fakes did since they started (the simulator takes differences per step). */
export interface FakeStats {
  asr: AsrWork;
  chats: number;
  speeches: number;
}

/** OpenAI's `pcm` speech format: 16-bit mono at 24 kHz. */
export const TTS_SAMPLE_RATE = 24_000;
/** The audio of one streamed speech chunk. */
const TTS_CHUNK_MS = 100;
/** The audio of one frame of the streaming stand-in (its own default). */
const STREAM_TTS_CHUNK_MS = 40;
/** The shortest speech answer (a short text still takes a syllable or two to say). */
const TTS_MIN_MS = 300;
/** OpenAI's limit on a speech request's `input`. */
const TTS_MAX_INPUT_CHARS = 4096;

/** Larger bodies are refused: a minute of 16 kHz WAV is ~2 MB; chat bodies are a few KB. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
const PIECE_CHARS = CHARS_PER_TOKEN;

/** The SSE events of one streamed answer, as OpenAI sends them (role first, finish, [DONE]). */
function answerEvents(text: string): Buffer[] {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-sim', object: 'chat.completion.chunk', created, model: 'sim', system_fingerprint: null, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const events = [chunk({ role: 'assistant', content: '' }, null)];
  for (let i = 0; i < text.length; i += PIECE_CHARS)
    events.push(chunk({ content: text.slice(i, i + PIECE_CHARS) }, null));
  events.push(chunk({}, 'stop'), 'data: [DONE]\n\n');
  return events.map((e) => Buffer.from(e, 'utf8'));
}

function badRequest(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }));
}

/** Collects a body up to MAX_BODY_BYTES; null (and a 413 sent) when it is larger. */
function readBody(req: IncomingMessage, res: ServerResponse, done: (body: Buffer | null) => void): void {
  const parts: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (c: Buffer) => {
    if (over) return;
    size += c.length;
    if (size > MAX_BODY_BYTES) {
      over = true;
      badRequest(res, 413, 'body too large');
      done(null);
      return;
    }
    parts.push(c);
  });
  req.on('end', () => {
    if (!over) done(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size));
  });
  req.on('error', () => {
    if (!over) done(null);
  });
}

/** The length of the audio in a multipart upload's WAV file, ms; null when there is no readable WAV header. */
export function uploadedWavMs(body: Buffer): number | null {
  const riff = body.indexOf('RIFF');
  if (riff < 0 || body.toString('latin1', riff + 8, riff + 12) !== 'WAVE') return null;
  let at = riff + 12;
  let byteRate = 0;
  while (at + 8 <= body.length) {
    const id = body.toString('latin1', at, at + 4);
    const size = body.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 16 <= body.length) byteRate = body.readUInt32LE(at + 16);
    if (id === 'data') {
      // A streamed WAV may claim more than it holds: count what is there.
      const bytes = Math.min(size, body.length - at - 8);
      return byteRate > 0 ? (bytes / byteRate) * 1000 : null;
    }
    at += 8 + size + (size & 1);
  }
  return null;
}

/** Writes the answer's SSE events: the role and first piece after the time to first token, then one piece per token. */
function streamAnswer(res: ServerResponse, events: Buffer[], p: ProviderLatency, queue: DueQueue): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  if (p.llmTtftMs === 0 && p.llmTokensPerS === 0) {
    for (const e of events) res.write(e);
    res.end();
    return;
  }
  res.flushHeaders();
  const head = events[0] as Buffer;
  const pieces = events.slice(1, -2);
  const tail = events.slice(-2);
  const gap = p.llmTokensPerS > 0 ? 1000 / p.llmTokensPerS : 0;
  const start = performance.now() + p.llmTtftMs;
  let k = 0;
  const step = (): void => {
    // The server cancels the stream on a barge-in: stop pacing it.
    if (res.destroyed || res.writableEnded) return;
    if (k === 0) res.write(head);
    do {
      if (k < pieces.length) res.write(pieces[k] as Buffer);
      k++;
    } while (gap === 0 && k < pieces.length);
    if (k >= pieces.length) {
      for (const e of tail) res.write(e);
      res.end();
      return;
    }
    queue.at(start + k * gap, step);
  };
  queue.at(start, step);
}

/** Writes `pcm` as the speech answer: the first chunk after the first-audio delay, the rest at `ttsSpeed` × real time. */
function streamSpeech(res: ServerResponse, pcm: Buffer, p: ProviderLatency, queue: DueQueue): void {
  res.writeHead(200, { 'content-type': 'audio/pcm' });
  const chunkBytes = ((TTS_SAMPLE_RATE * TTS_CHUNK_MS) / 1000) * 2;
  if (p.ttsFirstAudioMs === 0 && p.ttsSpeed === 0) {
    res.end(pcm);
    return;
  }
  res.flushHeaders();
  const gap = p.ttsSpeed > 0 ? TTS_CHUNK_MS / p.ttsSpeed : 0;
  const start = performance.now() + p.ttsFirstAudioMs;
  let sent = 0;
  let n = 0;
  const step = (): void => {
    if (res.destroyed || res.writableEnded) return;
    const end = gap === 0 ? pcm.length : Math.min(pcm.length, sent + chunkBytes);
    res.write(pcm.subarray(sent, end));
    sent = end;
    n++;
    if (sent >= pcm.length) res.end();
    else queue.at(start + n * gap, step);
  };
  queue.at(start, step);
}

/**
 * The streaming recogniser stand-in: FunASR's protocol (the server's `funasr` provider), partials
 * every 120 ms of audio with the words heard so far, the final `asrFinalMs` after the end marker.
 */
async function startStreamingAsr(
  p: ProviderLatency,
  transcript: string,
  utterance: Int16Array,
): Promise<{ url: string; work(): AsrWork; close(): Promise<void> }> {
  const words = transcript.split(/\s+/);
  const total = Math.max(1, voicedMs(utterance));
  // It keeps what each connection sent (a test fixture): fine for latency runs of a few devices,
  // not meant for capacity runs, which keep the batch fake.
  const fake = await startFakeFunasr({
    partialEveryMs: 120,
    finalDelayMs: p.asrFinalMs,
    segmentSilenceMs: 0,
    transcribe: (pcm) => words.slice(0, Math.round((words.length * Math.min(total, voicedMs(pcm))) / total)).join(' '),
  });
  const work = (): AsrWork => {
    const ended = fake.sessions.filter((x) => x.end !== undefined);
    const audioMs = ended.reduce((ms, x) => ms + x.audio.length / 2 / 16, 0);
    return { requests: ended.length, audioMs, delayMs: ended.length * p.asrFinalMs };
  };
  return { url: fake.url, work, close: () => fake.close() };
}

/**
 * The streaming synthesiser stand-in: Volcengine's bidirectional protocol (the server's
 * `volcengine` provider), a tone per sentence, its frames at `ttsSpeed` × real time.
 */
async function startStreamingTts(
  p: ProviderLatency,
): Promise<{ url: string; speeches(): number; close(): Promise<void> }> {
  // It keeps what each session received (a test fixture): fine for latency runs of tens of
  // devices, not meant for capacity runs, which keep the remote fake.
  const fake = await startFakeVolcengineTts({
    firstAudioMs: p.ttsStreamFirstAudioMs,
    // Issue 44's figure: first audio this long after the first text (or when the first sentence
    // is complete, if the model is slower than that).
    firstAudioFrom: 'first-text',
    chunkMs: STREAM_TTS_CHUNK_MS,
    chunkIntervalMs: p.ttsSpeed > 0 ? STREAM_TTS_CHUNK_MS / p.ttsSpeed : 0,
    speech: 'tone',
  });
  return { url: fake.url, speeches: () => fake.sessions.length, close: () => fake.close() };
}

/**
 * The speech-to-speech stand-in: OpenAI's Realtime protocol (the server's `openai-realtime`
 * realtime provider), plain WebSocket, the same answer spoken by espeak-ng (made once, then cached
 * by the stand-in's speech cache) with its first audio `realtimeFirstAudioMs` after the commit.
 */
async function startRealtime(
  p: ProviderLatency,
  transcript: string,
  answer: string,
): Promise<{ url: string; responses(): number; close(): Promise<void> }> {
  const fake = await startFakeRealtimeModel({
    firstAudioDelayMs: p.realtimeFirstAudioMs,
    transcribe: () => transcript,
    respond: () => ({ say: answer }),
    // What each connection sent is kept (a fixture): fine for latency runs of tens of devices.
  });
  let responses = 0;
  return {
    url: fake.url,
    responses: () => {
      responses = fake.sessions.reduce((n, x) => n + x.commits, 0);
      return responses;
    },
    close: () => fake.close(),
  };
}

export async function startLeanFakes(opts: LeanFakesOptions): Promise<LeanFakes> {
  const p = opts.providers ?? PROFILES.instant;
  if (p.asr === 'streaming' && !opts.utterance)
    throw new Error('a streaming ASR fake needs the utterance the devices say');
  if (p.tts === 'remote' && p.pipeline !== 'realtime' && (!opts.ttsClip || opts.ttsClip.length === 0))
    throw new Error('a remote TTS fake needs a clip of speech to answer with');
  const events = answerEvents(opts.answer);
  const transcription = Buffer.from(JSON.stringify({ text: opts.transcript }), 'utf8');
  const clip = p.tts === 'remote' && opts.ttsClip ? int16ToBuffer(opts.ttsClip) : null;
  const clipMs = clip ? (clip.length / 2 / TTS_SAMPLE_RATE) * 1000 : 0;
  const msPerChar = clipMs / Math.max(1, opts.answer.length);
  const queue = new DueQueue();
  const stats: FakeStats = { asr: { requests: 0, audioMs: 0, delayMs: 0 }, chats: 0, speeches: 0 };
  const streaming =
    p.asr === 'streaming' && opts.utterance ? await startStreamingAsr(p, opts.transcript, opts.utterance) : undefined;
  const streamingTts = p.tts === 'streaming' && p.pipeline !== 'realtime' ? await startStreamingTts(p) : undefined;
  const realtime = p.pipeline === 'realtime' ? await startRealtime(p, opts.transcript, opts.answer) : undefined;
  const current = (): FakeStats => ({
    ...stats,
    ...(streaming ? { asr: streaming.work() } : {}),
    ...(streamingTts ? { speeches: streamingTts.speeches() } : {}),
    ...(realtime ? { chats: realtime.responses() } : {}),
  });
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/sim/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(current()));
      return;
    }
    if (req.method !== 'POST') return badRequest(res, 405, 'only POST');
    if (path === '/v1/chat/completions') {
      readBody(req, res, (body) => {
        if (!body) return;
        let ok = false;
        try {
          const j = JSON.parse(body.toString('utf8')) as { messages?: unknown; stream?: unknown };
          ok = Array.isArray(j.messages) && j.stream === true;
        } catch {
          ok = false;
        }
        if (!ok) return badRequest(res, 400, 'expected a JSON chat request with messages and stream: true');
        stats.chats++;
        streamAnswer(res, events, p, queue);
      });
      return;
    }
    if (path === '/v1/audio/transcriptions') {
      const type = req.headers['content-type'] ?? '';
      readBody(req, res, (body) => {
        if (!body) return;
        if (!/^multipart\/form-data;\s*boundary=/i.test(type) || body.indexOf('name="file"') < 0) {
          return badRequest(res, 400, 'expected multipart/form-data with a file part');
        }
        const audioMs = uploadedWavMs(body);
        if (audioMs === null) return badRequest(res, 400, 'expected a WAV file');
        const delay = p.asrMs + p.asrPerAudio * audioMs;
        stats.asr.requests++;
        stats.asr.audioMs += audioMs;
        stats.asr.delayMs += delay;
        const reply = (): void => {
          if (res.destroyed || res.writableEnded) return;
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': transcription.length });
          res.end(transcription);
        };
        if (delay <= 0) reply();
        else queue.at(performance.now() + delay, reply);
      });
      return;
    }
    if (path === '/v1/audio/speech' && clip) {
      readBody(req, res, (body) => {
        if (!body) return;
        let input: unknown;
        let format: unknown;
        try {
          const j = JSON.parse(body.toString('utf8')) as { input?: unknown; response_format?: unknown };
          input = j.input;
          format = j.response_format;
        } catch {
          input = undefined;
        }
        if (typeof input !== 'string' || input.length === 0 || input.length > TTS_MAX_INPUT_CHARS)
          return badRequest(
            res,
            400,
            `expected a JSON speech request with an input of 1 to ${TTS_MAX_INPUT_CHARS} characters`,
          );
        if (format !== 'pcm') return badRequest(res, 400, 'this fake speaks response_format pcm only');
        stats.speeches++;
        // As long as the text takes to say at the clip's pace, whole samples.
        const ms = Math.min(clipMs, Math.max(TTS_MIN_MS, input.length * msPerChar));
        const bytes = Math.min(clip.length, Math.round((ms / 1000) * TTS_SAMPLE_RATE) * 2);
        streamSpeech(res, clip.subarray(0, bytes), p, queue);
      });
      return;
    }
    badRequest(res, 404, `no route ${path}`);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}/v1`;
  return {
    llm: base,
    asr: streaming ? streaming.url : base,
    asrKind: streaming ? 'funasr' : 'openai',
    tts: clip ? base : (streamingTts?.url ?? null),
    ttsKind: clip ? 'openai' : streamingTts ? 'volcengine' : null,
    realtime: realtime?.url ?? null,
    stats: `http://127.0.0.1:${port}/sim/stats`,
    close: async () => {
      await streaming?.close();
      await streamingTts?.close();
      await realtime?.close();
      await new Promise<void>((resolve) => {
        queue.close();
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}
