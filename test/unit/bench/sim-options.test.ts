/**
 * The simulator's command line: `--flag=value` equals `--flag value`, but a value is passed whole,
 * so a node flag handed to the server with `--server-arg` keeps its own `=`. `--profile` sets the
 * fakes' latencies and an explicit flag overrides one of them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs } from '../../bench/sim/options.ts';
import { PROFILES } from '../../bench/sim/provider-profiles.ts';

function parsed(argv: string[]): Exclude<ReturnType<typeof parseArgs>, 'help'> {
  const o = parseArgs(argv);
  assert.notEqual(o, 'help');
  return o as Exclude<typeof o, 'help'>;
}

test('a value that looks like --flag=value is passed whole', () => {
  const o = parsed(['--devices', '1,50', '--server-arg', '--max-semi-space-size=64', '--server-arg', '--trace-gc']);
  assert.deepEqual(o.serverArgs, ['--max-semi-space-size=64', '--trace-gc']);
  assert.deepEqual(o.devices, [1, 50]);
});

test('--flag=value is the same as --flag value', () => {
  const o = parsed(['--devices=1,5', '--server-arg=--max-semi-space-size=8']);
  assert.deepEqual(o.devices, [1, 5]);
  assert.deepEqual(o.serverArgs, ['--max-semi-space-size=8']);
});

test('a switch given a value is refused, not silently ignored', () => {
  assert.throws(() => parseArgs(['--barge-in=yes']), /--barge-in takes no value/);
  assert.throws(() => parseArgs(['--devices']), /--devices needs a value/);
});

test('--transport: websocket by default, ws or mqtt; mqtt needs OTA', () => {
  assert.equal(parsed([]).transport, 'websocket');
  assert.equal(parsed(['--transport', 'ws']).transport, 'websocket');
  assert.equal(parsed(['--transport=mqtt', '--idle', '5']).transport, 'mqtt');
  assert.throws(() => parseArgs(['--transport', 'udp']), /--transport is websocket or mqtt/);
  assert.throws(() => parseArgs(['--transport', 'mqtt', '--no-ota']), /needs OTA/);
});

test("--profile sets every provider figure: instant keeps the embedded TTS and no delay, cloud is issue 43's", () => {
  const instant = parsed([]);
  assert.equal(instant.profile, 'instant');
  assert.deepEqual(instant.providers, PROFILES.instant);
  assert.equal(instant.providers.tts, 'embedded');
  assert.equal(instant.providers.llmTtftMs, 0);
  const cloud = parsed(['--profile', 'cloud']);
  assert.equal(cloud.profile, 'cloud');
  assert.deepEqual(
    [cloud.providers.asrMs, cloud.providers.asrPerAudio, cloud.providers.llmTtftMs, cloud.providers.llmTokensPerS],
    [350, 0.05, 450, 40],
  );
  assert.deepEqual(
    [
      cloud.providers.tts,
      cloud.providers.ttsFirstAudioMs,
      cloud.providers.asrFinalMs,
      cloud.providers.ttsStreamFirstAudioMs,
    ],
    ['remote', 250, 80, 150],
  );
  assert.equal(parsed(['--profile=local-gpu']).providers.llmTtftMs, PROFILES['local-gpu'].llmTtftMs);
});

test('an explicit latency flag overrides the profile wherever it stands on the line, and changes nothing else', () => {
  for (const argv of [
    ['--llm-ttft-ms', '300', '--profile', 'cloud'],
    ['--profile', 'cloud', '--llm-ttft-ms=300'],
  ]) {
    const o = parsed(argv);
    assert.equal(o.providers.llmTtftMs, 300, argv.join(' '));
    assert.deepEqual(
      { ...o.providers, llmTtftMs: PROFILES.cloud.llmTtftMs },
      PROFILES.cloud,
      'the rest is the profile',
    );
  }
  const o = parsed(['--profile', 'cloud', '--asr-per-audio', '0.1', '--tts-speed', '1.5', '--tts', 'remote']);
  assert.equal(o.providers.asrPerAudio, 0.1);
  assert.equal(o.providers.ttsSpeed, 1.5);
  // The profiles themselves are not changed by an override.
  assert.equal(PROFILES.cloud.asrPerAudio, 0.05);
  // A remote TTS on the instant profile, with its own first-audio delay.
  const r = parsed(['--tts', 'remote', '--tts-first-audio-ms', '120']);
  assert.deepEqual([r.providers.tts, r.providers.ttsFirstAudioMs, r.providers.llmTtftMs], ['remote', 120, 0]);
});

test('latency flags refuse what they cannot honour: bad values, remote-TTS figures with the embedded TTS, a server given by --url', () => {
  assert.throws(() => parseArgs(['--profile', 'fast']), /--profile is instant, cloud, local-gpu/);
  assert.throws(() => parseArgs(['--llm-ttft-ms', '-5']), /--llm-ttft-ms needs an integer from 0 to 60000/);
  assert.throws(() => parseArgs(['--llm-ttft-ms', '1.5']), /needs an integer/);
  assert.throws(() => parseArgs(['--asr-per-audio', 'x']), /--asr-per-audio needs a number from 0 to 10/);
  assert.throws(() => parseArgs(['--asr', 'whisper']), /--asr is batch or streaming/);
  assert.equal(parsed(['--profile', 'cloud', '--asr', 'streaming']).providers.asr, 'streaming');
  assert.throws(() => parseArgs(['--tts', 'cloud']), /--tts is embedded, remote or streaming/);
  assert.throws(() => parseArgs(['--tts-first-audio-ms', '250']), /only applies to the remote TTS fake.*--tts remote/);
  assert.throws(
    () => parseArgs(['--profile', 'cloud', '--tts', 'embedded', '--tts-speed', '3']),
    /--tts-speed only applies/,
  );
  assert.throws(
    () => parseArgs(['--url', 'ws://127.0.0.1:8000/xiaozhi/v1/', '--profile', 'cloud']),
    /--profile sets the simulator's own fakes/,
  );
});

test('--server-node picks the node binary of the self-started server; it means nothing with --url', () => {
  assert.equal(parsed([]).serverNode, undefined);
  assert.equal(parsed(['--idle', '5', '--server-node', '/usr/bin/node']).serverNode, '/usr/bin/node');
  assert.throws(
    () => parseArgs(['--url', 'ws://127.0.0.1:8000/xiaozhi/v1/', '--server-node', '/usr/bin/node']),
    /--server-node is for the self-started server/,
  );
});

test('--tts streaming: the stream figure applies to it, the speed too, the remote first audio does not; the stream figure is refused elsewhere', () => {
  const o = parsed([
    '--profile',
    'cloud',
    '--tts',
    'streaming',
    '--tts-stream-first-audio-ms',
    '90',
    '--tts-speed',
    '3',
  ]);
  assert.deepEqual(o.providers, { ...PROFILES.cloud, tts: 'streaming', ttsStreamFirstAudioMs: 90, ttsSpeed: 3 });
  assert.throws(
    () => parseArgs(['--profile', 'cloud', '--tts', 'streaming', '--tts-first-audio-ms', '200']),
    /--tts-first-audio-ms only applies to the remote TTS fake.*streaming.*--tts remote/,
  );
  assert.throws(
    () => parseArgs(['--profile', 'cloud', '--tts-stream-first-audio-ms', '90']),
    /--tts-stream-first-audio-ms only applies to the streaming TTS fake.*remote.*--tts streaming/,
  );
  assert.throws(
    () => parseArgs(['--tts-stream-first-audio-ms', '90']),
    /--tts-stream-first-audio-ms only applies to the streaming TTS fake.*espeak-ng.*--tts streaming/,
  );
  // The profile's own stream figure is no explicit flag: nothing to refuse.
  assert.equal(parsed(['--profile', 'cloud']).providers.ttsStreamFirstAudioMs, 150);
  assert.throws(() => parseArgs(['--tts', 'embedded', '--tts-speed', '2']), /--tts-speed only applies/);
});

test('--pipeline realtime: the speech-to-speech stand-in with its own first-audio figure; the figure is refused on the cascade', () => {
  assert.equal(parsed([]).providers.pipeline, 'cascade');
  const o = parsed(['--profile', 'cloud', '--pipeline', 'realtime']);
  assert.deepEqual([o.providers.pipeline, o.providers.realtimeFirstAudioMs], ['realtime', 300]);
  const f = parsed(['--pipeline', 'realtime', '--realtime-first-audio-ms', '120', '--profile', 'cloud']);
  assert.equal(f.providers.realtimeFirstAudioMs, 120);
  assert.throws(() => parseArgs(['--pipeline', 'e2e']), /--pipeline is cascade or realtime/);
  assert.throws(
    () => parseArgs(['--profile', 'cloud', '--realtime-first-audio-ms', '200']),
    /only applies to the realtime stand-in: add --pipeline realtime/,
  );
});
