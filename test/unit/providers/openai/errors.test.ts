/** The one status-to-error mapping of the OpenAI-compatible LLM, ASR and TTS clients. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APIConnectionError, APIError } from 'openai';
import { ErrorCode, VoiceError } from '../../../../core/errors.ts';
import { mapOpenAiError, retryAfterMs } from '../../../../providers/openai/errors.ts';
import { AnswerCutError, AnswerTooLargeError } from '../../../../providers/openai/http-fetch.ts';

const status = (code: number, headers: Record<string, string> = {}): APIError =>
  APIError.generate(code, { error: { message: 'said the provider' } }, undefined, new Headers(headers));

test('every client maps a status the same way: 408 and 5xx retryable, 401/403 and 4xx not', () => {
  for (const what of ['LLM', 'openai transcription', 'openai tts']) {
    const cases: Array<[number, string, boolean]> = [
      [408, ErrorCode.Timeout, true],
      [429, ErrorCode.RateLimited, true],
      [500, ErrorCode.ProviderFailed, true],
      [503, ErrorCode.ProviderFailed, true],
      [401, ErrorCode.ProviderRejected, false],
      [403, ErrorCode.ProviderRejected, false],
      [404, ErrorCode.ProviderRejected, false],
      [307, ErrorCode.ProviderRejected, false],
    ];
    for (const [code, expected, retryable] of cases) {
      const e = mapOpenAiError(status(code), what);
      assert.equal(e.code, expected, `${what} ${code}`);
      assert.equal(e.retryable, retryable, `${what} ${code}`);
      assert.match(e.message, /said the provider/);
    }
  }
});

test('connection, cut, oversize, stream and unreadable answers; a timeout reason wins over the abort it caused', () => {
  assert.equal(
    mapOpenAiError(new APIConnectionError({ cause: new Error('ECONNREFUSED') }), 'LLM').code,
    ErrorCode.ProviderUnavailable,
  );
  const cut = mapOpenAiError(new AnswerCutError(new Error('aborted')), 'openai tts');
  assert.ok(cut.code === ErrorCode.ProviderFailed && cut.retryable && /connection lost/.test(cut.message));
  const big = mapOpenAiError(new AnswerTooLargeError('an answer', 10), 'LLM');
  assert.ok(big.code === ErrorCode.ProviderFailed && !big.retryable);
  const inStream = mapOpenAiError(new APIError(undefined, { message: 'overloaded' }, undefined, new Headers()), 'LLM');
  assert.ok(inStream.code === ErrorCode.ProviderFailed && inStream.retryable && /overloaded/.test(inStream.message));
  const notJson = mapOpenAiError(new SyntaxError('Unexpected token'), 'LLM');
  assert.ok(notJson.code === ErrorCode.ProviderFailed && !notJson.retryable);
  const ac = new AbortController();
  const timeout = new VoiceError(ErrorCode.Timeout, 'no data', { retryable: true });
  ac.abort(timeout);
  assert.equal(mapOpenAiError(new DOMException('aborted', 'AbortError'), 'openai tts', ac.signal), timeout);
  assert.equal(mapOpenAiError(new DOMException('aborted', 'AbortError'), 'openai tts').code, ErrorCode.Aborted);
});

test('Retry-After is read in ms or seconds', () => {
  assert.equal(retryAfterMs(mapOpenAiError(status(429, { 'retry-after-ms': '50' }), 'LLM')), 50);
  assert.equal(retryAfterMs(mapOpenAiError(status(429, { 'retry-after': '2' }), 'LLM')), 2000);
  assert.equal(retryAfterMs(mapOpenAiError(status(429), 'LLM')), undefined);
});
