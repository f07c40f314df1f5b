/**
 * The page's MCP server, answering the server's `{"type":"mcp"}` requests as the firmware does
 * (as the firmware does): integer ids only (others get no reply), notifications ignored, `initialize`,
 * `tools/list` paged by tool-name cursors under a byte budget, `tools/call` with the firmware's
 * argument checks and its error shape (`{"error":{"message"}}`, no code).
 */

/**
 * @typedef {{ type: 'integer', minimum?: number, maximum?: number, default?: number }
 *   | { type: 'string', default?: string, enum?: string[] }
 *   | { type: 'boolean', default?: boolean }} Prop
 * @typedef {{ name: string, description: string, properties: Record<string, Prop>,
 *   userOnly?: boolean, run: (args: Record<string, unknown>) => Promise<unknown> | unknown }} DeviceTool
 */

/** The firmware's page budget for `{"tools":[...]}`, in bytes. */
export const DEFAULT_PAGE_BYTES = 8000;

/** @param {DeviceTool} t */
function toolJson(t, withAnnotations = false) {
  /** @type {Record<string, unknown>} */
  const properties = {};
  const required = [];
  for (const [k, p] of Object.entries(t.properties)) {
    properties[k] = p;
    if (p.default === undefined) required.push(k);
  }
  /** @type {Record<string, unknown>} */
  const schema = { type: 'object', properties };
  if (required.length > 0) schema.required = required;
  /** @type {Record<string, unknown>} */
  const out = { name: t.name, description: t.description, inputSchema: schema };
  if (withAnnotations && t.userOnly) out.annotations = { audience: ['user'] };
  return out;
}

/** @param {unknown} v */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export class DeviceMcpServer {
  /**
   * @param {{ tools: DeviceTool[], send: (payload: object) => void, pageBytes?: number,
   *   onCall?: (name: string, args: Record<string, unknown>, result: { ok: boolean, text: string }) => void,
   *   serverInfo?: { name: string, version: string } }} opts
   */
  constructor(opts) {
    this.tools = opts.tools;
    this.send = opts.send;
    this.pageBytes = opts.pageBytes ?? DEFAULT_PAGE_BYTES;
    this.onCall = opts.onCall ?? (() => {});
    this.serverInfo = opts.serverInfo ?? { name: 'web-browser', version: '1.0.0' };
    this.stats = { initialize: 0, listPages: 0, calls: 0, ignored: 0 };
  }

  /** @param {unknown} payload the `payload` of an incoming `mcp` message */
  handle(payload) {
    if (!isObject(payload)) return void this.stats.ignored++;
    const msg = /** @type {Record<string, unknown>} */ (payload);
    if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string') return void this.stats.ignored++;
    if (msg.method.startsWith('notifications')) return;
    if ('params' in msg && !isObject(msg.params)) return void this.stats.ignored++;
    // The firmware reads the id as an integer and drops anything else without a reply.
    if (typeof msg.id !== 'number' || !Number.isInteger(msg.id)) return void this.stats.ignored++;
    const id = msg.id;
    const params = /** @type {Record<string, unknown>} */ (msg.params ?? {});
    switch (msg.method) {
      case 'initialize':
        this.stats.initialize++;
        return this.#reply(id, {
          protocolVersion: '2024-11-05',
          capabilities: { tools: {} },
          serverInfo: this.serverInfo,
        });
      case 'tools/list':
        return this.#list(id, params);
      case 'tools/call':
        return void this.#call(id, params);
      default:
        return this.#error(id, `Method not implemented: ${msg.method}`);
    }
  }

  /**
   * @param {number} id
   * @param {Record<string, unknown>} params
   */
  #list(id, params) {
    this.stats.listPages++;
    const cursor = typeof params.cursor === 'string' ? params.cursor : '';
    const withUser = params.withUserTools === true;
    const list = [];
    let size = '{"tools":[]}'.length;
    let found = cursor === '';
    let next;
    for (const t of this.tools) {
      if (!found) {
        if (t.name !== cursor) continue;
        found = true;
      }
      if (t.userOnly && !withUser) continue;
      const json = toolJson(t, withUser);
      const add = JSON.stringify(json).length + (list.length > 0 ? 1 : 0);
      if (size + add > this.pageBytes) {
        if (list.length === 0) return this.#error(id, `Failed to add tool ${t.name} because of payload size limit`);
        next = t.name;
        break;
      }
      list.push(json);
      size += add;
    }
    this.#reply(id, next ? { tools: list, nextCursor: next } : { tools: list });
  }

  /**
   * @param {number} id
   * @param {Record<string, unknown>} params
   */
  async #call(id, params) {
    if (typeof params.name !== 'string') return this.#error(id, 'Missing name');
    if ('arguments' in params && !isObject(params.arguments)) return this.#error(id, 'Invalid arguments');
    const tool = this.tools.find((t) => t.name === params.name);
    if (!tool) return this.#error(id, `Unknown tool: ${params.name}`);
    const given = /** @type {Record<string, unknown>} */ (params.arguments ?? {});
    /** @type {Record<string, unknown>} */
    const args = {};
    for (const [k, p] of Object.entries(tool.properties)) {
      const v = given[k];
      // As the firmware: a value of the wrong JSON type counts as missing.
      const ok =
        p.type === 'integer'
          ? typeof v === 'number'
          : p.type === 'string'
            ? typeof v === 'string'
            : typeof v === 'boolean';
      if (ok) args[k] = p.type === 'integer' ? Math.trunc(/** @type {number} */ (v)) : v;
      else if (p.default !== undefined) args[k] = p.default;
      else return this.#error(id, `Missing valid argument: ${k}`);
      if (p.type === 'integer') {
        const n = /** @type {number} */ (args[k]);
        if (p.minimum !== undefined && n < p.minimum)
          return this.#error(id, `Value is below minimum allowed: ${p.minimum}`);
        if (p.maximum !== undefined && n > p.maximum)
          return this.#error(id, `Value exceeds maximum allowed: ${p.maximum}`);
      }
    }
    this.stats.calls++;
    try {
      const r = await tool.run(args);
      const text =
        typeof r === 'string' ? r : typeof r === 'boolean' || typeof r === 'number' ? String(r) : JSON.stringify(r);
      this.onCall(tool.name, args, { ok: true, text });
      this.#reply(id, { content: [{ type: 'text', text }], isError: false });
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      this.onCall(tool.name, args, { ok: false, text });
      this.#error(id, text);
    }
  }

  /**
   * @param {number} id
   * @param {unknown} result
   */
  #reply(id, result) {
    this.send({ jsonrpc: '2.0', id, result });
  }

  /**
   * @param {number} id
   * @param {string} message
   */
  #error(id, message) {
    this.send({ jsonrpc: '2.0', id, error: { message } });
  }
}
