/**
 * @module The agents room's public surface: each device's assistant for a turn (`AgentProfiles`),
 * where devices' agents are looked up, what an agent may set (the schemas the configuration and
 * the admin API validate with), which tools an agent allows, each device's locale (zone and
 * language, from its agent), and the `language` presets the configuration and agents take.
 */
export { AgentProfiles, type AgentClients, type AgentProfilesOptions } from './agent-profiles.ts';
export { agentLookupOf, configAgentLookup, configAgentParts, type AgentLookup } from './agent-lookup.ts';
export {
  AgentLlmSchema,
  AgentNameSchema,
  AgentSettingsSchema,
  AgentVisionSchema,
  ConfigAgentSchema,
  type AgentSettings,
  type ConfigAgent,
} from './agent-settings.ts';
export type { AgentDefaults } from './resolve-agent.ts';
export { parseAgentSettings } from './resolve-agent.ts';
export { DeviceLocale, type DeviceLocaleOptions } from './device-locale.ts';
export { localToolsUnder, mcpToolsUnder } from './tool-policy.ts';
export {
  LANGUAGES,
  LANGUAGE_PACKS,
  applyLanguageDefaults,
  languageWarnings,
  type Language,
  type LanguageWarning,
} from './language.ts';
