/**
 * @module Agents as the API returns them, and the merge of a settings patch into the stored
 * settings. API keys (`llm.apiKey`, and `tts.apiKey` / `asr.apiKey` of an OpenAI-compatible
 * provider) are write-only: never returned, `apiKeySet` (and `ttsApiKeySet`, `asrApiKeySet`) say
 * whether one is stored.
 */
import type { z } from 'zod';
import type { AgentRow } from '../../store/types.ts';
import type { AgentSettings } from '../agents/index.ts';
import type { AgentSettingsPatchSchema, AgentView } from './schemas.ts';

export type AgentSettingsPatch = z.output<typeof AgentSettingsPatchSchema>;

/** The blocks of an agent's settings that may hold an API key. */
const KEYED = ['llm', 'tts', 'asr'] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function keyIn(block: unknown): string | undefined {
  return isRecord(block) && typeof block.apiKey === 'string' && block.apiKey !== '' ? block.apiKey : undefined;
}

/** Every API key stored in these settings (for log redaction). */
export function apiKeysOf(settings: Record<string, unknown>): string[] {
  return KEYED.flatMap((b) => keyIn(settings[b]) ?? []);
}

export function agentView(row: AgentRow): AgentView {
  const settings: Record<string, unknown> = { ...row.settings };
  for (const b of KEYED) {
    const block = settings[b];
    if (!isRecord(block) || !('apiKey' in block)) continue;
    const { apiKey: _key, ...rest } = block;
    if (Object.keys(rest).length > 0) settings[b] = rest;
    else delete settings[b];
  }
  return {
    name: row.name,
    settings: settings as AgentSettings,
    apiKeySet: keyIn(row.settings.llm) !== undefined,
    ttsApiKeySet: keyIn(row.settings.tts) !== undefined,
    asrApiKeySet: keyIn(row.settings.asr) !== undefined,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/**
 * The settings after `patch`: a value replaces, null removes, absent keeps. `llm` is merged key by
 * key (so the key survives a model change); `tts` and `asr` are replaced whole, but a block given
 * without a key keeps the stored one while the provider stays the same (the API never returned it).
 */
export function mergeSettings(current: Record<string, unknown>, patch: AgentSettingsPatch): Record<string, unknown> {
  const out: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) {
      delete out[k];
      continue;
    }
    if (k === 'llm' && isRecord(v)) {
      const llm: Record<string, unknown> = { ...(isRecord(out.llm) ? out.llm : {}) };
      for (const [lk, lv] of Object.entries(v)) {
        if (lv === null) delete llm[lk];
        else if (lv !== undefined) llm[lk] = lv;
      }
      if (Object.keys(llm).length > 0) out.llm = llm;
      else delete out.llm;
      continue;
    }
    if ((k === 'tts' || k === 'asr') && isRecord(v)) {
      const stored = out[k];
      const kept = keyIn(stored);
      out[k] =
        kept &&
        keyIn(v) === undefined &&
        isRecord(stored) &&
        stored.provider === (v as Record<string, unknown>).provider
          ? { ...v, apiKey: kept }
          : v;
      continue;
    }
    out[k] = v;
  }
  return out;
}
