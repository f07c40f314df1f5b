/**
 * @module The session's conversation state machine. It mirrors the device's own states (idle,
 * listening, speaking) plus `thinking`, the gap between the end of the user's speech and the
 * first audio of the answer, which only the server sees.
 */

export const SessionState = {
  Idle: 'idle',
  Listening: 'listening',
  Thinking: 'thinking',
  Speaking: 'speaking',
} as const;
export type SessionState = (typeof SessionState)[keyof typeof SessionState];

export type SessionEvent =
  | 'listen_start'
  | 'listen_stop'
  | 'detect'
  | 'speech_end'
  | 'tts_start'
  | 'tts_stop'
  | 'abort'
  | 'turn_end_no_answer';

/**
 * Allowed transitions. Anything not listed keeps the state (and is logged by the session), so a
 * device that sends messages out of order never wedges the machine.
 */
const TABLE: Readonly<Record<SessionState, Partial<Record<SessionEvent, SessionState | 'by_mode'>>>> = {
  idle: { listen_start: 'listening', detect: 'thinking', tts_start: 'speaking' },
  listening: {
    listen_start: 'listening',
    listen_stop: 'thinking',
    detect: 'thinking',
    speech_end: 'thinking',
    tts_start: 'speaking',
    abort: 'listening',
  },
  thinking: {
    listen_start: 'listening',
    tts_start: 'speaking',
    abort: 'by_mode',
    turn_end_no_answer: 'by_mode',
    detect: 'thinking',
  },
  speaking: {
    listen_start: 'listening',
    tts_stop: 'by_mode',
    abort: 'by_mode',
    detect: 'thinking',
    turn_end_no_answer: 'by_mode',
  },
};

/**
 * Applies an event. `by_mode` follows the firmware: after `tts stop` (or an abort, which the
 * server answers with `tts stop`) an auto/realtime device goes back to listening, a manual one to idle.
 */
export function nextState(state: SessionState, event: SessionEvent, manualMode: boolean): SessionState | null {
  const to = TABLE[state][event];
  if (to === undefined) return null;
  if (to === 'by_mode') return manualMode ? SessionState.Idle : SessionState.Listening;
  return to;
}
