/**
 * A conversation that records what the session hands it, used to test the session and protocol
 * layer alone (the voice conversation has its own end-to-end tests).
 */
import type { Conversation, ConversationContext, ConversationFactory } from '../../voice/session/conversation.ts';

export interface Recorded {
  ctx: ConversationContext;
  calls: Array<{ name: string; arg?: unknown }>;
  closed: boolean;
}

export function recordingConversation(): { factory: ConversationFactory; sessions: Recorded[] } {
  const sessions: Recorded[] = [];
  const factory: ConversationFactory = (ctx) => {
    const rec: Recorded = { ctx, calls: [], closed: false };
    sessions.push(rec);
    const conv: Conversation = {
      busy: false,
      listenStart: (mode) => rec.calls.push({ name: 'listenStart', arg: mode }),
      listenStop: () => {
        rec.calls.push({ name: 'listenStop' });
        ctx.state.apply('listen_stop');
      },
      detect: (text) => rec.calls.push({ name: 'detect', arg: text }),
      audio: (packet) => rec.calls.push({ name: 'audio', arg: packet.byteLength }),
      abort: (reason) => {
        rec.calls.push({ name: 'abort', arg: reason });
        ctx.channel.sendJson({ type: 'tts', state: 'stop', session_id: ctx.info.sessionId });
        ctx.state.apply('abort');
      },
      mcp: (payload) => rec.calls.push({ name: 'mcp', arg: payload }),
      say: (text) => {
        rec.calls.push({ name: 'say', arg: text });
        return 'spoken';
      },
      drain: async () => {},
      close: async () => {
        rec.closed = true;
      },
    };
    return conv;
  };
  return { factory, sessions };
}
