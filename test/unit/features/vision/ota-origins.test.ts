import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OtaOrigins } from '../../../../features/vision/ota-origins.ts';

test("a pair's latest OTA origin is kept, by Device-Id and Client-Id (case-blind), within the bound", () => {
  const o = new OtaOrigins(3);
  o.remember('AA:00', 'c1', 'http://192.168.1.5:8000');
  o.remember('aa:00', 'C1', 'https://voice.example');
  assert.equal(o.get('aa:00', 'c1'), 'https://voice.example', 'the latest wins');
  assert.equal(o.get('aa:00', 'c2'), undefined, 'another client of the same MAC is another pair');
  o.remember('bb:00', 'c1', 'http://b');
  o.remember('cc:00', 'c1', 'http://c');
  o.remember('aa:00', 'c1', 'https://voice.example'); // seen again: the newest
  o.remember('dd:00', 'c1', 'http://d');
  assert.equal(o.size, 3);
  assert.equal(o.get('bb:00', 'c1'), undefined, 'the least recently seen is forgotten');
  assert.equal(o.get('aa:00', 'c1'), 'https://voice.example');
  assert.equal(o.get('dd:00', 'c1'), 'http://d');
});
