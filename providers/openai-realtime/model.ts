/**
 * @module The speech-to-speech conversation model over OpenAI's Realtime protocol (`RealtimeModel`
 * of llm/realtime.ts): OpenAI, Azure OpenAI, Qwen-Omni realtime, or a compatible server. One
 * connection per device session (`model-session.ts`); this holds what the connections share.
 */
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import type { RealtimeModel, RealtimeSession, RealtimeSessionOptions } from '../../llm/realtime.ts';
import type { OpenAiRealtimeModelOptions } from './realtime-options.ts';

export class OpenAiRealtimeModel implements RealtimeModel {
  readonly provider = 'openai-realtime';
  readonly inputRate: number;
  readonly outputRate = 24_000;
  readonly #opts: OpenAiRealtimeModelOptions;

  constructor(opts: OpenAiRealtimeModelOptions, _log: Logger) {
    this.#opts = opts;
    this.inputRate = opts.dialect === 'qwen-omni' ? 16_000 : 24_000;
  }

  async open(_opts: RealtimeSessionOptions): Promise<RealtimeSession> {
    throw new VoiceError(
      ErrorCode.ProviderUnavailable,
      `${this.provider}: not implemented yet (${this.#opts.dialect})`,
    );
  }
}
