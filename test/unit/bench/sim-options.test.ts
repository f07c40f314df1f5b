/**
 * The simulator's command line: `--flag=value` equals `--flag value`, but a value is passed whole,
 * so a node flag handed to the server with `--server-arg` keeps its own `=`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs } from '../../bench/sim/options.ts';

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

test('--server-node picks the node binary of the self-started server; it means nothing with --url', () => {
  assert.equal(parsed([]).serverNode, undefined);
  assert.equal(parsed(['--idle', '5', '--server-node', '/usr/bin/node']).serverNode, '/usr/bin/node');
  assert.throws(
    () => parseArgs(['--url', 'ws://127.0.0.1:8000/xiaozhi/v1/', '--server-node', '/usr/bin/node']),
    /--server-node is for the self-started server/,
  );
});
