/**
 * @module Where and in which language a device lives, from its agent over the configuration: its
 * time zone (the agent's `timeZone`, else `tools.timeZone`, else a fixed `server.timezoneOffsetMinutes`,
 * else the server's zone) and the words it says when a reminder rings. Read from the agent lookup
 * at each call, so a device moved to another agent, or an agent edited, follows at once.
 */
import type { Logger } from '../../core/logger.ts';
import type { AgentRow } from '../../store/types.ts';
import type { AgentLookup } from './agent-lookup.ts';
import { parseAgentSettings } from './resolve-agent.ts';
import type { AgentSettings } from './agent-settings.ts';
import { LANGUAGE_PACKS, type Language } from './language.ts';
import { fixedZone, namedZone, type LocalZone } from '../../mcp/local-tools/local-time.ts';

export interface DeviceLocaleOptions {
  config: {
    language: Language;
    defaultAgent?: string | undefined;
    tools: { timeZone: string };
    server: { timezoneOffsetMinutes: number | null };
  };
  agents: AgentLookup;
  /** The agent a device without one uses. */
  defaultAgent: () => string;
  log: Logger;
}

export class DeviceLocale {
  readonly #o: DeviceLocaleOptions;
  readonly #base: LocalZone;
  /** Each agent row's checked settings (rows are replaced, not changed, when an agent is edited). */
  readonly #parsed = new WeakMap<AgentRow, AgentSettings | undefined>();

  constructor(opts: DeviceLocaleOptions) {
    this.#o = opts;
    const { tools, server } = opts.config;
    if (tools.timeZone !== '') this.#base = namedZone(tools.timeZone);
    else if (server.timezoneOffsetMinutes !== null) this.#base = fixedZone(server.timezoneOffsetMinutes);
    else this.#base = namedZone(Intl.DateTimeFormat().resolvedOptions().timeZone);
  }

  /** The agent the device uses now (its own, else the default). */
  agentOf(deviceId: string): string {
    const named = this.#o.agents.agentNameOf(deviceId);
    return named !== null && this.#o.agents.agent(named) !== undefined ? named : this.#o.defaultAgent();
  }

  /** The device's time zone now. */
  zone(deviceId: string): LocalZone {
    const tz = this.#settings(deviceId)?.timeZone;
    if (tz === undefined) return this.#base;
    try {
      return namedZone(tz);
    } catch {
      // Checked when stored; a zone this runtime does not know (older ICU) falls back.
      return this.#base;
    }
  }

  /** The device's IANA zone when one is set (its agent's, else `tools.timeZone`); undefined: the server's. */
  timeZoneOf(deviceId: string): string | undefined {
    const tz = this.#settings(deviceId)?.timeZone;
    if (tz !== undefined) return tz;
    return this.#o.config.tools.timeZone === '' ? undefined : this.#o.config.tools.timeZone;
  }

  language(deviceId: string): Language {
    return this.#settings(deviceId)?.language ?? this.#o.config.language;
  }

  /** What the device says when the reminder `text` rings, in its agent's language. */
  reminderText(deviceId: string, text: string): string {
    return LANGUAGE_PACKS[this.language(deviceId)].reminder.replace('{text}', () => text);
  }

  #settings(deviceId: string): AgentSettings | undefined {
    const row = this.#o.agents.agent(this.agentOf(deviceId));
    if (!row) return undefined;
    if (!this.#parsed.has(row)) {
      const checked = parseAgentSettings(row.settings);
      if (!checked.ok)
        this.#o.log.warn(
          { agent: row.name, err: checked.error },
          'agent settings are not valid; its devices use the configured time zone and language',
        );
      this.#parsed.set(row, checked.ok ? checked.settings : undefined);
    }
    return this.#parsed.get(row);
  }
}
