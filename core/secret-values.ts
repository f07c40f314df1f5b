/**
 * @module The secret values the process knows (configured keys and tokens, tokens it hands out),
 * so that log lines can be redacted by value. Redacting by field name misses a key echoed in a
 * provider's error text, a token under a percent-encoded query key, or a child's stderr.
 *
 * Two stores, because a server hands out a token per device: a value written only with letters,
 * digits, `-` and `_` (every issued token, most API keys) reads the same raw, percent-encoded and
 * JSON-escaped, so it is kept in a set and found by scanning the line's runs of such characters,
 * at a cost that does not grow with the number of values. Any other value goes into one
 * alternation pattern with its written forms; those are few (the configuration's).
 */

export const REDACTED = '[Redacted]';

export interface SecretValuesOptions {
  /** Values shorter than this are not treated as secrets (they would redact ordinary words). */
  minLength?: number;
  /** Bound on how many issued values are kept (`add(v, { issued: true })`); the oldest go first. */
  maxValues?: number;
}

/** Characters that no written form (percent-encoding, JSON string) changes. */
const WORD_SHAPED = /^[A-Za-z0-9_-]+$/;

export class SecretValues {
  /** Word-shaped values, found by set lookups. */
  readonly #words = new Set<string>();
  /** Their distinct lengths, longest first (a run is searched for each). */
  #lengths: number[] = [];
  /** How many word-shaped values have each length (an eviction must not scan them all). */
  readonly #perLength = new Map<number, number>();
  #runPattern: RegExp | null = null;
  /** Other values, found by one pattern of all their forms. */
  readonly #others = new Set<string>();
  #pattern: RegExp | null = null;
  /** Values handed out at run time, oldest first: these are the ones evicted, never the configuration's. */
  readonly #issued = new Set<string>();
  readonly #minLength: number;
  readonly #maxValues: number;

  constructor(opts: SecretValuesOptions = {}) {
    this.#minLength = opts.minLength ?? 6;
    this.#maxValues = opts.maxValues ?? 100_000;
  }

  get size(): number {
    return this.#words.size + this.#others.size;
  }

  /**
   * Registers a secret; its percent-encoded and JSON-escaped forms are redacted too. `issued`: a
   * value the server made at run time (a device's token or password), of which only the newest
   * `maxValues` are kept.
   */
  add(value: string, opts: { issued?: boolean } = {}): void {
    if (value.length < this.#minLength || this.#words.has(value) || this.#others.has(value)) return;
    this.#insert(value);
    if (!opts.issued) return;
    this.#issued.add(value);
    while (this.#issued.size > this.#maxValues) {
      const oldest = this.#issued.values().next().value;
      if (oldest === undefined) break;
      this.#issued.delete(oldest);
      this.#remove(oldest);
    }
  }

  /** The text with every known secret (in any of its written forms) replaced by `[Redacted]`. */
  redact(text: string): string {
    let out = text;
    if (this.#others.size > 0) {
      this.#pattern ??= this.#compile();
      out = out.replace(this.#pattern, REDACTED);
    }
    if (this.#words.size > 0) {
      this.#runPattern ??= new RegExp(`[A-Za-z0-9_-]{${this.#lengths.at(-1) ?? 1},}`, 'g');
      out = out.replace(this.#runPattern, (run) => this.#redactRun(run));
    }
    return out;
  }

  #insert(value: string): void {
    if (WORD_SHAPED.test(value)) {
      this.#words.add(value);
      const n = this.#perLength.get(value.length) ?? 0;
      this.#perLength.set(value.length, n + 1);
      if (n === 0) this.#setLengths([...this.#lengths, value.length]);
    } else {
      this.#others.add(value);
      this.#pattern = null;
    }
  }

  #remove(value: string): void {
    if (this.#words.delete(value)) {
      const n = (this.#perLength.get(value.length) ?? 1) - 1;
      if (n > 0) {
        this.#perLength.set(value.length, n);
      } else {
        this.#perLength.delete(value.length);
        this.#setLengths(this.#lengths.filter((l) => l !== value.length));
      }
    } else if (this.#others.delete(value)) {
      this.#pattern = null;
    }
  }

  #setLengths(lengths: number[]): void {
    this.#lengths = lengths.sort((a, b) => b - a);
    this.#runPattern = null;
  }

  /** A run of word characters with every secret inside it replaced, the longest first at each place. */
  #redactRun(run: string): string {
    if (this.#words.has(run)) return REDACTED;
    let out = '';
    let copied = 0;
    let i = 0;
    next: while (i < run.length) {
      for (const len of this.#lengths) {
        if (i + len <= run.length && this.#words.has(run.slice(i, i + len))) {
          out += run.slice(copied, i) + REDACTED;
          i += len;
          copied = i;
          continue next;
        }
      }
      i++;
    }
    return copied === 0 ? run : out + run.slice(copied);
  }

  #compile(): RegExp {
    const forms = new Set<string>();
    for (const v of this.#others) {
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
