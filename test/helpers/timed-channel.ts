/**
 * A device channel that records what was sent and when, on a test's clock: `tts start`,
 * `tts sentence_start`, `tts stop`, other message types by name, and `frame` for each audio packet.
 */
import type { Clock } from '../../core/clock.ts';
import type { DeviceChannel } from '../../voice/session/channel.ts';

export interface Sent {
  what: string;
  /** ms since the channel was made, on `clock`. */
  at: number;
}

export function timedChannel(clock: Clock): { channel: DeviceChannel; sent: Sent[]; t0: number } {
  const t0 = clock.now();
  const sent: Sent[] = [];
  const channel: DeviceChannel = {
    sendJson: (m) => sent.push({ what: m.type === 'tts' ? `tts ${m.state}` : m.type, at: clock.now() - t0 }),
    sendAudio: () => sent.push({ what: 'frame', at: clock.now() - t0 }),
    close: () => {},
    isOpen: true,
    bufferedBytes: 0,
  };
  return { channel, sent, t0 };
}
