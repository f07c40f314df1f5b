/**
 * The OTA `mqtt` section for xinnan's MQTT gateway, checked the way the gateway checks a CONNECT
 * (re-implemented here from its rules, not its code): the password must equal
 * base64(HMAC-SHA256(key, client_id + "|" + username)), the client id must split on `@@@` into
 * exactly three parts, the username must be base64 of a JSON object; the gateway then takes the
 * MAC from part two (`_` → `:`) and sends part three to this server as Client-Id.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { gatewayMqttSection } from '../../../../transport/mqtt/gateway-credentials.ts';

interface GatewayView {
  group: string;
  mac: string;
  uuid: string;
  userData: Record<string, unknown>;
}

/** What the gateway does with CONNECT's client id, username and password; throws where it refuses. */
function gatewayAccepts(key: string, clientId: string, username: string, password: string): GatewayView {
  const expected = createHmac('sha256', key)
    .update(clientId + '|' + username)
    .digest()
    .toString('base64');
  if (password !== expected) throw new Error('signature mismatch');
  const parts = clientId.split('@@@');
  if (parts.length !== 3) throw new Error('client id is not group@@@mac@@@uuid');
  if (username === '') throw new Error('empty username');
  const userData = JSON.parse(Buffer.from(username, 'base64').toString()) as unknown;
  if (typeof userData !== 'object' || userData === null) throw new Error('username is not a JSON object');
  const [group = '', mac = '', uuid = ''] = parts;
  return { group, mac: mac.replace(/_/g, ':'), uuid, userData: userData as Record<string, unknown> };
}

const KEY = 'Gw-Signing-Key-9f3';
const base = {
  endpoint: 'gw.example.org:1883',
  signatureKey: KEY,
  deviceId: 'a0:85:e3:f4:49:34',
  clientId: 'aeebef32-f0ef-4bce-9d8a-894d91bc6932',
  board: 'lichuang-dev',
  ip: '192.0.2.7',
};

function connect(section: Record<string, string | number>, key = KEY): GatewayView {
  const { client_id: clientId, username, password } = section;
  assert.equal(typeof clientId, 'string');
  assert.equal(typeof username, 'string');
  assert.equal(typeof password, 'string');
  return gatewayAccepts(key, String(clientId), String(username), String(password));
}

describe('gatewayMqttSection', () => {
  test('the gateway accepts the credentials and reads back the pair OTA saw', () => {
    const section = gatewayMqttSection(base);
    const seen = connect(section);
    assert.deepEqual(seen, {
      group: 'GID_lichuang-dev',
      mac: base.deviceId,
      uuid: base.clientId,
      userData: { ip: '192.0.2.7' },
    });
    assert.equal(section.client_id, 'GID_lichuang-dev@@@a0_85_e3_f4_49_34@@@aeebef32-f0ef-4bce-9d8a-894d91bc6932');
  });

  test('every field the firmware stores is there, with the types it reads', () => {
    const section = gatewayMqttSection({ ...base, keepaliveS: 90 });
    assert.deepEqual(Object.keys(section).sort(), [
      'client_id',
      'endpoint',
      'keepalive',
      'password',
      'publish_topic',
      'username',
    ]);
    assert.equal(section.endpoint, 'gw.example.org:1883');
    assert.equal(section.keepalive, 90);
    assert.equal(section.publish_topic, 'device-server');
    assert.equal(gatewayMqttSection(base).keepalive, 240);
  });

  test('a gateway with another key refuses them', () => {
    assert.throws(() => connect(gatewayMqttSection(base), 'Another-Key-123'), /signature mismatch/);
  });

  test('a credential altered in transit is refused', () => {
    const section = gatewayMqttSection(base);
    const otherUser = Buffer.from(JSON.stringify({ ip: '198.51.100.1' })).toString('base64');
    assert.throws(() => connect({ ...section, username: otherUser }), /signature mismatch/);
    assert.throws(
      () => connect({ ...section, client_id: String(section.client_id).replace('a0_85', 'a0_86') }),
      /signature mismatch/,
    );
  });

  test('a board name with spaces, colons or @ still gives three parts', () => {
    const seen = connect(gatewayMqttSection({ ...base, board: 'my board@@@x:1' }));
    assert.equal(seen.group, 'GID_my_board___x_1');
    assert.equal(seen.mac, base.deviceId);
    assert.equal(seen.uuid, base.clientId);
    assert.equal(connect(gatewayMqttSection({ ...base, board: '' })).group, 'GID_default');
    assert.ok(connect(gatewayMqttSection({ ...base, board: 'b'.repeat(500) })).group.length <= 68);
  });

  test('a Client-Id the split would break is replaced by the MAC', () => {
    for (const clientId of ['x@@@y', 'a@b', '']) {
      const seen = connect(gatewayMqttSection({ ...base, clientId }));
      assert.equal(seen.uuid, 'a0_85_e3_f4_49_34', clientId);
      assert.equal(seen.mac, base.deviceId);
    }
  });

  test("an endpoint without a port gets the gateway's 1883 (the firmware would try 8883 with TLS)", () => {
    const endpointOf = (endpoint: string): string | number | undefined =>
      gatewayMqttSection({ ...base, endpoint }).endpoint;
    assert.equal(endpointOf('gw.example.org'), 'gw.example.org:1883');
    assert.equal(endpointOf(' 10.0.0.5 '), '10.0.0.5:1883');
    assert.equal(endpointOf('10.0.0.5:2883'), '10.0.0.5:2883');
    assert.equal(endpointOf('[2001:db8::5]'), '[2001:db8::5]:1883');
    assert.equal(endpointOf('[2001:db8::5]:1884'), '[2001:db8::5]:1884');
  });

  test('the password is the HMAC for this device only', () => {
    const a = gatewayMqttSection(base);
    const b = gatewayMqttSection({ ...base, deviceId: 'a0:85:e3:f4:49:35' });
    assert.notEqual(a.password, b.password);
    assert.match(String(a.password), /^[A-Za-z0-9+/]{43}=$/);
  });
});
