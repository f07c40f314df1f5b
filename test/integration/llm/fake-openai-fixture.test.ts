// The fake LLM fixture itself must not leak: a slowly streamed reply waits once per chunk on the
// request's signal, and those waits used to leave their abort listeners behind
// (MaxListenersExceededWarning in every test run).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../../fixtures/fake-openai.ts';

let llm: FakeOpenAi;
before(async () => {
  llm = await startFakeOpenAi();
});
after(() => llm.close());

test('a reply streamed in 40 delayed chunks leaves no listener warning', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(`${w.name}: ${w.message}`);
  };
  process.on('warning', onWarning);
  try {
    llm.script(fakeText('x'.repeat(40), { chunkSize: 1, delayMs: 1 }));
    const res = await fetch(`${llm.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = await res.text();
    assert.equal((body.match(/"content":"x"/g) ?? []).length, 40, 'all 40 chunks streamed');
    // Warnings are emitted on the next tick.
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(
    warnings.filter((w) => w.includes('MaxListenersExceeded')),
    [],
  );
});
