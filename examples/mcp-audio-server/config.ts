/**
 * @module The example server's settings, from CLI flags first and then environment variables
 * (this file is the example's only reader of process.env). Nothing here touches the network.
 */

export interface AudioServerConfig {
  transport: 'stdio' | 'http';
  /** HTTP mode: where to listen. 0 picks a free port (printed on stderr). */
  host: string;
  port: number;
  /** Local folder whose audio files form (part of) the catalog; served as file:// URLs. */
  musicDir?: string;
  /** Remote tracks: `Title | https://...` or a bare URL (title from the file name). */
  urls: string[];
  /**
   * Hosts the template may read (`example.com`, `*.example.com`, `127.0.0.1:8080`). Empty means
   * the hosts of the configured URL list. Anything else is refused (no SSRF).
   */
  allowHosts: string[];
  /** Largest page (end - start) a read may ask for, in bytes. */
  maxPageBytes: number;
  /** Timeout of one upstream HTTP request, in ms. */
  fetchTimeoutMs: number;
  /** Bytes kept of full bodies from hosts that ignore Range, so pages do not re-download. */
  cacheBytes: number;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8808,
  maxPageBytes: 1024 * 1024,
  fetchTimeoutMs: 20_000,
  cacheBytes: 64 * 1024 * 1024,
} as const;

export const USAGE = `usage: npx tsx examples/mcp-audio-server/main.ts (--stdio | --http [--port N] [--host H])
  --music-dir DIR        local audio files (env MCP_AUDIO_MUSIC_DIR)
  --urls "T|URL,URL"     remote tracks, comma-separated (env MCP_AUDIO_URLS)
  --url-file FILE        remote tracks, one per line: "Title | URL" or "URL" (env MCP_AUDIO_URL_FILE)
  --allow-hosts "h,h"    hosts the reader may fetch; default: the URL list's hosts (env MCP_AUDIO_ALLOW_HOSTS)
  --max-page-bytes N     largest page a read may ask for (default ${DEFAULTS.maxPageBytes})
  --fetch-timeout-ms N   upstream request timeout (default ${DEFAULTS.fetchTimeoutMs})
  --cache-mb N           body cache for hosts that ignore Range (default ${DEFAULTS.cacheBytes / 1024 / 1024})`;

/** Thrown for bad flags; main prints it with the usage text. */
export class ConfigError extends Error {}

/** Parses flags and env. `readFile` loads --url-file (injected so this stays pure). */
export function parseConfig(
  argv: readonly string[],
  env: Record<string, string | undefined>,
  readFile: (path: string) => string,
): AudioServerConfig {
  const flags = new Map<string, string>();
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${arg}`);
    const eq = arg.indexOf('=');
    if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (arg === '--stdio' || arg === '--http' || arg === '--help') switches.add(arg.slice(2));
    else {
      const value = argv[i + 1];
      if (value === undefined) throw new ConfigError(`${arg} needs a value`);
      flags.set(arg.slice(2), value);
      i++;
    }
  }
  if (switches.has('help')) throw new ConfigError('help');
  if (switches.has('stdio') && switches.has('http')) throw new ConfigError('choose one of --stdio and --http');
  const known = new Set([
    'port',
    'host',
    'music-dir',
    'urls',
    'url-file',
    'allow-hosts',
    'max-page-bytes',
    'fetch-timeout-ms',
    'cache-mb',
  ]);
  for (const k of flags.keys()) if (!known.has(k)) throw new ConfigError(`unknown flag --${k}`);

  const get = (flag: string, envName: string): string | undefined => flags.get(flag) ?? nonEmpty(env[envName]);
  const urls = splitList(get('urls', 'MCP_AUDIO_URLS'));
  const urlFile = get('url-file', 'MCP_AUDIO_URL_FILE');
  if (urlFile !== undefined) {
    for (const line of readFile(urlFile).split(/\r?\n/)) {
      const t = line.trim();
      if (t !== '' && !t.startsWith('#')) urls.push(t);
    }
  }
  const musicDir = get('music-dir', 'MCP_AUDIO_MUSIC_DIR');
  if (musicDir === undefined && urls.length === 0)
    throw new ConfigError('no catalog: give --music-dir and/or --urls/--url-file');
  return {
    transport: switches.has('http') ? 'http' : 'stdio',
    host: get('host', 'MCP_AUDIO_HOST') ?? DEFAULTS.host,
    port: int(get('port', 'MCP_AUDIO_PORT'), DEFAULTS.port, 0, 65535, 'port'),
    ...(musicDir !== undefined ? { musicDir } : {}),
    urls,
    allowHosts: splitList(get('allow-hosts', 'MCP_AUDIO_ALLOW_HOSTS')),
    maxPageBytes: int(flags.get('max-page-bytes'), DEFAULTS.maxPageBytes, 1, 64 * 1024 * 1024, 'max-page-bytes'),
    fetchTimeoutMs: int(flags.get('fetch-timeout-ms'), DEFAULTS.fetchTimeoutMs, 1, 600_000, 'fetch-timeout-ms'),
    cacheBytes: int(flags.get('cache-mb'), DEFAULTS.cacheBytes / 1024 / 1024, 0, 4096, 'cache-mb') * 1024 * 1024,
  };
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}

function splitList(v: string | undefined): string[] {
  return v === undefined
    ? []
    : v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
}

function int(v: string | undefined, fallback: number, min: number, max: number, name: string): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ConfigError(`--${name} must be an integer in ${min}..${max}, got ${v}`);
  return n;
}
