/** decodePcm: an audio delta's PCM only when it is canonical base64 of whole 16-bit samples. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodePcm } from '../../../../providers/openai-realtime/model-events.ts';

test('decodePcm: canonical base64 of whole samples decodes; anything else is undefined', () => {
  const pcm = Buffer.from([1, 2, 3, 4, 5, 6]);
  assert.deepEqual(decodePcm(pcm.toString('base64')), pcm);
  assert.deepEqual(decodePcm(Buffer.from([1, 2, 3, 4]).toString('base64')), Buffer.from([1, 2, 3, 4]));
  assert.deepEqual(decodePcm(''), Buffer.alloc(0));
  for (const bad of ['AQID', 'AQI!', 'AQ-_', 'AQ I', 'AQI', 'AQ==AQ==', 'AQ===', '%%%%'])
    assert.equal(decodePcm(bad), undefined, bad);
});
