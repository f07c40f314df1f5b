/**
 * Every configuration example in README.md, docs/ and the shipped docker/server.yaml is valid for
 * the schema, and no provider URL in them points at this server itself (copied as is, requests
 * would come back to the voice server and fail).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigSchema, ConfigShapeSchema, describeIssues, type Config } from '../../../server/config.ts';

const SECTIONS = new Set(Object.keys(ConfigShapeSchema.shape));
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '0.0.0.0', '::1', '[::1]', '::']);

/** YAML blocks whose top-level keys are all configuration sections (others: compose, Prometheus, ...). */
function configBlocks(file: string): Array<{ where: string; data: Record<string, unknown> }> {
  const text = readFileSync(file, 'utf8');
  const out: Array<{ where: string; data: Record<string, unknown> }> = [];
  const re = /```ya?ml\n([\s\S]*?)```/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const data = parseYaml(m[1] as string) as unknown;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) continue;
    const keys = Object.keys(data);
    if (keys.length === 0 || !keys.every((k) => SECTIONS.has(k))) continue;
    out.push({ where: `${file}:${text.slice(0, m.index).split('\n').length}`, data: data as Record<string, unknown> });
  }
  return out;
}

/** Provider and MCP URLs that would reach this server's own port on this machine. */
export function selfPointingUrls(c: Config): string[] {
  const urls: Array<[string, string]> = [['llm.baseURL', c.llm.baseURL]];
  if (c.asr.provider === 'openai') urls.push(['asr.baseURL', c.asr.baseURL]);
  if (c.tts.provider === 'openai') urls.push(['tts.baseURL', c.tts.baseURL]);
  for (const [name, s] of Object.entries(c.mcpServers))
    if ('url' in s && typeof s.url === 'string') urls.push([`mcpServers.${name}.url`, s.url]);
  return urls
    .filter(([, u]) => {
      const url = new URL(u);
      const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
      return LOOPBACK.has(url.hostname) && port === c.server.port;
    })
    .map(([k, u]) => `${k}: ${u}`);
}

const files = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const examples = files.flatMap(configBlocks);
examples.push({
  where: 'docker/server.yaml',
  data: parseYaml(readFileSync('docker/server.yaml', 'utf8')) as Record<string, unknown>,
});

test('the README and docs hold configuration examples (the extraction finds them)', () => {
  assert.ok(
    examples.some((e) => e.where.startsWith('README.md')),
    examples.map((e) => e.where).join(', '),
  );
  assert.ok(examples.some((e) => e.where.startsWith('docs/configuration.md')));
});

for (const ex of examples) {
  test(`${ex.where}: valid, and no provider URL points at this server`, () => {
    const parsed = ConfigSchema.safeParse(ex.data);
    assert.ok(parsed.success, parsed.success ? '' : describeIssues(parsed.error));
    assert.deepEqual(selfPointingUrls(parsed.data), []);
  });
}

test('the self-pointing check catches the server port on loopback', () => {
  const c = ConfigSchema.parse({ asr: { provider: 'openai', baseURL: 'http://127.0.0.1:8000/v1' } });
  assert.deepEqual(selfPointingUrls(c), ['asr.baseURL: http://127.0.0.1:8000/v1']);
  assert.deepEqual(
    selfPointingUrls(
      ConfigSchema.parse({ server: { port: 9000 }, asr: { provider: 'openai', baseURL: 'http://127.0.0.1:8000/v1' } }),
    ),
    [],
  );
});
