/**
 * @module CosyVoice's start-up check (`TtsProvider.probe`): DashScope has no `/models` to ask, so
 * it opens one connection with the configured key (`connection.ts`), starts a task with the
 * configured model, voice and audio settings and ends it at once with `finish-task`: no text is
 * sent, so nothing is synthesised or billed. The handshake judges the key, `run-task` the model
 * and voice. Whatever happens, the connection and the timer are gone when it settles, within
 * `timeoutMs`.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import { DashscopeSocket } from './connection.ts';
import { failure, finishTask, runTask, type DashscopeEvent } from './messages.ts';
import type { CosyVoiceTtsOptions } from './tts-options.ts';

/** What `TtsProvider.probe` answers (its kinds are the doctor's; the registry's type checks they match). */
export type CosyVoiceProbeResult = {
  problem: 'unreachable' | 'key_refused' | 'model_missing' | 'voice_missing';
  detail: string;
} | null;

/** A `task-failed` or close reason that says the model does not exist (close 1007 for some models). */
const MODEL_MISSING = /model ?not ?found|model.*(not exist|does not exist)/i;
/** The voice: unknown, or of another model generation (the engine's 418 says only the number). */
const VOICE_MISSING = /voice|engine return error code: ?418/i;
/** A key that opens the connection but may not use the model (another workspace, no access, arrears). */
const KEY_REFUSED = /access ?denied|unauthori[sz]ed|invalid ?api-?key|arrearage/i;

/** What a `task-failed` says about the configuration; null when it is not the key, model or voice. */
function classifyFailure(code: string, message: string): CosyVoiceProbeResult {
  const detail = `task-failed ${code}${message ? `: ${message}` : ''}`;
  const text = `${code} ${message}`;
  if (MODEL_MISSING.test(text)) return { problem: 'model_missing', detail };
  if (VOICE_MISSING.test(text)) return { problem: 'voice_missing', detail };
  if (KEY_REFUSED.test(text)) return { problem: 'key_refused', detail };
  // A rate limit, the service's own trouble, another setting: not what the start-up check names;
  // the first answer's warn line does.
  return null;
}

/** Why the connection could not be used: a refused handshake is the key; the rest is reachability. */
function classifyLoss(socket: DashscopeSocket, error: VoiceError): CosyVoiceProbeResult {
  const status = socket.refusedStatus;
  if (status === 401 || status === 403) return { problem: 'key_refused', detail: error.message };
  if (MODEL_MISSING.test(error.message)) return { problem: 'model_missing', detail: error.message };
  return { problem: 'unreachable', detail: error.message };
}

export function probeCosyVoice(o: CosyVoiceTtsOptions, timeoutMs: number): Promise<CosyVoiceProbeResult> {
  return new Promise<CosyVoiceProbeResult>((resolve) => {
    const taskId = randomUUID().replaceAll('-', '');
    const socket = new DashscopeSocket(o, silentLogger);
    let settled = false;
    let started = false;
    // The one bound on the whole check: connection, handshake, task-started and task-finished.
    const timer = setTimeout(
      () =>
        settle({
          problem: 'unreachable',
          detail: started
            ? `the probe task started but did not finish within ${timeoutMs} ms`
            : `no task-started within ${timeoutMs} ms`,
        }),
      timeoutMs,
    );
    const settle = (result: CosyVoiceProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.close();
      resolve(result);
    };
    socket.listen({
      event: (e: DashscopeEvent) => {
        if (e.header.task_id !== undefined && e.header.task_id !== taskId) return;
        switch (e.header.event) {
          case 'task-started':
            if (started) return;
            started = true;
            // No continue-task: the task ends with nothing to speak.
            socket.send(finishTask(taskId));
            return;
          case 'task-finished':
            settle(null);
            return;
          case 'task-failed': {
            const { code, message } = failure(e);
            settle(classifyFailure(code, message));
            return;
          }
          default:
            // result-generated for a task without text: nothing to judge.
            return;
        }
      },
      // Audio for a task without text is not expected; it changes nothing about the verdict.
      audio: () => undefined,
      lost: (error) => settle(classifyLoss(socket, error)),
    });
    socket.ready.then(
      () => {
        if (!settled && !socket.send(runTask(o, taskId)))
          settle(
            classifyLoss(
              socket,
              new VoiceError(ErrorCode.ProviderUnavailable, 'dashscope: the connection closed before run-task'),
            ),
          );
      },
      (error: unknown) =>
        settle(
          classifyLoss(
            socket,
            error instanceof VoiceError ? error : new VoiceError(ErrorCode.ProviderUnavailable, String(error)),
          ),
        ),
    );
  });
}
