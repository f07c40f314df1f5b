/**
 * @module Which model a device's photos go to, from its agent over the configuration: the agent's
 * chat model when its `llm.images` says it takes images (its `llm` fields over the configuration's
 * `llm`), else the agent's `vision` fields over the configuration's `vision`. None when no base URL
 * or model is set anywhere.
 */
import { parseAgentSettings } from '../agents/index.ts';
import type { VisionModel } from './vision-model.ts';
import type { VisionSettings } from './vision-settings.ts';

export interface VisionChoice {
  model: VisionModel;
  /** `chat`: the agent's chat model (`llm.images`); `agent`: its `vision` block; `config`: the configuration's `vision`. */
  source: 'chat' | 'agent' | 'config';
}

/** `agent`: the agent's settings as stored or configured (undefined: none, the configuration alone). */
export function chooseVisionModel(
  vision: Pick<VisionSettings, 'baseURL' | 'apiKey' | 'model'>,
  chat: VisionModel,
  agent: Record<string, unknown> | undefined,
): VisionChoice | null {
  const parsed = parseAgentSettings(agent ?? {});
  const s = parsed.ok ? parsed.settings : {};
  if (s.llm?.images === true) {
    const model = {
      baseURL: s.llm.baseURL ?? chat.baseURL,
      apiKey: s.llm.apiKey ?? chat.apiKey,
      model: s.llm.model ?? chat.model,
    };
    return model.baseURL && model.model ? { model, source: 'chat' } : null;
  }
  const v = s.vision;
  const model = {
    baseURL: v?.baseURL ?? vision.baseURL,
    apiKey: v?.apiKey ?? vision.apiKey,
    model: v?.model ?? vision.model,
  };
  if (!model.baseURL || !model.model) return null;
  return { model, source: v?.baseURL !== undefined || v?.model !== undefined ? 'agent' : 'config' };
}
