/**
 * @module Agents as the API returns them, and the merge of a settings patch into the stored
 * settings. Credentials are write-only: `llm.apiKey`, and in the `tts` / `asr` blocks every field
 * whose name says it holds one (`apiKey`, `accessKey`, `appKey`, a token: each vendor names its
 * own); never returned, `apiKeySet` (and `ttsApiKeySet`, `asrApiKeySet`) say whether one is stored.
 */
import type { z } from 'zod';
import type { AgentRow } from '../../store/types.ts';
import type { AgentSettings } from '../agents/index.ts';
import type { AgentSettingsPatchSchema, AgentView } from './schemas.ts';

export type AgentSettingsPatch = z.output<typeof AgentSettingsPatchSchema>;

/** The blocks of an agent's settings that may hold an API key. */
const KEYED = ['llm', 'vision', 'tts', 'asr'] as const;
/** Blocks whose one credential is `apiKey`, merged key by key by a patch. */
const KEY_BY_KEY = (b: string): b is 'llm' | 'vision' => b === 'llm' || b === 'vision';
/** A provider block's field that holds a credential (the names `core/config-secrets.ts` redacts). */
const CREDENTIAL = /key|token|secret|password|credential/i;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The credential fields of block `b` (`llm`: its API key; a provider block: every one its vendor has). */
function credentialsIn(b: (typeof KEYED)[number], block: unknown): Record<string, string> {
  if (!isRecord(block)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(block))
    if ((KEY_BY_KEY(b) ? k === 'apiKey' : CREDENTIAL.test(k)) && typeof v === 'string' && v !== '') out[k] = v;
  return out;
}

/** Every credential stored in these settings (for log redaction). */
export function apiKeysOf(settings: Record<string, unknown>): string[] {
  return KEYED.flatMap((b) => Object.values(credentialsIn(b, settings[b])));
}

export function agentView(row: AgentRow): AgentView {
  const settings: Record<string, unknown> = { ...row.settings };
  for (const b of KEYED) {
    const block = settings[b];
    if (!isRecord(block)) continue;
    const rest = Object.fromEntries(
      Object.entries(block).filter(([k]) => !(KEY_BY_KEY(b) ? k === 'apiKey' : CREDENTIAL.test(k))),
    );
    if (Object.keys(rest).length === Object.keys(block).length) continue;
    if (Object.keys(rest).length > 0) settings[b] = rest;
    else delete settings[b];
  }
  const set = (b: (typeof KEYED)[number]): boolean => Object.keys(credentialsIn(b, row.settings[b])).length > 0;
  return {
    name: row.name,
    settings: settings as AgentSettings,
    apiKeySet: set('llm'),
    visionApiKeySet: set('vision'),
    ttsApiKeySet: set('tts'),
    asrApiKeySet: set('asr'),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/**
 * The settings after `patch`: a value replaces, null removes, absent keeps. `llm` is merged key by
 * key (so the key survives a model change); `tts` and `asr` are replaced whole, but a block given
 * without its credentials keeps the stored ones while the provider stays the same (the API never
 * returned them).
 */
export function mergeSettings(current: Record<string, unknown>, patch: AgentSettingsPatch): Record<string, unknown> {
  const out: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) {
      delete out[k];
      continue;
    }
    if (KEY_BY_KEY(k) && isRecord(v)) {
      const stored = out[k];
      const block: Record<string, unknown> = { ...(isRecord(stored) ? stored : {}) };
      for (const [lk, lv] of Object.entries(v)) {
        if (lv === null) delete block[lk];
        else if (lv !== undefined) block[lk] = lv;
      }
      if (Object.keys(block).length > 0) out[k] = block;
      else delete out[k];
      continue;
    }
    if ((k === 'tts' || k === 'asr') && isRecord(v)) {
      const stored = out[k];
      const sameProvider = isRecord(stored) && stored.provider === (v as Record<string, unknown>).provider;
      const given = credentialsIn(k, v);
      const kept = Object.entries(sameProvider ? credentialsIn(k, stored) : {}).filter(([ck]) => !(ck in given));
      out[k] = kept.length > 0 ? { ...v, ...Object.fromEntries(kept) } : v;
      continue;
    }
    out[k] = v;
  }
  return out;
}
