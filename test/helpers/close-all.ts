/**
 * Test clean-up that survives a set-up which stopped half-way: every resource that exists is
 * closed, in order, even when one of them fails to close; the first failure is rethrown at the
 * end. An `after` hook written as `await srv.close(); await llm.close()` throws on an unset `srv`
 * and leaves the fake LLM listening, and the test file then hangs instead of failing.
 */
export interface Closable {
  close(): unknown;
}

export async function closeAll(...items: Array<Closable | undefined | null>): Promise<void> {
  let first: unknown;
  let failed = false;
  for (const item of items) {
    if (!item) continue;
    try {
      await item.close();
    } catch (err) {
      if (!failed) first = err;
      failed = true;
    }
  }
  if (failed) throw first;
}
