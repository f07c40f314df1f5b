/**
 * The configured wake words, normalized once per configuration: every session of a server reads
 * the same set (a set per session was ~400 bytes of heap for each connected device).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isWakeWord, wakeWordSet } from '../../../voice/conversation/wake-words.ts';

test('the sessions of one configuration share one set of its wake words', () => {
  const configured = ['Hello Xiaozhi', '你好，小智'];
  assert.equal(wakeWordSet(configured), wakeWordSet(configured));
  assert.notEqual(wakeWordSet(configured), wakeWordSet([...configured]), 'another configuration, its own set');
});

test('a wake word matches whatever the recogniser made of case, punctuation and spacing', () => {
  const words = wakeWordSet(['Hello Xiaozhi', '你好，小智']);
  assert.ok(isWakeWord(words, 'hello, xiaozhi!'));
  assert.ok(isWakeWord(words, '你好小智。'));
  assert.ok(!isWakeWord(words, 'hello there'));
});
