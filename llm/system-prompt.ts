/**
 * @module Fills the configured system prompt with the device's context. Placeholders in braces are
 * replaced: `{date}` (2026-05-03), `{time}` (14:05), `{weekday}` (Sunday), `{datetime}`,
 * `{timezone}`, `{device}`, `{language}`, plus any name given in `vars`. Unknown placeholders are
 * left as written, so a prompt with literal braces is safe.
 */

export interface SystemPromptContext {
  /** Defaults to the current time. */
  now?: Date;
  /** IANA zone for the date placeholders; default the server's zone. */
  timeZone?: string;
  /** Device id or name, for `{device}`. */
  device?: string;
  /** BCP 47 tag for `{language}` and the weekday name; default `en-US`. */
  language?: string;
  vars?: Record<string, string>;
}

/**
 * Intl formatters are costly to build (they showed in a 50-device profile when built every turn)
 * and immutable: one per zone and locale, kept for the process.
 */
const formatters = new Map<string, { dateTime: Intl.DateTimeFormat; weekday: Intl.DateTimeFormat }>();
let serverZone: string | undefined;

function formattersFor(
  timeZone: string | undefined,
  locale: string,
): { dateTime: Intl.DateTimeFormat; weekday: Intl.DateTimeFormat } {
  const key = `${timeZone ?? ''}|${locale}`;
  let f = formatters.get(key);
  if (!f) {
    f = {
      dateTime: new Intl.DateTimeFormat('en-CA', {
        timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      }),
      weekday: new Intl.DateTimeFormat(locale, { timeZone, weekday: 'long' }),
    };
    formatters.set(key, f);
  }
  return f;
}

function parts(now: Date, timeZone: string | undefined, locale: string): Record<string, string> {
  const f = formattersFor(timeZone, locale);
  const p = Object.fromEntries(f.dateTime.formatToParts(now).map((x) => [x.type, x.value]));
  const weekday = f.weekday.format(now);
  const date = `${p.year}-${p.month}-${p.day}`;
  const time = `${p.hour}:${p.minute}`;
  serverZone ??= Intl.DateTimeFormat().resolvedOptions().timeZone;
  return { date, time, weekday, datetime: `${date} ${time} (${weekday})`, timezone: timeZone ?? serverZone };
}

/** Returns `template` with its placeholders filled. */
export function buildSystemPrompt(template: string, ctx: SystemPromptContext = {}): string {
  const language = ctx.language ?? 'en-US';
  const values: Record<string, string> = {
    ...parts(ctx.now ?? new Date(), ctx.timeZone, language),
    device: ctx.device ?? 'unknown device',
    language,
    ...ctx.vars,
  };
  return template.replace(/\{([a-zA-Z_][a-zA-Z0-9_]*)\}/g, (whole, name: string) => values[name] ?? whole);
}
