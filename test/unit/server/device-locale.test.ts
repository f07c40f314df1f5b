/**
 * A device's time zone and reminder words: the agent's `timeZone` (checked as an IANA name), else
 * `tools.timeZone`, else `server.timezoneOffsetMinutes`, else the server's zone; the words in the
 * agent's language; a device moved to another agent follows at once.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../../core/logger.ts';
import { ConfigSchema, describeIssues } from '../../../server/config.ts';
import { configAgentLookup } from '../../../features/agents/agent-lookup.ts';
import { resolveAgent } from '../../../features/agents/resolve-agent.ts';
import { DeviceLocale } from '../../../features/agents/device-locale.ts';

const DEV = 'aa:bb:cc:dd:ee:01';
const OTHER = 'aa:bb:cc:dd:ee:02';

function locale(raw: Record<string, unknown>): { locale: DeviceLocale; lookup: ReturnType<typeof configAgentLookup> } {
  const config = ConfigSchema.parse(raw);
  const lookup = configAgentLookup(config);
  return {
    locale: new DeviceLocale({
      config,
      agents: lookup,
      defaultAgent: () => config.agents[0]?.name ?? '(configuration)',
      log: silentLogger,
    }),
    lookup,
  };
}

describe('device locale', () => {
  test("the agent's zone, else tools.timeZone, else the configured offset, else the server's zone", () => {
    const agents = [
      { name: 'home', timeZone: 'Asia/Shanghai' },
      { name: 'away', devices: [OTHER] },
    ];
    assert.equal(locale({ agents, tools: { timeZone: 'Europe/Berlin' } }).locale.zone(DEV).name, 'Asia/Shanghai');
    assert.equal(locale({ agents, tools: { timeZone: 'Europe/Berlin' } }).locale.zone(OTHER).name, 'Europe/Berlin');
    const offset = locale({ agents, server: { timezoneOffsetMinutes: 330 } }).locale.zone(OTHER);
    assert.equal(offset.name, 'UTC+05:30');
    assert.equal(offset.offsetMinutesAt(0), 330);
    assert.equal(locale({ agents }).locale.zone(OTHER).name, Intl.DateTimeFormat().resolvedOptions().timeZone);
  });

  test("a device moved to another agent, or an agent edited, follows at once; the words are in the agent's language", () => {
    const { locale: l, lookup } = locale({
      agents: [{ name: 'home' }, { name: 'zh', language: 'zh', timeZone: 'Asia/Shanghai' }],
    });
    assert.equal(l.reminderText(DEV, 'take the tea out'), 'Reminder: take the tea out');
    lookup.setDeviceAgent(DEV, 'zh');
    assert.equal(l.reminderText(DEV, '喝茶'), '提醒：喝茶');
    assert.equal(l.zone(DEV).name, 'Asia/Shanghai');
    lookup.setAgent('zh', { language: 'zh', timeZone: 'Europe/Paris' });
    assert.equal(l.zone(DEV).name, 'Europe/Paris');
    assert.equal(l.reminderText(DEV, '$& {text}'), '提醒：$& {text}', 'the text is put in as it is');
  });

  test("an agent's timeZone must be an IANA zone; it sets the prompt's zone", () => {
    const r = ConfigSchema.safeParse({ agents: [{ name: 'home', timeZone: 'Mars/Olympus' }] });
    assert.equal(r.success, false);
    assert.match(
      r.success ? '' : describeIssues(r.error),
      /agents\.0\.timeZone.*must be an IANA time zone such as Europe\/Berlin/,
    );
    const config = ConfigSchema.parse({ tools: { timeZone: 'Europe/Berlin' } });
    assert.equal(resolveAgent(config, { timeZone: 'Asia/Tokyo' }).timeZone, 'Asia/Tokyo');
    assert.equal(resolveAgent(config, {}).timeZone, 'Europe/Berlin');
    assert.equal(resolveAgent(ConfigSchema.parse({}), {}).timeZone, undefined);
  });
});
