/** The server's own names for browser requests, per form of Host header. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { hostName, OwnHosts } from '../../../features/identity/origin.ts';

const own = new OwnHosts(
  {
    publicHosts: ['Voice.Example.org', 'speaker.lan:8443', '192.0.2.10', '2001:db8::10', '[2001:db8::11]:8000'],
    publicWsUrl: 'wss://ws.example.net:443/xiaozhi/v1/',
  },
  () => ['10.1.2.3', '2001:db8::7'],
);

test('Host forms: case, port, brackets and a trailing dot do not matter', () => {
  assert.equal(hostName('Name.Example:8000'), 'name.example');
  assert.equal(hostName('[::1]:80'), '::1');
  assert.equal(hostName('localhost.'), 'localhost');
  for (const bad of ['user@host', 'host/path', 'a b', '']) assert.equal(hostName(bad), null, bad);
});

test('listed names, the publicWsUrl host, localhost and the machine name are own names', () => {
  for (const h of [
    'voice.example.org',
    'VOICE.EXAMPLE.ORG:80',
    'speaker.lan',
    'ws.example.net:8000',
    'localhost:8000',
    '192.0.2.10',
    hostname(),
    `${hostname()}.local:8000`,
  ]) {
    assert.ok(own.has(h), h);
  }
});

test('loopback and interface addresses are own addresses, in any spelling', () => {
  for (const h of [
    '127.0.0.1:8000',
    '127.9.9.9',
    '[::1]:8000',
    '[::ffff:127.0.0.1]',
    '10.1.2.3:8000',
    '[2001:db8:0::7]:80',
    '[::ffff:10.1.2.3]',
    '[2001:DB8::10]',
    '[2001:db8::11]:443',
  ])
    assert.ok(own.has(h), h);
});

test('anything else is not: a rebinding name, other addresses, no Host', () => {
  for (const h of [
    'evil.example:8000',
    'voice.example.org.evil.example',
    'sub.voice.example.org',
    '10.1.2.4',
    '[2001:db8::8]',
    'localhost.evil.example',
    undefined,
  ]) {
    assert.ok(!own.has(h), String(h));
  }
});

test('a flood of unknown addresses reads the interfaces once a second, not once a request; a new one shows after that', () => {
  let reads = 0;
  let now = 0;
  let list = ['10.1.2.3'];
  const hosts = new OwnHosts(
    { publicHosts: [], publicWsUrl: '' },
    () => (reads++, list),
    () => now,
  );
  for (let i = 0; i < 1000; i++) assert.ok(!hosts.has(`10.9.${i >> 8}.${i & 255}`));
  assert.equal(reads, 1);
  list = ['10.1.2.3', '10.1.2.4'];
  assert.ok(!hosts.has('10.1.2.4'), 'within the second the old list is used');
  now = 1001;
  assert.ok(hosts.has('10.1.2.4'));
  assert.equal(reads, 2);
});
