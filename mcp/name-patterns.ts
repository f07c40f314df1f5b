/**
 * @module Small pattern helpers shared by tool filters and resource policies: `*` / `?` globs
 * (everything else literal) and the OpenAI-safe function-name mapping.
 */
import { createHash } from 'node:crypto';

/** OpenAI function names: `^[a-zA-Z0-9_-]{1,64}$`. */
export const SAFE_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_NAME = 64;

/** Compiles a glob (`*` any run, `?` one char, all else literal) into an anchored RegExp. */
export function globToRegExp(glob: string): RegExp {
  let re = '^';
  for (const ch of glob) {
    if (ch === '*') re += '.*';
    else if (ch === '?') re += '.';
    else re += ch.replace(/[.+^${}()|[\]\\/-]/g, '\\$&');
  }
  return new RegExp(`${re}$`, 's');
}

/** True when `value` matches any of the globs. */
export function matchesAny(value: string, globs: readonly string[]): boolean {
  return globs.some((g) => globToRegExp(g).test(value));
}

/** True when `name` passes the include list (if any) and is not excluded. */
export function passesFilter(
  name: string,
  include: readonly string[] | undefined,
  exclude: readonly string[] | undefined,
): boolean {
  if (include && include.length > 0 && !matchesAny(name, include)) return false;
  if (exclude && exclude.length > 0 && matchesAny(name, exclude)) return false;
  return true;
}

/**
 * Makes a name OpenAI-safe: every char outside `[a-zA-Z0-9_-]` becomes `_`; an over-long name is
 * cut and given a short hash suffix so two long names with a common prefix stay distinct.
 */
export function sanitizeToolName(raw: string): string {
  let s = raw.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (s.length === 0) s = 'tool';
  if (s.length > MAX_NAME) {
    const hash = createHash('sha1').update(raw).digest('hex').slice(0, 8);
    s = `${s.slice(0, MAX_NAME - 9)}_${hash}`;
  }
  return s;
}

/**
 * Two-way map between exposed (safe, unique) names and whatever the owner needs to route a call.
 * Collisions after sanitizing get `_2`, `_3`, ... (kept within 64 chars); the first claimant keeps
 * the plain name, so a stable input order gives stable names.
 */
export class ToolNameMap<T> {
  #byExposed = new Map<string, T>();

  /** Registers `desired` (sanitized here) for `target`; returns the unique exposed name. */
  add(desired: string, target: T): string {
    const base = sanitizeToolName(desired);
    let name = base;
    for (let n = 2; this.#byExposed.has(name); n++) {
      const suffix = `_${n}`;
      name = `${base.slice(0, MAX_NAME - suffix.length)}${suffix}`;
    }
    this.#byExposed.set(name, target);
    return name;
  }

  get(exposed: string): T | undefined {
    return this.#byExposed.get(exposed);
  }

  has(exposed: string): boolean {
    return this.#byExposed.has(exposed);
  }

  names(): string[] {
    return [...this.#byExposed.keys()];
  }
}
