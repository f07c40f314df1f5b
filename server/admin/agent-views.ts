/**
 * @module Agents as the API returns them (the API key never leaves: `apiKeySet` says whether one
 * is stored) and the merge of a settings patch into the stored settings.
 */
import type { AgentRow } from '../../store/types.ts';
import type { z } from 'zod';
import type { AgentSettings } from '../agents/agent-settings.ts';
import type { AgentSettingsPatchSchema, AgentView } from './schemas.ts';

export type AgentSettingsPatch = z.output<typeof AgentSettingsPatchSchema>;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The stored API key of these settings, or undefined. */
export function apiKeyOf(settings: Record<string, unknown>): string | undefined {
  const llm = settings.llm;
  return isRecord(llm) && typeof llm.apiKey === 'string' && llm.apiKey !== '' ? llm.apiKey : undefined;
}

export function agentView(row: AgentRow): AgentView {
  const settings: Record<string, unknown> = { ...row.settings };
  if (isRecord(settings.llm)) {
    const { apiKey: _key, ...llm } = settings.llm;
    if (Object.keys(llm).length > 0) settings.llm = llm;
    else delete settings.llm;
  }
  return { name: row.name, settings: settings as AgentSettings, apiKeySet: apiKeyOf(row.settings) !== undefined, createdAt: row.createdAt, updatedAt: row.updatedAt };
}

/** Applies a patch to a mapping: a value replaces, null removes, absent keeps. */
function applyPatch(current: Record<string, unknown>, patch: Record<string, unknown>, nested: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) delete out[k];
    else if (nested.has(k) && isRecord(v)) {
      const merged = applyPatch(isRecord(out[k]) ? out[k] : {}, v, new Set());
      if (Object.keys(merged).length > 0) out[k] = merged;
      else delete out[k];
    } else out[k] = v;
  }
  return out;
}

/** The settings after `patch`: `llm` merged key by key (so the key survives a model change), any other key replaced whole. */
export function mergeSettings(current: Record<string, unknown>, patch: AgentSettingsPatch): Record<string, unknown> {
  return applyPatch(current, patch, new Set(['llm']));
}
