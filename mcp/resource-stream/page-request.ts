/**
 * @module How one page of a ResourceLink is requested. Two server styles exist:
 * mcp-go servers read a non-standard `arguments { url, start, end }` param on
 * `resources/read`; spec-conformant servers publish a URI template with `start`/`end` variables
 * and expect the expanded URI alone (SDK servers strip any extra param).
 */
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import type { ResourceLinkContent, ResourceTemplateInfo } from '../contract/tool-source.ts';

/** Which request style to use for the pages of one stream. */
export type PageStyle = 'auto' | 'arguments' | 'template';

/** What to send for the page covering bytes [start, end). */
export interface PageRequest {
  uri: string;
  arguments?: Record<string, unknown>;
}

/** Builds the request for one page; chosen once per stream. */
export type PagePlanner = (start: number, end: number) => PageRequest;

/** Describes the chosen plan for logs and errors. */
export interface PagePlan {
  style: 'arguments' | 'template';
  /** The template used, for the 'template' style. */
  template?: string;
  request: PagePlanner;
}

/** The mcp-go style: the link's own URI plus `arguments { url: description, start, end }`. */
export function argumentsPlan(link: ResourceLinkContent): PagePlan {
  const url = link.description ?? urlFromUri(link.uri);
  return {
    style: 'arguments',
    request: (start, end) => ({ uri: link.uri, arguments: url === undefined ? { start, end } : { url, start, end } }),
  };
}

/**
 * Finds a template that can page this link and returns a plan reading the expanded URI only.
 * A template qualifies when its variables include `start` and `end`, and every other variable
 * gets a value: from the link's URI when it matches the template, else `url` from the link's
 * URI query or its `description` (mcp-go music servers put the real URL there). Templates whose literal
 * prefix matches the link's URI are preferred, so a server with several paged templates reads
 * the one the link came from.
 */
export function templatePlan(
  link: ResourceLinkContent,
  templates: readonly ResourceTemplateInfo[],
): PagePlan | undefined {
  const candidates: Array<{
    info: ResourceTemplateInfo;
    template: UriTemplate;
    vars: Record<string, string>;
    score: number;
  }> = [];
  for (const info of templates) {
    let template: UriTemplate;
    try {
      template = new UriTemplate(info.uriTemplate);
    } catch {
      continue; // a malformed template from a server is skipped, not fatal
    }
    const names = template.variableNames;
    if (!names.includes('start') || !names.includes('end')) continue;
    const vars = variablesFor(link, template, names);
    if (vars === undefined) continue;
    const prefix = literalPrefix(info.uriTemplate);
    candidates.push({ info, template, vars, score: prefix !== '' && link.uri.startsWith(prefix) ? prefix.length : 0 });
  }
  candidates.sort((a, b) => b.score - a.score);
  const best = candidates[0];
  if (best === undefined) return undefined;
  return {
    style: 'template',
    template: best.info.uriTemplate,
    request: (start, end) => ({ uri: best.template.expand({ ...best.vars, start: String(start), end: String(end) }) }),
  };
}

function variablesFor(
  link: ResourceLinkContent,
  template: UriTemplate,
  names: string[],
): Record<string, string> | undefined {
  const vars: Record<string, string> = {};
  // The SDK's match() yields values still percent-encoded; decode them so expand() does not double-encode.
  const matched = safeMatch(template, link.uri);
  if (matched) {
    for (const [k, v] of Object.entries(matched)) {
      const one = Array.isArray(v) ? v[0] : v;
      if (one !== undefined) vars[k] = safeDecode(one);
    }
  }
  if (names.includes('url') && vars.url === undefined) {
    const url = urlFromUri(link.uri) ?? link.description;
    if (url === undefined || url === '') return undefined;
    vars.url = url;
  }
  for (const name of names) {
    if (name !== 'start' && name !== 'end' && vars[name] === undefined) return undefined;
  }
  return vars;
}

function safeMatch(template: UriTemplate, uri: string): Record<string, string | string[]> | null {
  try {
    return template.match(uri);
  } catch {
    return null;
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The `url` query parameter of a link URI like `resource://read_from_http?url=...`, if any. */
function urlFromUri(uri: string): string | undefined {
  const q = uri.indexOf('?');
  if (q < 0) return undefined;
  const value = new URLSearchParams(uri.slice(q + 1)).get('url');
  return value === null || value === '' ? undefined : value;
}

function literalPrefix(uriTemplate: string): string {
  const brace = uriTemplate.indexOf('{');
  return brace < 0 ? uriTemplate : uriTemplate.slice(0, brace);
}
