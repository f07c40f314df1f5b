/**
 * @module The settings the voice pipeline reads, as a structural slice of the server's validated
 * configuration: the server's `Config` satisfies it, and the pipeline does not depend on where the
 * values come from (a config file today, an agent's own settings later).
 */
export interface VoiceConfig {
  conversation: {
    wakeWords: readonly string[];
    greeting: string;
    /** Spoken when a turn fails for a reason `apologies` does not name. */
    apology: string;
    apologies: { llm: string; asr: string; tts: string };
    /** Turns a session may start in any 60 s (0: no limit), and what a device past it hears. */
    maxTurnsPerMinute: number;
    tooManyTurns: string;
    /** Characters of a typed text the model gets. */
    maxTextChars: number;
    /** Characters of one answer that are spoken (sent to the voice); the rest is not. */
    maxAnswerChars: number;
  };
  audio: {
    preBufferFrames: number;
    sendAheadMs: number;
    ttsStopMarginMs: number;
    opusComplexity: number;
    outputSampleRate: number;
  };
  llm: { historyTurns: number; maxToolRounds: number; systemPrompt: string; toolTimeoutMs: number };
  tools: { timeZone?: string | undefined };
  deviceMcp: { enabled: boolean; timeoutMs: number; maxSchemaBytes: number; vision: { url: string; token: string } };
  vad: {
    bargeIn: boolean;
    earlyStartMs: number;
    maxUtteranceMs: number;
    minSilenceMs: number;
    completeSilenceMs: number;
    unfinishedSilenceMs: number;
    llmJudge: { enabled: boolean; timeoutMs: number };
    realtimeTranscript: boolean;
    minSpeechMs: number;
    preRollMs: number;
    threshold: number;
  };
}
