/**
 * Property over one device MCP exchange: a device with the `mcp` feature answers the server's
 * initialize, tools/list pages and (when the probe tool is listed) tools/call with decoys and
 * fuzzed replies. The server must ask exactly what the protocol says next (tools/list only after
 * a successful initialize, the next page only for a fresh non-empty cursor), ignore every decoy,
 * show the model a bounded tool list, hand the tool's outcome to the model and end the turn, and
 * keep the session open throughout.
 */
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { DEVICE_TOOL_LIMITS } from '../../mcp/device-mcp.ts';
import { CloseCode } from '../../protocol/close-codes.ts';
import { within } from '../helpers/wait.ts';
import { assertServerMessagesValid, hangUp, roundTrip, STEP_MS } from './connection-property.ts';
import { PROBE_TEXT, type FuzzServer } from './fuzz-server.ts';
import {
  PROBE_EXPOSED,
  PROBE_TOOL,
  renderDecoy,
  renderFinal,
  succeeds,
  type McpScript,
  type ReplyPlan,
} from './mcp-arbitraries.ts';

/** The server's page cap (mcp/device-mcp.ts default). */
const MAX_PAGES = 32;
/** Ends the listing when the script has no more pages. */
const LAST_PAGE: ReplyPlan = { decoys: [], final: { result: '{"tools":[]}', jsonrpc: true } };

type Rpc = { id?: unknown; method?: unknown; params?: Record<string, unknown> };

function requests(dev: DeviceSim): Rpc[] {
  return dev.json.filter((j) => j.msg.type === 'mcp').map((j) => j.msg.payload as Rpc);
}

async function nextRequest(dev: DeviceSim, seen: number, what: string): Promise<Rpc> {
  return dev.waitFor(what, () => requests(dev).filter((r) => typeof r.id === 'number')[seen], STEP_MS);
}

/** Sends decoys then the final reply; false when a frame was over the size limit (the server must close with 1009). */
function answer(fz: FuzzServer, dev: DeviceSim, plan: ReplyPlan, id: number): boolean {
  for (const text of [...plan.decoys.map((d) => renderDecoy(d, id)), renderFinal(plan.final, id)]) {
    dev.sendRaw(text);
    fz.count('mcp');
    if (Buffer.byteLength(text) > fz.srv.config.server.maxMessageBytes) return false;
  }
  return true;
}

class OverLimit extends Error {}

/** A reply over `maxMessageBytes` ends the connection: the only outcome the server may choose. */
function answerOrClose(fz: FuzzServer, dev: DeviceSim, plan: ReplyPlan, id: number): void {
  if (!answer(fz, dev, plan, id)) throw new OverLimit();
}

/** The cursor the server must follow after this page, or undefined when the listing ends. */
function nextCursor(plan: ReplyPlan, seen: Set<string>, page: number): string | undefined {
  if (!succeeds(plan.final) || plan.final.result === undefined) return undefined;
  const result: unknown = JSON.parse(plan.final.result);
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return undefined;
  const next = (result as { nextCursor?: unknown }).nextCursor;
  if (typeof next !== 'string' || next === '' || seen.has(next) || page + 1 >= MAX_PAGES) return undefined;
  return next;
}

/** Nesting depth of a JSON value, without recursion. */
function depth(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    max = Math.max(max, d);
    if (typeof v === 'object' && v !== null) for (const c of Object.values(v)) stack.push([c, d + 1]);
  }
  return max;
}

export async function runMcpExchange(fz: FuzzServer, script: McpScript): Promise<void> {
  fz.stats.cases++;
  const dev = new DeviceSim({ url: fz.srv.wsUrl, deviceId: fz.nextDeviceId(), protocolVersion: 1 });
  // A reset while we still write (after a reply over the limit) must not become an uncaught 'error'.
  dev.ws.on('error', () => {});
  const marker = `${PROBE_TEXT} case ${fz.stats.cases}`;
  try {
    await dev.hello({ mcp: true });
    const init = await nextRequest(dev, 0, 'initialize');
    assert.equal(init.method, 'initialize');
    answerOrClose(fz, dev, script.initialize, init.id as number);
    let asked = 1;
    if (succeeds(script.initialize.final)) {
      const seen = new Set<string>();
      let cursor = '';
      for (let page = 0; ; page++) {
        const list = await nextRequest(dev, asked++, `tools/list page ${page}`);
        assert.equal(list.method, 'tools/list');
        assert.equal(list.params?.cursor, cursor, 'the cursor of the page before');
        const plan = script.pages[page] ?? LAST_PAGE;
        answerOrClose(fz, dev, plan, list.id as number);
        const next = nextCursor(plan, seen, page);
        if (next === undefined) break;
        seen.add(next);
        cursor = next;
      }
    }
    // Two round trips: the reply just sent is handled, and so is whatever it set off.
    await roundTrip(dev);
    await roundTrip(dev);
    assert.equal(
      requests(dev).filter((r) => typeof r.id === 'number').length,
      asked,
      'no request beyond the protocol (decoys settle nothing)',
    );

    const llmFrom = fz.llm.requests.length;
    dev.listen('detect', { text: marker });
    const mine = () => fz.llm.requests.slice(llmFrom).filter((r) => JSON.stringify(r.body.messages).includes(marker));
    await dev.waitFor('the model asked', () => mine().length > 0, STEP_MS);
    const tools = (mine()[0]?.body.tools ?? []).map((t) => t.function);
    const deviceTools = tools.filter((t) => t.name.startsWith('fz') || t.name === PROBE_EXPOSED);
    assert.ok(deviceTools.length <= DEVICE_TOOL_LIMITS.tools, `${deviceTools.length} device tools reached the model`);
    for (const t of deviceTools)
      assert.ok(
        depth(t.parameters) <= DEVICE_TOOL_LIMITS.schemaDepth,
        `tool ${t.name.slice(0, 40)} schema depth ${depth(t.parameters)}`,
      );
    assert.equal(
      deviceTools.some((t) => t.name === PROBE_EXPOSED),
      script.probe,
      'the probe is offered exactly when it was listed',
    );

    if (script.probe) {
      const call = await nextRequest(dev, asked++, 'tools/call');
      assert.equal(call.method, 'tools/call');
      assert.equal(call.params?.name, PROBE_TOOL);
      const ttsFrom = dev.json.length;
      answerOrClose(fz, dev, script.call, call.id as number);
      // The turn ends whatever the reply was: audio in it is played (or fails to decode) and ends
      // the turn, anything else goes back to the model, whose short answer is spoken; tts stop follows.
      await dev.waitJson('tts', 'stop', STEP_MS * 2, ttsFrom);
      if (!succeeds(script.call.final)) {
        const outcome = mine()
          .find((r) => r.body.messages.at(-1)?.role === 'tool')
          ?.body.messages.at(-1);
        assert.match(String(outcome?.content), /failed/, 'a device error is reported to the model as a failure');
      }
    }
    assert.equal(dev.closeCode, null, `closed with ${dev.closeCode}: an MCP reply must never end the session`);
    assertServerMessagesValid(dev);
  } catch (err) {
    if (!(err instanceof OverLimit)) throw err;
    const code = await within(dev.closed, STEP_MS, 'the close after a reply over the size limit');
    assert.equal(code, CloseCode.TooBig, `closed with ${code} after a reply over the size limit`);
  } finally {
    await hangUp(fz, dev);
  }
  fz.assertHealthy('device MCP exchange');
}
