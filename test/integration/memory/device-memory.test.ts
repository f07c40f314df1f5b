/**
 * The server's device memory over a real SQLite store: the summary is written after a session by
 * the agent's model, folds only the turns past those given back, and when the model fails the
 * turns stay and the summary is written at the next attempt; a session records nothing in mode
 * `none`, and gives back only its own agent's turns. The model is a scripted `LlmClient` (the
 * cloud service is the one thing faked).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import type { LlmClient, LlmEvent, LlmStreamRequest } from '../../../llm/types.ts';
import { DeviceMemory } from '../../../features/memory/device-memory.ts';
import type { SessionInfo } from '../../../voice/session/conversation.ts';
import { open, sqliteTarget } from '../../helpers/store-targets.ts';

const DEV = 'a8:00:00:00:00:01';
const CLIENT = 'client-of-a8-01';
const PAIR = { deviceId: DEV, clientId: CLIENT };

class ScriptedLlm implements LlmClient {
  readonly model = 'scripted';
  failing = true;
  readonly asked: LlmStreamRequest[] = [];
  async *stream(req: LlmStreamRequest): AsyncIterable<LlmEvent> {
    this.asked.push(req);
    if (this.failing) throw new Error('model unreachable');
    yield { type: 'text_delta', text: 'The user has a daughter, Mia.' };
    yield { type: 'done', finishReason: 'stop' };
  }
}

const info = { deviceId: DEV, clientId: CLIENT } as unknown as SessionInfo;
const settings = {
  historyTurns: 1,
  historyChars: 4000,
  retentionDays: 90,
  maxTurnsPerDevice: 1000,
  summaryRetryMs: 1000,
};

describe('device memory on the server', () => {
  const target = sqliteTarget();
  after(() => target.close());

  test('the summary waits while the model fails, loses nothing, and folds only the turns past those given back', async () => {
    const store = await open(await target.fresh());
    const llm = new ScriptedLlm();
    const memory = new DeviceMemory({
      store: store.memory,
      settings,
      agentOf: () => ({ agent: 'home', llm }),
      log: silentLogger,
    });
    try {
      const s = memory.forSession(info);
      assert.ok(s);
      assert.deepEqual(await s.use('home', 'summary'), []);
      s.record([
        { role: 'user', content: 'my daughter is Mia' },
        { role: 'assistant', content: 'Nice name.' },
      ]);
      s.record([
        { role: 'user', content: 'what time is it' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'get_current_datetime', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'c1', content: 'noon' },
        { role: 'assistant', content: 'It is noon.' },
      ]);
      s.close();
      await memory.settle();
      assert.equal(llm.asked.length, 1, 'the model was asked once, after the session');
      assert.equal(await store.memory.summary(PAIR, 'home'), undefined, 'no summary while the model fails');
      assert.equal((await store.memory.history(DEV, 10)).length, 5, 'every turn kept');

      llm.failing = false;
      await new Promise((r) => setTimeout(r, 1500));
      await memory.settle();
      const summary = await store.memory.summary(PAIR, 'home');
      assert.equal(summary?.text, 'The user has a daughter, Mia.');
      const asked = JSON.stringify(llm.asked.at(-1)?.messages);
      assert.match(asked, /my daughter is Mia/);
      assert.doesNotMatch(asked, /what time is it/, 'the turn given back as it is is not folded');

      const next = memory.forSession(info);
      assert.ok(next);
      const back = await next.use('home', 'summary');
      assert.deepEqual(back, [
        { role: 'user', content: 'what time is it' },
        { role: 'assistant', content: '(tool used: get_current_datetime({}) → noon)' },
        { role: 'assistant', content: 'It is noon.' },
      ]);
      assert.match(next.block(), /"The user has a daughter, Mia\."/);
      assert.deepEqual(await next.use('other', 'summary'), [], 'another agent: nothing of this one');
      assert.equal(next.block(), '');
      await next.use('home', 'history');
      assert.equal(next.block(), '', 'history mode: no facts or summary in the prompt');
    } finally {
      await memory.close();
      await store.close();
    }
  });

  test('a session opened right after the last one ended finds its turns (still queued for the database)', async () => {
    const store = await open(await target.fresh());
    const memory = new DeviceMemory({
      store: store.memory,
      settings: { ...settings, historyTurns: 5 },
      agentOf: () => ({ agent: 'home', llm: new ScriptedLlm() }),
      log: silentLogger,
    });
    try {
      const first = memory.forSession(info);
      assert.ok(first);
      await first.use('home', 'history');
      first.record([
        { role: 'user', content: 'my name is Ann' },
        { role: 'assistant', content: 'Hello Ann.' },
      ]);
      first.close();
      const next = memory.forSession(info);
      assert.ok(next);
      assert.deepEqual(await next.use('home', 'history'), [
        { role: 'user', content: 'my name is Ann' },
        { role: 'assistant', content: 'Hello Ann.' },
      ]);
    } finally {
      await memory.close();
      await store.close();
    }
  });

  test('a burst of hellos of other pairs does not force the queued turns out: they are stored in one batch', async () => {
    const store = await open(await target.fresh());
    const writes: number[] = [];
    const counting = new Proxy(store.memory, {
      get(t, prop, receiver) {
        const v: unknown = Reflect.get(t, prop, receiver);
        if (typeof v !== 'function') return v;
        const fn = v as (...a: unknown[]) => unknown;
        return prop === 'addTurns' ? (rows: unknown[]) => (writes.push(rows.length), fn.call(t, rows)) : fn.bind(t);
      },
    });
    const memory = new DeviceMemory({
      store: counting,
      settings: { ...settings, historyTurns: 5 },
      agentOf: () => ({ agent: 'home', llm: new ScriptedLlm() }),
      log: silentLogger,
    });
    try {
      const talking = memory.forSession(info);
      assert.ok(talking);
      await talking.use('home', 'history');
      talking.record([
        { role: 'user', content: 'my name is Ann' },
        { role: 'assistant', content: 'Hello Ann.' },
      ]);
      // 50 other devices say hello while Ann's turn waits for its batch.
      const others = Array.from({ length: 50 }, (_, i) =>
        memory.forSession({
          deviceId: `a9:00:00:00:00:${String(i).padStart(2, '0')}`,
          clientId: `c-${i}`,
        } as unknown as SessionInfo),
      );
      await Promise.all(others.map((o) => o?.use('home', 'history')));
      assert.deepEqual(writes, [], 'no hello of another pair wrote the queued turn');
      talking.close();
      await memory.settle();
      assert.deepEqual(writes, [2], 'one batch');
      for (const o of others) o?.close();
    } finally {
      await memory.close();
      await store.close();
    }
  });

  test('a database that hangs on the read does not hold the turn: past readTimeoutMs it answers without memory, and a later turn gets it', {
    timeout: 20_000,
  }, async () => {
    const store = await open(await target.fresh());
    await store.memory.addTurns([
      { ...PAIR, agent: 'home', role: 'user', text: 'my name is Ann' },
      { ...PAIR, agent: 'home', role: 'assistant', text: 'Hello Ann.' },
    ]);
    // The real store, with its reads held until released (as a database stuck on a lock would).
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const stuck = new Proxy(store.memory, {
      get(t, prop, receiver) {
        const v: unknown = Reflect.get(t, prop, receiver);
        if (typeof v !== 'function') return v;
        const fn = v as (...a: unknown[]) => unknown;
        return ['recentTurns', 'facts', 'summary'].includes(String(prop))
          ? async (...a: unknown[]) => (await held, fn.apply(t, a))
          : fn.bind(t);
      },
    });
    const memory = new DeviceMemory({
      store: stuck,
      settings: { ...settings, historyTurns: 5 },
      agentOf: () => ({ agent: 'home', llm: new ScriptedLlm() }),
      log: silentLogger,
      readTimeoutMs: 200,
    });
    try {
      const session = memory.forSession(info);
      assert.ok(session);
      const started = performance.now();
      await assert.rejects(session.use('home', 'history'), /device memory read timed out/);
      assert.ok(performance.now() - started < 5000, 'the turn was not held by the stuck read');
      release();
      assert.deepEqual(
        await session.use('home', 'history'),
        [
          { role: 'user', content: 'my name is Ann' },
          { role: 'assistant', content: 'Hello Ann.' },
        ],
        'asked again, it gets the memory',
      );
    } finally {
      release();
      await memory.close();
      await store.close();
    }
  });

  test('the server removes turns past retention by itself', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = await open(await target.fresh(), { now: () => now });
    await store.memory.addTurns([{ ...PAIR, agent: 'home', role: 'user', text: 'long ago' }]);
    now += 91 * 86_400_000;
    await store.memory.addTurns([{ ...PAIR, agent: 'home', role: 'user', text: 'today' }]);
    const memory = new DeviceMemory({
      store: store.memory,
      settings,
      agentOf: () => ({ agent: 'home', llm: new ScriptedLlm() }),
      log: silentLogger,
      pruneEveryMs: 50,
    });
    try {
      const end = Date.now() + 10_000;
      while ((await store.memory.history(DEV, 10)).length > 1 && Date.now() < end)
        await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(
        (await store.memory.history(DEV, 10)).map((t) => t.text),
        ['today'],
      );
    } finally {
      await memory.close();
      await store.close();
    }
  });

  test('a model that never answers the summary does not hold it: past the bound it is tried again', async () => {
    const store = await open(await target.fresh());
    let calls = 0;
    const llm: LlmClient = {
      model: 'hanging-once',
      async *stream(req: LlmStreamRequest): AsyncIterable<LlmEvent> {
        calls++;
        if (calls === 1) {
          // Hangs until its signal is aborted, as a stalled connection does.
          await new Promise((_, reject) =>
            req.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
          );
        }
        yield { type: 'text_delta', text: 'The user likes tea.' };
        yield { type: 'done', finishReason: 'stop' };
      },
    };
    const memory = new DeviceMemory({
      store: store.memory,
      settings: { ...settings, summaryRetryMs: 300 },
      agentOf: () => ({ agent: 'home', llm }),
      log: silentLogger,
      summaryTimeoutMs: 300,
    });
    try {
      const s = memory.forSession(info);
      assert.ok(s);
      await s.use('home', 'summary');
      s.record([
        { role: 'user', content: 'I like tea' },
        { role: 'assistant', content: 'Noted.' },
      ]);
      s.record([
        { role: 'user', content: 'and now?' },
        { role: 'assistant', content: 'Now.' },
      ]);
      s.close();
      const end = Date.now() + 10_000;
      while ((await store.memory.summary(PAIR, 'home')) === undefined && Date.now() < end)
        await new Promise((r) => setTimeout(r, 50));
      assert.equal((await store.memory.summary(PAIR, 'home'))?.text, 'The user likes tea.');
      assert.ok(calls >= 2, 'asked again after the first call was given up');
    } finally {
      await memory.close();
      await store.close();
    }
  });

  test('summaries are bounded: a fleet whose model is down is asked at most a few at a time, on session ends and on retries, and every one is written once it is back', async () => {
    const store = await open(await target.fresh());
    let inFlight = 0;
    let most = 0;
    let failing = true;
    const llm: LlmClient = {
      model: 'down-then-up',
      async *stream(): AsyncIterable<LlmEvent> {
        inFlight++;
        most = Math.max(most, inFlight);
        try {
          await new Promise((r) => setTimeout(r, 20));
          if (failing) throw new Error('model unreachable');
          yield { type: 'text_delta', text: 'A summary.' };
          yield { type: 'done', finishReason: 'stop' };
        } finally {
          inFlight--;
        }
      },
    };
    const memory = new DeviceMemory({
      store: store.memory,
      settings: { ...settings, historyTurns: 1, summaryRetryMs: 1000 },
      agentOf: () => ({ agent: 'home', llm }),
      log: silentLogger,
    });
    const pairs = Array.from({ length: 24 }, (_, i) => ({
      deviceId: `a8:00:00:00:01:${i.toString(16).padStart(2, '0')}`,
      clientId: `client-${i}`,
    }));
    try {
      // 24 sessions end at once (a shutdown's drain, a fleet's evening), each with turns to fold.
      for (const pair of pairs) {
        const s = memory.forSession(pair as unknown as SessionInfo);
        assert.ok(s);
        await s.use('home', 'summary');
        for (let t = 0; t < 3; t++)
          s.record([
            { role: 'user', content: `question ${t}` },
            { role: 'assistant', content: `answer ${t}` },
          ]);
        s.close();
      }
      await memory.settle();
      // A retry tick while the model is still down.
      await new Promise((r) => setTimeout(r, 1300));
      await memory.settle();
      failing = false;
      const end = Date.now() + 20_000;
      let written = 0;
      while (Date.now() < end) {
        written = 0;
        for (const pair of pairs) if ((await store.memory.summary(pair, 'home')) !== undefined) written++;
        if (written === pairs.length) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(written, pairs.length, 'every summary written once the model is back');
      assert.ok(most <= 4, `at most 4 summaries at once, saw ${most}`);
      assert.ok(most >= 2, `summaries do run side by side (saw ${most})`);
    } finally {
      await memory.close();
      await store.close();
    }
  });

  test('a session that ends after the memory closed (shutdown past its drain) asks neither the store nor the model', async () => {
    const store = await open(await target.fresh());
    const llm = new ScriptedLlm();
    llm.failing = false;
    let writes = 0;
    const counted = new Proxy(store.memory, {
      get(t, prop) {
        const v = Reflect.get(t, prop) as unknown;
        if (prop !== 'addTurns' || typeof v !== 'function') return typeof v === 'function' ? v.bind(t) : v;
        return (...a: unknown[]) => {
          writes++;
          return (v as (...x: unknown[]) => unknown).apply(t, a);
        };
      },
    });
    const memory = new DeviceMemory({
      store: counted,
      settings,
      agentOf: () => ({ agent: 'home', llm }),
      log: silentLogger,
    });
    try {
      const s = memory.forSession(info);
      assert.ok(s);
      await s.use('home', 'summary');
      await memory.close();
      s.record([
        { role: 'user', content: 'late words' },
        { role: 'assistant', content: 'late answer' },
      ]);
      s.close();
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(writes, 0, 'nothing written after close');
      assert.equal(llm.asked.length, 0, 'no summary asked for after close');
    } finally {
      await store.close();
    }
  });

  test('mode none stores nothing', async () => {
    const store = await open(await target.fresh());
    const memory = new DeviceMemory({
      store: store.memory,
      settings,
      agentOf: () => ({ agent: 'home', llm: new ScriptedLlm() }),
      log: silentLogger,
    });
    try {
      const s = memory.forSession(info);
      assert.ok(s);
      await s.use('home', 'none');
      s.record([
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi' },
      ]);
      s.close();
      await memory.settle();
      assert.deepEqual(await store.memory.history(DEV, 10), []);
    } finally {
      await memory.close();
      await store.close();
    }
  });
  test("memory is the pair's: a session with the same MAC and another Client-Id (or none) gets nothing; a change for one pair empties only its sessions", async () => {
    const store = await open(await target.fresh());
    const memory = new DeviceMemory({
      store: store.memory,
      settings: { ...settings, historyTurns: 5 },
      agentOf: () => ({ agent: 'home', llm: new ScriptedLlm() }),
      log: silentLogger,
      onChange: (l) => store.onChange(l),
    });
    try {
      await store.memory.addTurns([
        { ...PAIR, agent: 'home', role: 'user', text: 'my name is Ann' },
        { ...PAIR, agent: 'home', role: 'assistant', text: 'Hello Ann.' },
      ]);
      await store.memory.remember(PAIR, 'home', 'Ann likes tea');
      assert.equal(
        memory.forSession({ deviceId: DEV, clientId: null } as unknown as SessionInfo),
        undefined,
        'no Client-Id: no pair to keep memory under',
      );
      const stranger = memory.forSession({ deviceId: DEV, clientId: 'someone-else' } as unknown as SessionInfo);
      const owner = memory.forSession(info);
      assert.ok(stranger && owner);
      assert.deepEqual(await stranger.use('home', 'summary'), []);
      assert.equal(stranger.block(), '');
      assert.equal((await owner.use('home', 'summary')).length, 2);
      assert.match(owner.block(), /Ann likes tea/);
      // The stranger's pair deleted (the admin API): only its sessions drop what they hold.
      await store.memory.deleteDevice(DEV, 'someone-else');
      assert.equal(stranger.takeCleared(), true);
      assert.equal(owner.takeCleared(), false);
      stranger.close();
      owner.close();
    } finally {
      await memory.close();
      await store.close();
    }
  });
});
