/**
 * @module The embedded device registry: one small JSON file (a few hundred bytes per device) on a
 * volume. Every change is a read-modify-write under a lock file, written to a temp file and renamed
 * into place, so the `devices` CLI and the running server can both change it and a crash never
 * leaves half a file. The server re-reads it when it changes (polling its mtime), which is how a
 * revocation from the CLI ends that device's session. Sizes are bounded: a stranger can fill at
 * most MAX_PENDING codes, each expiring.
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import type { BindResult, BoundDevice, DeviceRegistry, IssuedCode, PendingCode } from './device-registry.ts';
import { pairKey } from './device-token.ts';

export const MAX_DEVICES = 10_000;
export const MAX_PENDING = 100;
const MAX_FILE_BYTES = 8 * 1024 * 1024;
const LOCK_WAIT_MS = 3_000;
const STALE_LOCK_MS = 10_000;

const FileSchema = z.object({
  version: z.literal(1),
  secret: z.string().min(32),
  devices: z.array(z.object({ id: z.string(), deviceId: z.string(), clientId: z.string(), boundAt: z.string() })).max(MAX_DEVICES),
  pending: z.array(z.object({ code: z.string(), deviceId: z.string(), clientId: z.string(), expiresAt: z.number() })).max(MAX_PENDING),
});
type RegistryFile = z.infer<typeof FileSchema>;

export interface JsonDeviceRegistryOptions {
  file: string;
  /** Configured secret; empty: the file's own (generated on first use). */
  secret: string;
  codeTtlMs: number;
  /** How often the server looks for changes made by another process; 0: never (the CLI). */
  watchIntervalMs: number;
  now?: () => number;
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
  #state: RegistryFile;
  #stamp = '';
  #bound = new Set<string>();
  #boundListeners: Array<(devices: BoundDevice[]) => void> = [];
  #revokedListeners: Array<(devices: BoundDevice[]) => void> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: JsonDeviceRegistryOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    mkdirSync(dirname(opts.file), { recursive: true });
    this.#state = this.#read() ?? this.#mutate(() => undefined);
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

  pendingCode(deviceId: string, clientId: string): IssuedCode | null {
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
      made = { code, deviceId: deviceId.toLowerCase(), clientId: clientId.toLowerCase(), expiresAt: now + this.#opts.codeTtlMs };
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
      const device: BoundDevice = existing ?? { id, deviceId: p.deviceId, clientId: p.clientId, boundAt: new Date(now).toISOString() };
      if (!existing) s.devices.push(device);
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

  /** The file's current content, or null when it does not exist yet. Throws on a corrupt file: the owner must look. */
  #read(): RegistryFile | null {
    let text: string;
    try {
      if (statSync(this.#opts.file).size > MAX_FILE_BYTES) throw new Error(`device registry ${this.#opts.file} is larger than ${MAX_FILE_BYTES} bytes`);
      this.#stamp = this.#stampOf();
      text = readFileSync(this.#opts.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const parsed = FileSchema.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`device registry ${this.#opts.file} is not valid: ${parsed.error.issues[0]?.message ?? ''}`);
    return parsed.data;
  }

  /** Re-reads after a change by another process and reports pairs that lost their binding. */
  #refresh(): void {
    if (this.#stampOf() === this.#stamp) return;
    const next = this.#read();
    if (!next) return;
    this.#adopt(next);
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
      const s = this.#read() ?? { version: 1 as const, secret: randomBytes(32).toString('base64url'), devices: [], pending: [] };
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
