/**
 * @module The start-up check of the bidirectional synthesiser (the doctor's `probe`): one
 * connection with the configured credentials and resource, StartConnection, then StartSession
 * with the configured speaker and audio settings and no text, then CancelSession and
 * FinishConnection. Nothing is synthesised, so nothing is billed; what the vendor refuses on the
 * way names the setting to fix. Uses the provider's own connection (`tts-connection.ts`).
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import type { EventFrame } from './frames.ts';
import { VolcengineTtsConnection } from './tts-connection.ts';
import { payloadJson, startSessionPayload, TtsEvent, TtsStatusSchema, ttsReqParams } from './tts-messages.ts';
import type { VolcengineTtsOptions } from './tts-options.ts';
import { MAX_VENDOR_ERROR_CHARS } from './vendor-error.ts';

export interface VolcengineTtsProbeResult {
  problem: 'unreachable' | 'key_refused' | 'model_missing' | 'voice_missing';
  detail: string;
}

/** What the session said: started, or refused (SessionFailed or a request error), or the connection's end. */
type SessionAnswer = { started: true } | { started: false; error: VoiceError; sessionFailed: boolean };

/**
 * Null when the vendor took the key, resource and voice. Whatever happens, the socket and every
 * timer are released within `timeoutMs` (a vendor that does not answer is `unreachable`).
 */
export async function probeVolcengineTts(
  o: VolcengineTtsOptions,
  timeoutMs: number,
): Promise<VolcengineTtsProbeResult | null> {
  const conn = new VolcengineTtsConnection(o, silentLogger, () => {});
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const sessionId = randomUUID();
  try {
    const verdict = await Promise.race([check(conn, o, sessionId), deadline]);
    if (verdict === 'timeout')
      return { problem: 'unreachable', detail: `no answer from ${o.url} within ${timeoutMs} ms` };
    // Goodbye within what is left of the time; the socket is dropped below if it runs out.
    if (verdict === 'started') {
      conn.send(TtsEvent.CancelSession, sessionId, {});
      await Promise.race([conn.drain(sessionId, timeoutMs), deadline]);
    }
    conn.finish();
    await Promise.race([conn.closed, deadline]);
    return verdict === 'started' ? null : verdict;
  } finally {
    clearTimeout(timer);
    conn.terminate();
  }
}

async function check(
  conn: VolcengineTtsConnection,
  o: VolcengineTtsOptions,
  sessionId: string,
): Promise<'started' | VolcengineTtsProbeResult | null> {
  try {
    await conn.ready;
  } catch (err) {
    const refusal = conn.refusal;
    const detail = err instanceof Error ? err.message : String(err);
    if (refusal && 'connectionFailed' in refusal) return { problem: 'key_refused', detail };
    if (refusal && (refusal.httpStatus === 401 || refusal.httpStatus === 403))
      return { problem: 'key_refused', detail };
    return { problem: 'unreachable', detail };
  }
  const answer = await new Promise<SessionAnswer>((resolve) => {
    const user = {
      onFrame(frame: Extract<EventFrame, { kind: 'event' }>): void {
        if (frame.id !== sessionId) return;
        if (frame.event === TtsEvent.SessionStarted) {
          conn.detach(user);
          resolve({ started: true });
        } else if (frame.event === TtsEvent.SessionFailed) {
          conn.detach(user);
          const status = TtsStatusSchema.safeParse(payloadJson(frame.payload));
          const code = status.success ? (status.data.status_code ?? 0) : 0;
          const message = status.success ? (status.data.message ?? '') : '';
          resolve({
            started: false,
            sessionFailed: true,
            error: new VoiceError(
              ErrorCode.ProviderRejected,
              `volcengine tts refused the session: ${code} ${message.slice(0, MAX_VENDOR_ERROR_CHARS)}`,
            ),
          });
        }
      },
      onConnectionEnd(error: VoiceError): void {
        resolve({ started: false, sessionFailed: false, error });
      },
    };
    conn.attach(user);
    conn.send(TtsEvent.StartSession, sessionId, startSessionPayload(ttsReqParams(o)));
  });
  if (answer.started) return 'started';
  const detail = answer.error.message;
  // A refused session (SessionFailed, or an error frame about the request: 45xxxxxx) is about
  // what StartSession carried: the speaker and its resource, or `model` when one is written.
  if (answer.sessionFailed || answer.error.code === ErrorCode.ProviderRejected) {
    if (o.model !== undefined && /model/i.test(detail) && !/speaker|voice/i.test(detail))
      return { problem: 'model_missing', detail };
    return { problem: 'voice_missing', detail };
  }
  // The vendor's own failure or a dropped connection: nothing known to be wrong with the settings.
  return null;
}
