/**
 * @module The FunASR runtime's options (`asr` with `provider: funasr`): a self-hosted FunASR
 * WebSocket server (the C++ `funasr-wss-server-2pass` / `funasr-wss-server` of the runtime SDK
 * images, or the Python `funasr_wss_server.py`), streamed to while the user speaks.
 */
import { z } from 'zod';

/** Most hotwords accepted; the server compiles them into its decoder for every connection. */
export const MAX_HOTWORDS = 200;

export const FunasrAsrSchema = z.strictObject({
  provider: z.literal('funasr'),
  /**
   * The server, `ws://host:10095` or `wss://host:10095` (the runtime's TLS is on unless it was
   * started with `--certfile 0`). The path is not read by the server.
   */
  url: z.url({ protocol: /^wss?$/, error: 'asr.url must be a ws:// or wss:// URL' }),
  /**
   * `2pass`: streaming partials, each sentence then corrected by the offline model (the best
   * transcript, partials while speaking); `online`: streaming model only (fastest final, no
   * correction, no punctuation); `offline`: one decode at the end (no partials while speaking).
   */
  mode: z.enum(['2pass', 'online', 'offline']).default('2pass'),
  /**
   * The streaming model's chunking `[look-back, chunk, look-ahead]` in 60 ms units: `[5,10,5]`
   * decodes 600 ms at a time, `[8,8,4]` 480 ms. Audio is sent in pieces of
   * `60 × chunk / chunkInterval` ms (60 ms with the defaults).
   */
  chunkSize: z
    .tuple([z.number().int().min(0).max(64), z.number().int().min(1).max(64), z.number().int().min(0).max(64)])
    .default([5, 10, 5]),
  /** Divides the chunk into the pieces the audio is sent in (FunASR's client: 10). */
  chunkInterval: z.number().int().min(1).max(100).default(10),
  /** Encoder chunks of history the streaming model keeps (the Python server reads it; FunASR's client sends 4). */
  encoderChunkLookBack: z.number().int().min(0).max(64).default(4),
  /** Decoder chunks of history the streaming model keeps (FunASR's client sends 0). */
  decoderChunkLookBack: z.number().int().min(0).max(64).default(0),
  /**
   * Words to favour, with a weight (FunASR's examples use 10–30), e.g. `{ 小智: 20 }`. Sent as
   * the JSON string `{"小智":20}` the runtime expects; merged with the server's own hotword file.
   */
  hotwords: z
    .record(z.string().min(1).max(64), z.number().int().min(1).max(100))
    .refine((h) => Object.keys(h).length <= MAX_HOTWORDS, `at most ${MAX_HOTWORDS} hotwords`)
    .optional(),
  /** Inverse text normalisation: digits and symbols instead of spelt-out numbers ("12点" for "十二点"). */
  itn: z.boolean().default(true),
  /**
   * Checks a `wss://` server's certificate. The runtime images ship a self-signed certificate
   * (expired since 2024): give your own certificate's CA with `ca`, start the server without TLS
   * and use `ws://` on a trusted network, or set false to accept any certificate (then anyone on
   * the path can read and alter the audio).
   */
  rejectUnauthorized: z.boolean().default(true),
  /** A PEM file with the CA (or the self-signed certificate itself) that signed the server's certificate. */
  ca: z.string().min(1).optional(),
  /** Longest wait for the connection (TCP, TLS and the WebSocket handshake), in ms. */
  connectTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
  /** Longest wait from the end of the utterance to the final transcript, in ms; past it the turn falls back. */
  finalTimeoutMs: z.number().int().min(100).max(60_000).default(3000),
});
export type FunasrAsrOptions = z.infer<typeof FunasrAsrSchema>;
