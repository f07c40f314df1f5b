/**
 * The conversation's side of a streaming recogniser (voice/conversation/recognition.ts) against a
 * scripted `StreamingAsr`: partials reach the callback until the final, a cancel reaches the
 * provider's signal and silences it, and a provider that never gives a final cannot hold the turn.
 */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { AsrStream, AsrStreamOptions, StreamingAsr } from '../../../audio/asr/asr.ts';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { silentLogger } from '../../../core/logger.ts';
import { Recognition } from '../../../voice/conversation/recognition.ts';

interface Scripted {
  asr: StreamingAsr;
  opened: AsrStreamOptions[];
  pushed: number[];
  resolveFinal(text: string): void;
}

function scripted(): Scripted {
  const opened: AsrStreamOptions[] = [];
  const pushed: number[] = [];
  let resolveFinal: (text: string) => void = () => {};
  const asr: StreamingAsr = {
    name: 'scripted',
    transcribe: async () => '',
    close: async () => {},
    openStream(opts: AsrStreamOptions): AsrStream {
      opened.push(opts);
      let final: Promise<string> | undefined;
      const finish = (): Promise<string> => {
        final ??= new Promise<string>((resolve, reject) => {
          resolveFinal = resolve;
          if (opts.signal.aborted) reject(new VoiceError(ErrorCode.Aborted, 'aborted'));
          opts.signal.addEventListener('abort', () => reject(new VoiceError(ErrorCode.Aborted, 'aborted')), {
            once: true,
          });
        });
        return final;
      };
      return { push: (pcm) => pushed.push(pcm.length), finish };
    },
  };
  return { asr, opened, pushed, resolveFinal: (t) => resolveFinal(t) };
}

describe('Recognition', () => {
  it('pushes audio, hands partials on, and resolves with the final; its stream is released after', async () => {
    const s = scripted();
    const partials: string[] = [];
    const parent = new AbortController();
    const rec = new Recognition(s.asr, {
      sampleRate: 16000,
      parent: parent.signal,
      log: silentLogger,
      onPartial: (t) => partials.push(t),
    });
    rec.push(new Int16Array(960));
    rec.push(new Int16Array(960));
    const opts = s.opened[0];
    assert.ok(opts);
    opts.onPartial('turn on');
    opts.onPartial('turn on the light');
    assert.equal(rec.partial, 'turn on the light');
    const final = rec.finish();
    assert.equal(rec.finish(), final, 'idempotent');
    opts.onPartial('late partial');
    s.resolveFinal('turn on the light.');
    assert.equal(await final, 'turn on the light.');
    assert.deepEqual(partials, ['turn on', 'turn on the light']);
    assert.deepEqual(s.pushed, [960, 960]);
    assert.equal(
      opts.signal.aborted,
      true,
      "the provider's signal is aborted once the final is in: nothing stays open",
    );
  });

  it("a cancel aborts the provider's signal and silences its callbacks", () => {
    const s = scripted();
    const partials: string[] = [];
    const rec = new Recognition(s.asr, {
      sampleRate: 16000,
      parent: new AbortController().signal,
      log: silentLogger,
      onPartial: (t) => partials.push(t),
    });
    rec.cancel('listen start');
    const opts = s.opened[0];
    assert.equal(opts?.signal.aborted, true);
    opts?.onPartial('too late');
    rec.push(new Int16Array(960));
    assert.deepEqual(partials, []);
    assert.deepEqual(s.pushed, []);
  });

  it("the session's end aborts the stream", () => {
    const s = scripted();
    const session = new AbortController();
    new Recognition(s.asr, { sampleRate: 16000, parent: session.signal, log: silentLogger, onPartial: () => {} });
    session.abort('closed');
    assert.equal(s.opened[0]?.signal.aborted, true);
  });

  it('a provider that never gives a final is cut off after 10 s', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const s = scripted();
      const rec = new Recognition(s.asr, {
        sampleRate: 16000,
        parent: new AbortController().signal,
        log: silentLogger,
        onPartial: () => {},
      });
      const final = rec.finish();
      mock.timers.tick(10_000);
      await assert.rejects(final, (err: unknown) => err instanceof VoiceError && err.code === ErrorCode.Timeout);
      assert.equal(s.opened[0]?.signal.aborted, true, 'and its connection is closed');
    } finally {
      mock.timers.reset();
    }
  });
});
