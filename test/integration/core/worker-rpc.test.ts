/**
 * The worker RPC (core/worker-rpc*.ts) with real worker threads (test/fixtures/rpc-worker.ts):
 * calls made while the worker loads wait for it; answers, streamed items, errors with their code,
 * moved buffers and calls back to the main thread cross; an abort or a consumer that stops
 * reading cancels the call in the worker; worker log lines come out of the main logger; a worker
 * that dies fails exactly its calls in flight with one error and is replaced at once, one that
 * cannot load after a delay; close asks the worker to exit.
 */
import { afterEach, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { ErrorCode, VoiceError } from '../../../core/errors.ts';
import { startModuleWorker } from '../../../core/start-worker.ts';
import { WorkerRpc, type WorkerRpcOptions } from '../../../core/worker-rpc.ts';
import { createLogger } from '../../../server/logger.ts';
import type { FixtureApi, FixtureData, FixtureMainApi } from '../../fixtures/rpc-worker.ts';
import { createLogSink, type LogSink } from '../../helpers/log-sink.ts';
import { waitFor, within } from '../../helpers/wait.ts';

interface Rig {
  rpc: WorkerRpc<FixtureApi, FixtureMainApi>;
  /** Every worker started, in order. */
  workers: Worker[];
  /** What the worker asked the main thread. */
  asked: string[];
  /** Errors `onLost` was called with. */
  lost: VoiceError[];
  logs: LogSink;
}

const rigs: Rig[] = [];
afterEach(async () => {
  await Promise.all(rigs.splice(0).map((r) => r.rpc.close(new VoiceError(ErrorCode.Aborted, 'test over'), 1000)));
});

/** A WorkerRpc on the fixture; `modes` gives each started worker its mode (the last one repeats). */
function rig(modes: FixtureData[], more: Partial<WorkerRpcOptions<FixtureMainApi>> = {}): Rig {
  const logs = createLogSink();
  const r: Rig = { workers: [], asked: [], lost: [], logs } as unknown as Rig;
  r.rpc = new WorkerRpc<FixtureApi, FixtureMainApi>({
    label: 'fixture worker',
    start: () =>
      startModuleWorker(import.meta.url, '../../fixtures/rpc-worker', {
        workerData: modes[Math.min(r.workers.length, modes.length - 1)],
      }),
    log: createLogger({ level: 'debug', logContent: false, destination: logs.stream }),
    lostCode: ErrorCode.ProviderFailed,
    handlers: {
      answer: ({ q }) => {
        r.asked.push(q);
        return `main heard ${q}`;
      },
    },
    onWorker: (w) => r.workers.push(w),
    onLost: (err) => r.lost.push(err),
    ...more,
  });
  rigs.push(r);
  return r;
}

async function rejection(p: Promise<unknown>): Promise<VoiceError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof VoiceError, `expected a VoiceError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

test('calls made while the worker loads wait for it; answers, items, errors, moved buffers and calls back cross; logs come out of the main logger', {
  timeout: 30_000,
}, async () => {
  const { rpc, asked, logs } = rig([{ mode: 'ok', loadMs: 300 }]);
  const started = rpc.start();
  const early = rpc.request('echo', { text: 'early' });
  assert.equal(rpc.ready, false);
  await within(started, 20_000, 'ready');
  assert.equal(await early, 'early');

  const items: number[] = [];
  for await (const i of rpc.stream('count', { n: 5 })) items.push(i);
  assert.deepEqual(items, [0, 1, 2, 3, 4]);

  const err = await rejection(
    rpc.request('fail', { code: ErrorCode.RateLimited, message: 'slow down', retryable: true }),
  );
  assert.deepEqual([err.code, err.message, err.retryable], [ErrorCode.RateLimited, 'slow down', true]);

  const data = new Uint8Array([1, 2, 3]);
  const back = await rpc.request('bytes', { data }, { transfer: [data.buffer] });
  assert.equal(data.byteLength, 0, 'the buffer was moved, not copied');
  assert.deepEqual([...back], [1, 2, 3]);

  assert.equal(await rpc.request('ask', { q: 'are you there' }), 'main heard are you there');
  assert.deepEqual(asked, ['are you there']);

  const loaded = logs.find('fixture loaded');
  assert.equal(loaded.length, 1);
  assert.equal(loaded[0]?.part, 'fixture', "the worker logger's bindings are in the line");
  assert.equal(loaded[0]?.loadMs, 300);
  assert.equal(rpc.pending, 0);
});

test('an abort rejects at once and cancels the call in the worker; so does a consumer that stops reading', {
  timeout: 30_000,
}, async () => {
  const { rpc, asked } = rig([{ mode: 'ok' }]);
  await within(rpc.start(), 20_000, 'ready');
  const ac = new AbortController();
  const waiting = rpc.request('wait', {}, { signal: ac.signal });
  ac.abort();
  assert.equal((await rejection(waiting)).code, ErrorCode.Aborted);
  assert.equal(rpc.pending, 0);
  await waitFor(() => asked.includes('wait cancelled'), { what: 'the worker saw the cancel', timeoutMs: 10_000 });

  // A long-lived signal (a session's, a turn's) keeps no listener of a call that is over.
  const turn = new AbortController();
  assert.equal(await rpc.request('echo', { text: 'answered' }, { signal: turn.signal }), 'answered');
  let n = 0;
  for await (const i of rpc.stream('endless', {}, { signal: turn.signal })) {
    assert.equal(i, n++);
    if (n === 3) break;
  }
  await waitFor(() => asked.includes('endless cancelled'), {
    what: 'the worker saw the stream cancelled',
    timeoutMs: 10_000,
  });
  assert.equal(rpc.pending, 0);
  assert.equal(getEventListeners(turn.signal, 'abort').length, 0, 'no listener left on the signal');
});

test('a worker that dies fails exactly its calls in flight with one error and is replaced at once', {
  timeout: 30_000,
}, async () => {
  const { rpc, workers, lost, logs } = rig([{ mode: 'ok' }]);
  await within(rpc.start(), 20_000, 'ready');
  const inFlight = [
    rejection(rpc.request('wait', {})),
    rejection(rpc.request('wait', {})),
    rejection(
      (async () => {
        for await (const _ of rpc.stream('endless', {})) {
          // reading until the worker dies
        }
      })(),
    ),
  ];
  await waitFor(() => rpc.pending === 3, { what: 'the calls reached the worker', timeoutMs: 10_000 });
  await workers[0]?.terminate();
  const errors = await within(Promise.all(inFlight), 10_000, 'the calls fail');
  assert.equal(errors[0]?.code, ErrorCode.ProviderFailed);
  assert.match(errors[0]?.message ?? '', /fixture worker exited/);
  assert.ok(
    errors.every((e) => e === errors[0]),
    'one error for every call in flight',
  );
  assert.deepEqual(lost, [errors[0]]);
  assert.equal(rpc.restarts, 1);
  // Replaced at once: the next call waits for the new worker instead of failing.
  assert.equal(workers.length, 2);
  assert.equal(await within(rpc.request('echo', { text: 'again' }), 20_000, 'echo on the new worker'), 'again');
  assert.equal(logs.find('fixture worker failed').length, 0, 'a terminated worker is not an uncaught error');
});

test('a replacement that cannot load is retried after 1 s; calls meanwhile fail as retryable provider_unavailable', {
  timeout: 30_000,
}, async () => {
  const exits: number[] = [];
  const { rpc, workers, logs } = rig([{ mode: 'ok' }, { mode: 'loadFails' }, { mode: 'ok' }], {
    onExit: () => exits.push(exits.length),
  });
  await within(rpc.start(), 20_000, 'ready');
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    await workers[0]?.terminate();
    // The replacement starts at once, reports that it cannot load, and is ended; a call made
    // while it loads fails with its reason.
    assert.equal(workers.length, 2);
    const queued = rejection(rpc.request('echo', { text: 'queued' }));
    const loadFailed = new Promise<void>((resolve) => workers[1]?.once('exit', () => resolve()));
    await within(loadFailed, 20_000, 'the replacement fails to load');
    assert.equal((await queued).message, 'no model here');
    assert.equal(exits.length, 2);
    assert.equal(rpc.alive, false);
    const err = await rejection(rpc.request('echo', { text: 'too early' }));
    assert.deepEqual([err.code, err.retryable], [ErrorCode.ProviderUnavailable, true]);
    mock.timers.tick(999);
    assert.equal(workers.length, 2, 'no new worker before the delay');
    mock.timers.tick(1);
    assert.equal(workers.length, 3, 'a new worker after the delay');
  } finally {
    mock.timers.reset();
  }
  assert.equal(await within(rpc.request('echo', { text: 'back' }), 20_000, 'echo on the third worker'), 'back');
  assert.equal(rpc.restarts, 2);
  assert.equal(logs.find('fixture worker could not load')[0]?.err, 'no model here');
});

test('a first worker that cannot load: start rejects with its error and nothing is restarted', {
  timeout: 30_000,
}, async () => {
  const { rpc, workers, lost } = rig([{ mode: 'loadFails' }, { mode: 'ok' }]);
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const err = await rejection(rpc.start());
    assert.deepEqual([err.code, err.message], [ErrorCode.ProviderUnavailable, 'no model here']);
    mock.timers.tick(60_000);
    assert.equal(workers.length, 1);
  } finally {
    mock.timers.reset();
  }
  assert.deepEqual(lost, []);
  assert.equal(rpc.restarts, 0);
});

test('close asks the worker to exit (its exit work runs first), fails the calls in flight and every later one', {
  timeout: 30_000,
}, async () => {
  const { rpc, workers, asked } = rig([{ mode: 'ok' }]);
  await within(rpc.start(), 20_000, 'ready');
  const exitCode = new Promise<number>((resolve) => workers[0]?.once('exit', resolve));
  const waiting = rejection(rpc.request('wait', {}));
  const closing = new VoiceError(ErrorCode.Aborted, 'closing');
  await within(rpc.close(closing), 10_000, 'close');
  assert.equal(await waiting, closing);
  assert.equal(await exitCode, 0, 'the worker exited by itself, not terminated');
  assert.ok(asked.includes('exiting'), "the worker's exit work ran");
  assert.equal(await rejection(rpc.request('echo', { text: 'late' })), closing);
  assert.equal(workers.length, 1, 'not restarted');
  assert.equal(rpc.restarts, 0);
});
