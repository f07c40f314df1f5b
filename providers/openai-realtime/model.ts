/**
 * @module The speech-to-speech conversation model over OpenAI's Realtime protocol (`RealtimeModel`
 * of llm/realtime.ts): OpenAI, Azure OpenAI, Qwen-Omni realtime, or a compatible server, through
 * the openai SDK's own WebSocket client (`connect.ts`). One connection per device session
 * (`model-session.ts`); this holds what they share (the connector, with the CA read once). It runs
 * where it is called (the main thread): socket I/O and base64 of a few kilobytes per frame.
 */
import type { Logger } from '../../core/logger.ts';
import type { RealtimeModel, RealtimeSession, RealtimeSessionOptions } from '../../llm/realtime.ts';
import { realtimeConnector } from './connect.ts';
import { MAX_MODEL_FRAME_BYTES, openModelSession, type ModelSessionConfig } from './model-session.ts';
import type { OpenAiRealtimeModelOptions } from './realtime-options.ts';

/** Qwen-Omni hears 16 kHz PCM; OpenAI's PCM is 24 kHz both ways. Both answer at 24 kHz. */
const INPUT_RATE = { openai: 24_000, azure: 24_000, 'qwen-omni': 16_000 } as const;

export class OpenAiRealtimeModel implements RealtimeModel {
  readonly provider = 'openai-realtime';
  readonly inputRate: number;
  readonly outputRate = 24_000;
  // The conversation's own waits and bounds follow the settings (else its defaults would cap them).
  readonly responseTimeoutMs: number;
  readonly maxSessionMs: number;
  readonly maxFunctionCallsPerResponse: number;
  readonly #cfg: ModelSessionConfig;

  /** Throws a ConfigInvalid VoiceError when `ca` cannot be read. */
  constructor(o: OpenAiRealtimeModelOptions, log: Logger) {
    this.inputRate = INPUT_RATE[o.dialect];
    this.responseTimeoutMs = o.responseTimeoutMs;
    this.maxSessionMs = o.maxSessionMs;
    this.maxFunctionCallsPerResponse = o.maxFunctionCallsPerResponse;
    this.#cfg = {
      connect: realtimeConnector(
        {
          baseURL: o.baseURL,
          apiKey: o.apiKey,
          azure: o.dialect === 'azure',
          ca: o.ca,
          maxPayload: MAX_MODEL_FRAME_BYTES,
          setting: 'realtime',
        },
        { model: o.model },
      ),
      dialect: o.dialect,
      inputRate: this.inputRate,
      outputRate: this.outputRate,
      voice: o.voice,
      extraInstructions: o.instructions,
      connectTimeoutMs: o.connectTimeoutMs,
      responseTimeoutMs: o.responseTimeoutMs,
      maxSessionMs: o.maxSessionMs,
      maxAudioSecondsPerMinute: o.maxAudioSecondsPerMinute,
      maxFunctionCallsPerResponse: o.maxFunctionCallsPerResponse,
    };
    log.debug({ dialect: o.dialect, model: o.model, voice: o.voice }, 'openai-realtime model ready');
  }

  open(opts: RealtimeSessionOptions): Promise<RealtimeSession> {
    return openModelSession(this.#cfg, opts);
  }
}
