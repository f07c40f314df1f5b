/**
 * A listener whose media worker dies: every packet in flight fails, and so does every packet the
 * device sends until its session is closed. That must be a handful of log lines, not one per
 * packet (a worker holds thousands of sessions). Real worker pool, real Opus packets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:worker_threads';
import { createMediaEngine } from '../../../audio/media/engine.ts';
import { createOpusCodec } from '../../../audio/opus/codec.ts';
import { createLogger } from '../../../server/logger.ts';
import { EndOfTurn } from '../../../voice/turn-end/end-of-turn.ts';
import { Listener } from '../../../voice/conversation/listener.ts';
import { createLogSink } from '../../helpers/log-sink.ts';
import { waitFor, within } from '../../helpers/wait.ts';
import { untilWorkerIdle } from '../../helpers/worker-idle.ts';

test('a lost media worker fails the uplink with a few log lines, not one per packet', { timeout: 90_000 }, async () => {
  const logs = createLogSink();
  const log = createLogger({ level: 'info', logContent: false, destination: logs.stream });
  const workers: Worker[] = [];
  const pool = await within(
    createMediaEngine({
      workers: 1,
      vadProvider: 'webrtc',
      espeak: { voice: 'en-us' },
      onWorker: (w) => workers.push(w),
      log,
    }),
    60_000,
    'pool start',
  );
  try {
    const media = await pool.open(
      { vad: { threshold: 0.5, minSilenceMs: 500 }, downlinkSampleRate: 24000, complexity: 5 },
      log,
    );
    let lost = false;
    media.onLost(() => (lost = true));
    const listener = new Listener({
      media,
      log,
      preRollMs: 300,
      maxUtteranceMs: 20_000,
      endOfTurn: new EndOfTurn({ completeSilenceMs: 250, minSilenceMs: 500, unfinishedSilenceMs: 1500 }, log),
      earlyStartMs: 0,
      onEvent: () => {},
    });
    listener.start('auto');
    const encoder = await createOpusCodec({ sampleRate: 16000 });
    const packet = encoder.encode(new Int16Array(960));
    encoder.close();

    const worker = workers[0];
    assert.ok(worker && workers.length === 1);
    await untilWorkerIdle(worker);
    await worker.terminate();
    await waitFor(() => lost, { what: 'the worker loss is noticed', timeoutMs: 20_000 });
    // The session is not closed yet (in the server that happens asynchronously): 250 packets arrive.
    for (let i = 0; i < 250; i++) {
      listener.push(packet);
      await new Promise((r) => setImmediate(r));
    }
    await waitFor(() => listener.failedPackets + listener.droppedPackets >= 250, {
      what: 'every packet settled',
      timeoutMs: 20_000,
    });
    const lines = logs.find('uplink processing failed');
    assert.ok(listener.failedPackets >= 200, `${listener.failedPackets} packets failed`);
    assert.ok(
      lines.length >= 1 && lines.length <= 4,
      `${lines.length} log lines for ${listener.failedPackets} failed packets`,
    );
    listener.close();
    media.close();
  } finally {
    await pool.close();
  }
});
