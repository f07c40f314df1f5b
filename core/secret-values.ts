/**
 * @module The secret values the process knows (configured keys and tokens, tokens it hands out),
 * so that log lines can be redacted by value. Redacting by field name misses a key echoed in a
 * provider's error text, a token under a percent-encoded query key, or a child's stderr.
 */

export const REDACTED = '[Redacted]';

export interface SecretValuesOptions {
  /** Values shorter than this are not treated as secrets (they would redact ordinary words). */
  minLength?: number;
  /** Bound on how many values are kept; the oldest go first. */
  maxValues?: number;
}

export class SecretValues {
  readonly #values = new Set<string>();
  readonly #minLength: number;
  readonly #maxValues: number;
  #pattern: RegExp | null = null;

  constructor(opts: SecretValuesOptions = {}) {
    this.#minLength = opts.minLength ?? 6;
    this.#maxValues = opts.maxValues ?? 10_000;
  }

  get size(): number {
    return this.#values.size;
  }

  /** Registers a secret; its percent-encoded and JSON-escaped forms are redacted too. */
  add(value: string): void {
    if (value.length < this.#minLength || this.#values.has(value)) return;
    this.#values.add(value);
    while (this.#values.size > this.#maxValues) {
      const oldest = this.#values.values().next().value;
      if (oldest === undefined) break;
      this.#values.delete(oldest);
    }
    this.#pattern = null;
  }

  /** The text with every known secret (in any of its written forms) replaced by `[Redacted]`. */
  redact(text: string): string {
    if (this.#values.size === 0) return text;
    this.#pattern ??= this.#compile();
    return text.replace(this.#pattern, REDACTED);
  }

  #compile(): RegExp {
    const forms = new Set<string>();
    for (const v of this.#values) {
      forms.add(v);
      forms.add(encodeURIComponent(v));
      forms.add(encodeURIComponent(v).replace(/%20/g, '+'));
      // As it appears inside a JSON string (a log line is JSON).
      forms.add(JSON.stringify(v).slice(1, -1));
    }
    // Longest first, so a secret containing another is replaced whole.
    const sorted = [...forms].sort((a, b) => b.length - a.length);
    return new RegExp(sorted.map(escapeRegExp).join('|'), 'g');
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
