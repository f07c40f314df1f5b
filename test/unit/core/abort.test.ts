import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { linkedScope, nextUnlessAborted, runScoped, watchStart, type StartWatch } from '../../../core/abort.ts';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';

const listeners = (s: AbortSignal): number => getEventListeners(s, 'abort').length;
const isCode = (code: ErrorCode) => (err: unknown) => err instanceof VoiceError && err.code === code;

describe('linkedScope', () => {
  test("a parent's abort reaches the scope; dispose unhooks it, and it is idempotent", () => {
    const parent = new AbortController();
    const scope = linkedScope([parent.signal, undefined]);
    assert.equal(listeners(parent.signal), 1);
    parent.abort('bye');
    assert.equal(scope.signal.aborted, true);
    assert.equal(scope.signal.reason, 'bye');
    assert.equal(scope.abortedByParent, true);
    assert.equal(listeners(parent.signal), 0, 'unhooked when it fired');
    scope.dispose();
    scope.dispose();
  });

  test('the scope can be aborted alone; the parent is untouched and no listener is left', () => {
    const parent = new AbortController();
    const scope = linkedScope(parent.signal);
    scope.abort('done');
    assert.equal(scope.signal.aborted, true);
    assert.equal(scope.abortedByParent, false);
    assert.equal(parent.signal.aborted, false);
    assert.equal(listeners(parent.signal), 0);
  });

  test('an already aborted parent gives an aborted scope; a timeout aborts with a retryable Timeout', async () => {
    assert.equal(linkedScope(AbortSignal.abort('x')).abortedByParent, true);
    const scope = linkedScope(undefined, { timeoutMs: 20, what: 'slow thing' });
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(scope.timedOut, true);
    const reason = scope.signal.reason as VoiceError;
    assert.equal(reason.code, ErrorCode.Timeout);
    assert.equal(reason.retryable, true);
    assert.match(reason.message, /slow thing timed out after 20 ms/);
  });
});

describe('runScoped', () => {
  test('10,000 calls on one long-lived signal leave no listener on it, even when the work leaks listeners on its own signal', async () => {
    const turn = new AbortController();
    for (let i = 0; i < 10_000; i++) {
      await runScoped(
        turn.signal,
        async (s) => {
          // What the MCP SDK does per request: a listener it never removes.
          s.addEventListener('abort', () => {});
          return i;
        },
        { timeoutMs: 60_000 },
      );
    }
    assert.equal(listeners(turn.signal), 0);
  });

  test('settles at once when the parent aborts, even if the work ignores its signal', async () => {
    const turn = new AbortController();
    const p = runScoped(turn.signal, () => new Promise<never>(() => {}));
    setTimeout(() => turn.abort('barge-in'), 10);
    await assert.rejects(p, isCode(ErrorCode.Aborted));
    assert.equal(listeners(turn.signal), 0);
  });

  test("a timeout rejects with Timeout; the work's own result and error pass through", async () => {
    await assert.rejects(
      runScoped(undefined, () => new Promise<never>(() => {}), { timeoutMs: 20, what: 'page 3' }),
      (err: unknown) => isCode(ErrorCode.Timeout)(err) && /page 3 timed out/.test((err as Error).message),
    );
    assert.equal(await runScoped(undefined, async () => 42), 42);
    await assert.rejects(
      runScoped(undefined, async () => {
        throw new Error('own failure');
      }),
      /own failure/,
    );
    await assert.rejects(
      runScoped(AbortSignal.abort(), async () => 1),
      isCode(ErrorCode.Aborted),
    );
  });
});

describe('nextUnlessAborted', () => {
  test('passes items through and leaves no listener on the signal once each is in', async () => {
    const ac = new AbortController();
    async function* gen(): AsyncGenerator<number> {
      for (let i = 0; i < 3; i++) yield i;
    }
    const it = gen();
    const got: number[] = [];
    for (;;) {
      const r = await nextUnlessAborted(it, ac.signal);
      assert.equal(listeners(ac.signal), 0);
      if (r.done) break;
      got.push(r.value);
    }
    assert.deepEqual(got, [0, 1, 2]);
  });

  test('an abort ends the wait for a stalled producer; an aborted signal does not call next()', async () => {
    const ac = new AbortController();
    let calls = 0;
    const stalled: AsyncIterator<number> = {
      next: () => {
        calls++;
        return new Promise<IteratorResult<number>>(() => {});
      },
    };
    const pending = nextUnlessAborted(stalled, ac.signal);
    setTimeout(() => ac.abort(), 20);
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.deepEqual(await nextUnlessAborted(stalled, ac.signal), { done: true, value: undefined });
    assert.equal(calls, 1);
  });

  test("the producer's error is passed on", async () => {
    const failing: AsyncIterator<number> = { next: () => Promise.reject(new Error('source broke')) };
    await assert.rejects(nextUnlessAborted(failing, new AbortController().signal), /source broke/);
  });
});

describe('watchStart', () => {
  const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  /** A watch whose handlers record what ran; each disposes the watch, as an owner's teardown does. */
  function recorded(signal: AbortSignal | undefined, startTimeoutMs: number) {
    const ran: string[] = [];
    const watch: StartWatch = watchStart(signal, {
      startTimeoutMs,
      timeoutMessage: 'no start',
      onAbort: (reason) => {
        ran.push(`abort:${String(reason)}`);
        watch.dispose();
      },
      onTimeout: (error) => {
        assert.equal(error.code, ErrorCode.Timeout);
        assert.equal(error.retryable, true);
        ran.push(`timeout:${error.message}`);
        watch.dispose();
      },
    });
    return { ran, watch };
  }

  test('an already aborted signal: arm() runs onAbort at once, returns false and arms nothing', async () => {
    const parent = new AbortController();
    parent.abort('gone');
    const { ran, watch } = recorded(parent.signal, 20);
    assert.equal(watch.arm(), false);
    assert.deepEqual(ran, ['abort:gone']);
    assert.equal(listeners(parent.signal), 0);
    await wait(60);
    assert.deepEqual(ran, ['abort:gone'], 'no timeout after the abort');
  });

  test("a later abort runs onAbort once with the signal's reason; the deadline is cleared and the signal unhooked", async () => {
    const parent = new AbortController();
    const { ran, watch } = recorded(parent.signal, 20);
    assert.equal(watch.arm(), true);
    assert.equal(listeners(parent.signal), 1);
    parent.abort('bye');
    assert.deepEqual(ran, ['abort:bye']);
    assert.equal(listeners(parent.signal), 0);
    await wait(60);
    assert.deepEqual(ran, ['abort:bye']);
  });

  test('the deadline runs onTimeout once and unhooks the signal: a later abort runs nothing', async () => {
    const parent = new AbortController();
    const { ran, watch } = recorded(parent.signal, 20);
    watch.arm();
    await wait(60);
    assert.deepEqual(ran, ['timeout:no start']);
    assert.equal(listeners(parent.signal), 0);
    parent.abort('late');
    assert.deepEqual(ran, ['timeout:no start']);
  });

  test('started() stops the deadline but not the abort; dispose() unhooks and is idempotent', async () => {
    const parent = new AbortController();
    const { ran, watch } = recorded(parent.signal, 20);
    watch.arm();
    watch.started();
    await wait(60);
    assert.deepEqual(ran, [], 'no timeout once started');
    parent.abort('stop');
    assert.deepEqual(ran, ['abort:stop']);

    const other = new AbortController();
    const second = recorded(other.signal, 20);
    second.watch.arm();
    second.watch.dispose();
    second.watch.dispose();
    assert.equal(listeners(other.signal), 0);
    other.abort('after');
    await wait(60);
    assert.deepEqual(second.ran, [], 'nothing runs after dispose');
  });

  test('at most one handler runs, once, even when the handlers leave the watch alone', async () => {
    const parent = new AbortController();
    const ran: string[] = [];
    const watch = watchStart(parent.signal, {
      startTimeoutMs: 20,
      timeoutMessage: 'no start',
      onAbort: () => ran.push('abort'),
      onTimeout: () => ran.push('timeout'),
    });
    watch.arm();
    await wait(60);
    parent.abort('late');
    assert.deepEqual(ran, ['timeout']);
    assert.equal(listeners(parent.signal), 0);
  });

  test('without a signal only the deadline is watched', async () => {
    const { ran, watch } = recorded(undefined, 20);
    assert.equal(watch.arm(), true);
    await wait(60);
    assert.deepEqual(ran, ['timeout:no start']);
  });
});
