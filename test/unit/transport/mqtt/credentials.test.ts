import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkMqttCredentials,
  mqttClientId,
  mqttCredentials,
  parseMqttClientId,
  type MqttAuthPolicy,
} from '../../../../transport/mqtt/credentials.ts';
import { PacketSizeLimit } from '../../../../transport/mqtt/packet-limit.ts';

const SECRET = 'a secret of the store';
const MAC = 'aa:bb:cc:dd:ee:01';
const CID = '0b6e1c2a-1111-4222-8333-444455556666';

function policy(
  mode: MqttAuthPolicy['mode'],
  bound: Record<string, number> = {},
  allowedDevices: string[] = [],
): MqttAuthPolicy {
  return {
    mode,
    allowedDevices,
    secret: () => SECRET,
    binding: (d, c) => (bound[`${d}|${c}`] !== undefined ? { generation: bound[`${d}|${c}`] as number } : undefined),
  };
}

describe('MQTT credentials', () => {
  test('the client id names the pair and parses back; anything else is not a pair', () => {
    const id = mqttClientId(MAC, CID);
    assert.equal(id, `xiaozhi@@@aa_bb_cc_dd_ee_01@@@${CID}`);
    assert.deepEqual(parseMqttClientId(id), { deviceId: MAC, clientId: CID });
    assert.equal(parseMqttClientId('GID_test@@@aa_bb_cc_dd_ee_01@@@x'), null);
    assert.equal(parseMqttClientId('xiaozhi@@@aa_bb_cc_dd_ee@@@x'), null);
    assert.equal(parseMqttClientId(`xiaozhi@@@aa_bb_cc_dd_ee_01@@@${'x'.repeat(37)}`), null);
    // Upper case is not the canonical form OTA hands out.
    assert.equal(parseMqttClientId(`xiaozhi@@@aa_bb_cc_dd_ee_01@@@ABC`), null);
  });

  test('open mode: any well-formed pair with its password; nothing else', () => {
    const c = mqttCredentials(SECRET, MAC, CID, null);
    assert.equal(c.username, MAC);
    assert.deepEqual(checkMqttCredentials(c.client_id, c.username, Buffer.from(c.password), policy('open')), {
      ok: true,
      deviceId: MAC,
      clientId: CID,
    });
    const other = mqttCredentials(SECRET, 'aa:bb:cc:dd:ee:02', CID, null);
    assert.equal(checkMqttCredentials(c.client_id, c.username, Buffer.from(other.password), policy('open')).ok, false);
    assert.equal(
      checkMqttCredentials(c.client_id, 'aa:bb:cc:dd:ee:02', Buffer.from(c.password), policy('open')).ok,
      false,
    );
    assert.equal(checkMqttCredentials(c.client_id, c.username, undefined, policy('open')).ok, false);
    assert.equal(
      checkMqttCredentials(
        c.client_id,
        c.username,
        Buffer.from(mqttCredentials('another secret', MAC, CID, null).password),
        policy('open'),
      ).ok,
      false,
    );
    // allowedDevices applies as on the WebSocket.
    assert.equal(
      checkMqttCredentials(c.client_id, c.username, Buffer.from(c.password), policy('open', {}, ['aa:bb:cc:dd:ee:09']))
        .ok,
      false,
    );
  });

  test('activation and tokens: only a bound pair, with the password of its current binding', () => {
    for (const mode of ['activation', 'tokens'] as const) {
      const gen3 = mqttCredentials(SECRET, MAC, CID, 3);
      assert.equal(
        checkMqttCredentials(gen3.client_id, gen3.username, Buffer.from(gen3.password), policy(mode)).ok,
        false,
        'unbound',
      );
      assert.equal(
        checkMqttCredentials(
          gen3.client_id,
          gen3.username,
          Buffer.from(gen3.password),
          policy(mode, { [`${MAC}|${CID}`]: 3 }),
        ).ok,
        true,
      );
      // A password of an earlier binding (revoked, then bound again) does not open the new one.
      assert.equal(
        checkMqttCredentials(
          gen3.client_id,
          gen3.username,
          Buffer.from(gen3.password),
          policy(mode, { [`${MAC}|${CID}`]: 4 }),
        ).ok,
        false,
      );
      // Nor does the open-mode password.
      const openPw = mqttCredentials(SECRET, MAC, CID, null).password;
      assert.equal(
        checkMqttCredentials(gen3.client_id, gen3.username, Buffer.from(openPw), policy(mode, { [`${MAC}|${CID}`]: 3 }))
          .ok,
        false,
      );
    }
  });
});

describe('MQTT packet size limit', () => {
  const packet = (len: number): Buffer => {
    const bytes: number[] = [];
    let n = len;
    do {
      let b = n % 128;
      n = Math.floor(n / 128);
      if (n > 0) b |= 0x80;
      bytes.push(b);
    } while (n > 0);
    return Buffer.concat([Buffer.from([0x30, ...bytes]), Buffer.alloc(len)]);
  };

  test('packets up to the limit pass, whole or split anywhere; a larger one is refused at its length', () => {
    const stream = Buffer.concat([packet(0), packet(127), packet(128), packet(1000), Buffer.from([0xc0, 0x00])]);
    assert.ok(new PacketSizeLimit(1000).feed(stream));
    for (let cut = 1; cut < stream.length; cut += 37) {
      const l = new PacketSizeLimit(1000);
      assert.ok(l.feed(stream.subarray(0, cut)) && l.feed(stream.subarray(cut)), `split at ${cut}`);
    }
    const l = new PacketSizeLimit(1000);
    assert.ok(l.feed(packet(10)));
    // Refused from the length bytes alone, before any body arrives.
    assert.equal(l.feed(packet(1001).subarray(0, 3)), false);
    // A length of more than four bytes is not MQTT.
    assert.equal(new PacketSizeLimit(1 << 30).feed(Buffer.from([0x30, 0x80, 0x80, 0x80, 0x80, 0x01])), false);
  });
});
