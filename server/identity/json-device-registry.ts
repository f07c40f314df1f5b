/**
 * @module The embedded device registry: one small JSON file (a few hundred bytes per device) on a
 * volume. Every change is a read-modify-write under a lock file, written to a temp file and renamed
 * into place, so the `devices` CLI and the running server can both change it and a crash never
 * leaves half a file. The server re-reads it when it changes (polling its mtime), which is how a
 * revocation from the CLI ends that device's session. Sizes are bounded: a stranger can fill at
 * most MAX_PENDING codes, each expiring, and every stored identity is a well-formed one.
 * A file that holds malformed rows anyway (edited by hand, or written by an older version) is
 * loaded without them and rewritten, with a warning; a file past the read limit is moved aside
 * with an error naming both files and what it held is salvaged, so the server still starts and
 * nothing is silently lost.
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import type { BindResult, BoundDevice, DeviceRegistry, IssuedCode, PendingCode } from './device-registry.ts';
import { pairKey } from './device-token.ts';
import { ClientIdSchema, DeviceIdSchema } from '../../protocol/ota.ts';
import type { Logger } from '../../core/logger.ts';

export const MAX_DEVICES = 10_000;
export const MAX_PENDING = 100;
const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** A file past MAX_FILE_BYTES is still parsed, up to this size, to salvage its valid rows. */
const MAX_SALVAGE_BYTES = 256 * 1024 * 1024;
const LOCK_WAIT_MS = 3_000;
const STALE_LOCK_MS = 10_000;

/** Generation 0: a row stored before rows had generations (its token is the pair's HMAC alone). */
const GenerationSchema = z.number().int().nonnegative().default(0);
const BoundRowSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{10}$/),
  deviceId: DeviceIdSchema,
  clientId: ClientIdSchema,
  boundAt: z.string().max(40),
  generation: GenerationSchema,
});
const PendingRowSchema = z.object({
  code: z.string().regex(/^\d{6}$/),
  deviceId: DeviceIdSchema,
  clientId: ClientIdSchema,
  expiresAt: z.number(),
  generation: GenerationSchema,
});
/** The rows are checked one by one (#read), so a bad row costs only itself. */
const FileSchema = z.object({
  version: z.literal(1),
  secret: z.string().min(32),
  /** The last generation given to a code; each new code takes the next. */
  generation: GenerationSchema,
  devices: z.array(z.unknown()),
  pending: z.array(z.unknown()),
});
interface RegistryFile {
  version: 1;
  secret: string;
  generation: number;
  devices: BoundDevice[];
  pending: PendingCode[];
}

class OversizeRegistryError extends Error {}

/** Where the registry reports rows it dropped and files it moved aside. */
export type RegistryLog = Pick<Logger, 'warn' | 'error'>;

/** Without a logger (the CLI): one line on stderr per event. */
const stderrLog: RegistryLog = {
  warn: (obj: object | string, msg?: string) => process.stderr.write(`warning: ${msg ?? ''} ${JSON.stringify(obj)}\n`),
  error: (obj: object | string, msg?: string) => process.stderr.write(`error: ${msg ?? ''} ${JSON.stringify(obj)}\n`),
};

export interface JsonDeviceRegistryOptions {
  file: string;
  /** Configured secret; empty: the file's own (generated on first use). */
  secret: string;
  codeTtlMs: number;
  /** How often the server looks for changes made by another process; 0: never (the CLI). */
  watchIntervalMs: number;
  now?: () => number;
  /** Default: stderr. */
  log?: RegistryLog;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function idOf(deviceId: string, clientId: string): string {
  return createHash('sha256').update(pairKey(deviceId, clientId)).digest('hex').slice(0, 10);
}

export class JsonDeviceRegistry implements DeviceRegistry {
  readonly #opts: JsonDeviceRegistryOptions;
  readonly #now: () => number;
  readonly #log: RegistryLog;
  #state: RegistryFile;
  #stamp = '';
  #bound = new Set<string>();
  #boundListeners: Array<(devices: BoundDevice[]) => void> = [];
  #revokedListeners: Array<(devices: BoundDevice[]) => void> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: JsonDeviceRegistryOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#log = opts.log ?? stderrLog;
    mkdirSync(dirname(opts.file), { recursive: true });
    this.#state = this.#open();
    this.#index();
    if (opts.watchIntervalMs > 0) {
      this.#timer = setInterval(() => this.#refresh(), opts.watchIntervalMs);
      this.#timer.unref();
    }
  }

  secret(): string {
    return this.#opts.secret || this.#state.secret;
  }

  isBound(deviceId: string, clientId: string): boolean {
    this.#refresh();
    return this.#bound.has(pairKey(deviceId, clientId));
  }

  binding(deviceId: string, clientId: string): BoundDevice | undefined {
    this.#refresh();
    const key = pairKey(deviceId, clientId);
    return this.#bound.has(key) ? this.#state.devices.find((d) => pairKey(d.deviceId, d.clientId) === key) : undefined;
  }

  pendingCode(rawDeviceId: string, rawClientId: string): IssuedCode | null {
    // Only well-formed identities are stored (the OTA route has refused the others already).
    const d = DeviceIdSchema.safeParse(rawDeviceId);
    const c = ClientIdSchema.safeParse(rawClientId);
    if (!d.success || !c.success) return null;
    const deviceId = d.data;
    const clientId = c.data;
    this.#refresh();
    const key = pairKey(deviceId, clientId);
    const now = this.#now();
    const live = this.#state.pending.find((p) => pairKey(p.deviceId, p.clientId) === key && p.expiresAt > now);
    if (live) return { ...live, created: false };
    // Decided from memory before touching the file: a stranger inventing fresh identities must not
    // turn every OTA request into a locked read and write of the registry once it is full.
    if (this.#state.pending.filter((p) => p.expiresAt > now).length >= MAX_PENDING) return null;
    let made: PendingCode | null = null;
    this.#mutate((s) => {
      s.pending = s.pending.filter((p) => p.expiresAt > now && pairKey(p.deviceId, p.clientId) !== key);
      if (s.pending.length >= MAX_PENDING) return;
      const used = new Set(s.pending.map((p) => p.code));
      let code: string;
      do code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      while (used.has(code));
      // The generation the binding by this code will have: never one an earlier binding had.
      s.generation += 1;
      made = { code, deviceId: deviceId.toLowerCase(), clientId: clientId.toLowerCase(), expiresAt: now + this.#opts.codeTtlMs, generation: s.generation };
      s.pending.push(made);
    });
    // Assigned inside the callback, which the compiler's narrowing does not follow.
    const issued = made as PendingCode | null;
    return issued ? { ...issued, created: true } : null;
  }

  bind(code: string): BindResult {
    let result: BindResult = { ok: false, reason: 'unknown or expired code' };
    this.#mutate((s) => {
      const now = this.#now();
      s.pending = s.pending.filter((p) => p.expiresAt > now);
      const p = s.pending.find((x) => x.code === code.trim());
      if (!p) return;
      const id = idOf(p.deviceId, p.clientId);
      const existing = s.devices.find((d) => d.id === id);
      if (!existing && s.devices.length >= MAX_DEVICES) {
        result = { ok: false, reason: 'registry full' };
        return;
      }
      // The code's generation, whose token OTA handed out with the code.
      const device: BoundDevice = { id, deviceId: p.deviceId, clientId: p.clientId, boundAt: new Date(now).toISOString(), generation: p.generation };
      s.devices = [...s.devices.filter((d) => d !== existing), device];
      s.pending = s.pending.filter((x) => x !== p);
      result = { ok: true, device };
    });
    return result;
  }

  list(): { bound: BoundDevice[]; pending: PendingCode[] } {
    this.#refresh();
    const now = this.#now();
    return { bound: [...this.#state.devices], pending: this.#state.pending.filter((p) => p.expiresAt > now) };
  }

  revoke(idOrDevice: string): BoundDevice[] {
    const needle = idOrDevice.trim().toLowerCase();
    let removed: BoundDevice[] = [];
    this.#mutate((s) => {
      removed = s.devices.filter((d) => d.id === needle || d.deviceId === needle || d.clientId === needle);
      s.devices = s.devices.filter((d) => !removed.includes(d));
    });
    return removed;
  }

  onBound(listener: (devices: BoundDevice[]) => void): void {
    this.#boundListeners.push(listener);
  }

  onRevoked(listener: (devices: BoundDevice[]) => void): void {
    this.#revokedListeners.push(listener);
  }

  close(): void {
    clearInterval(this.#timer);
    this.#boundListeners = [];
    this.#revokedListeners = [];
  }

  #stampOf(): string {
    try {
      const st = statSync(this.#opts.file);
      return `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      return '';
    }
  }

  /** The state at start: a file with malformed rows or past the size limit is repaired first. */
  #open(): RegistryFile {
    try {
      const loaded = this.#read(MAX_FILE_BYTES);
      if (loaded && loaded.dropped === 0) return loaded.state;
    } catch (err) {
      if (!(err instanceof OversizeRegistryError)) throw err;
    }
    // Missing, malformed rows or too large: the locked rewrite creates, purges or sets it aside.
    return this.#mutate(() => undefined);
  }

  /**
   * The file's content without its malformed rows (`dropped` counts them), or null when it does
   * not exist yet. Throws on a file that is not a registry at all (the owner must look) and
   * OversizeRegistryError past `maxBytes`.
   */
  #read(maxBytes: number): { state: RegistryFile; dropped: number } | null {
    let text: string;
    try {
      const size = statSync(this.#opts.file).size;
      if (size > maxBytes) throw new OversizeRegistryError(`device registry ${this.#opts.file} is larger than ${maxBytes} bytes (${size})`);
      this.#stamp = this.#stampOf();
      text = readFileSync(this.#opts.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const parsed = FileSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`device registry ${this.#opts.file} is not valid: ${parsed.error.issues[0]?.message ?? ''}`);
    const { devices, pending, ...rest } = parsed.data;
    const goodDevices = devices.flatMap((row) => {
      const r = BoundRowSchema.safeParse(row);
      return r.success ? [r.data] : [];
    });
    // The codes expiring last are kept when there are more than may be pending.
    const goodPending = pending
      .flatMap((row) => {
        const r = PendingRowSchema.safeParse(row);
        return r.success ? [r.data] : [];
      })
      .sort((a, b) => b.expiresAt - a.expiresAt)
      .slice(0, MAX_PENDING);
    const generation = Math.max(rest.generation, ...goodDevices.map((d) => d.generation), ...goodPending.map((p) => p.generation));
    const state: RegistryFile = { ...rest, generation, devices: goodDevices, pending: goodPending };
    return { state, dropped: devices.length - goodDevices.length + pending.length - goodPending.length };
  }

  /** Re-reads after a change by another process and reports pairs that lost their binding. */
  #refresh(): void {
    if (this.#stampOf() === this.#stamp) return;
    let next: RegistryFile | null;
    try {
      const loaded = this.#read(MAX_FILE_BYTES);
      next = loaded && loaded.dropped === 0 ? loaded.state : this.#mutate(() => undefined);
    } catch (err) {
      if (!(err instanceof OversizeRegistryError)) throw err;
      next = this.#mutate(() => undefined);
    }
    if (!next) return;
    this.#adopt(next);
  }

  /**
   * Under the lock: the file as it may be kept. Malformed rows are dropped with a warning; a file
   * past the read limit is renamed aside with an error, and its valid rows (when it can be parsed
   * at all) become the new file.
   */
  #readRepairing(): RegistryFile | null {
    try {
      const loaded = this.#read(MAX_FILE_BYTES);
      if (loaded && loaded.dropped > 0) {
        this.#log.warn({ file: this.#opts.file, dropped: loaded.dropped, kept: loaded.state.devices.length }, 'device registry: malformed or excess rows purged');
      }
      return loaded?.state ?? null;
    } catch (err) {
      if (!(err instanceof OversizeRegistryError)) throw err;
    }
    let salvaged: RegistryFile | null = null;
    let reason = '';
    try {
      salvaged = this.#read(MAX_SALVAGE_BYTES)?.state ?? null;
    } catch (err) {
      reason = (err as Error).message;
    }
    const aside = `${this.#opts.file}.oversize-${new Date(this.#now()).toISOString().replaceAll(':', '-')}`;
    renameSync(this.#opts.file, aside);
    this.#log.error(
      { file: this.#opts.file, movedTo: aside, limitBytes: MAX_FILE_BYTES, keptDevices: salvaged?.devices.length ?? 0, ...(reason ? { unreadable: reason } : {}) },
      salvaged
        ? 'device registry was larger than its limit: moved aside, its valid rows kept'
        : 'device registry was larger than its limit and could not be read: moved aside, starting empty (devices must be activated again)',
    );
    return salvaged;
  }

  #adopt(next: RegistryFile): void {
    const before = this.#state?.devices ?? [];
    const had = this.#bound;
    this.#state = next;
    this.#index();
    const gone = before.filter((d) => !this.#bound.has(pairKey(d.deviceId, d.clientId)));
    const added = next.devices.filter((d) => !had.has(pairKey(d.deviceId, d.clientId)));
    if (added.length > 0) for (const l of this.#boundListeners) l(added);
    if (gone.length > 0) for (const l of this.#revokedListeners) l(gone);
  }

  #index(): void {
    this.#bound = new Set(this.#state.devices.map((d) => pairKey(d.deviceId, d.clientId)));
  }

  /** Read-modify-write under the lock file; the new content replaces the old by rename. */
  #mutate(change: (s: RegistryFile) => void): RegistryFile {
    const lock = `${this.#opts.file}.lock`;
    const deadline = this.#now() + LOCK_WAIT_MS;
    let fd: number | undefined;
    while (fd === undefined) {
      try {
        fd = openSync(lock, 'wx');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        try {
          if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { force: true });
        } catch {
          // The holder released it meanwhile.
        }
        if (Date.now() > deadline) throw new Error(`device registry ${this.#opts.file} is locked by another process`);
        sleepSync(20);
      }
    }
    try {
      const s = this.#readRepairing() ?? { version: 1 as const, secret: randomBytes(32).toString('base64url'), generation: 0, devices: [], pending: [] };
      change(s);
      const tmp = `${this.#opts.file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
      renameSync(tmp, this.#opts.file);
      this.#stamp = this.#stampOf();
      this.#adopt(s);
      return s;
    } finally {
      closeSync(fd);
      rmSync(lock, { force: true });
    }
  }
}
