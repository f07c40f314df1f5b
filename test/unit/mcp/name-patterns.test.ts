import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  SAFE_TOOL_NAME,
  ToolNameMap,
  globToRegExp,
  passesFilter,
  sanitizeToolName,
} from '../../../mcp/name-patterns.ts';

describe('tool names', () => {
  test('sanitizes to the OpenAI function-name alphabet', () => {
    assert.equal(sanitizeToolName('self.audio_speaker.set_volume'), 'self_audio_speaker_set_volume');
    assert.equal(sanitizeToolName('weather server__get forecast'), 'weather_server__get_forecast');
    assert.equal(sanitizeToolName('天气'), '__');
    assert.equal(sanitizeToolName(''), 'tool');
  });

  test('long names are cut to 64 with a hash so distinct names stay distinct', () => {
    const a = sanitizeToolName(`${'a'.repeat(70)}_one`);
    const b = sanitizeToolName(`${'a'.repeat(70)}_two`);
    assert.match(a, SAFE_TOOL_NAME);
    assert.match(b, SAFE_TOOL_NAME);
    assert.notEqual(a, b);
  });

  test('collisions get numbered suffixes and map back', () => {
    const m = new ToolNameMap<string>();
    assert.equal(m.add('s__a.b', 'a.b'), 's__a_b');
    assert.equal(m.add('s__a_b', 'a_b'), 's__a_b_2');
    assert.equal(m.add('s__a b', 'a b'), 's__a_b_3');
    const long = m.add('x'.repeat(64), 'l1');
    const long2 = m.add('x'.repeat(64), 'l2');
    assert.equal(long.length, 64);
    assert.equal(long2.length, 64);
    assert.notEqual(long, long2);
    assert.equal(m.get('s__a_b_2'), 'a_b');
    assert.equal(m.get(long2), 'l2');
    assert.equal(m.get('nope'), undefined);
  });

  test('globs and include/exclude filters', () => {
    assert.ok(globToRegExp('get_*').test('get_weather'));
    assert.ok(!globToRegExp('get_*').test('set_weather'));
    assert.ok(globToRegExp('a.b?').test('a.bc'));
    assert.ok(!globToRegExp('a.b').test('axb'), 'dots are literal');
    assert.ok(passesFilter('x', undefined, undefined));
    assert.ok(passesFilter('get_a', ['get_*'], ['get_b']));
    assert.ok(!passesFilter('get_b', ['get_*'], ['get_b']));
    assert.ok(!passesFilter('put_a', ['get_*'], undefined));
  });
});
