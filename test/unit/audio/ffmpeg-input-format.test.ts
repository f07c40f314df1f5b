import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ffmpegInputFor } from '../../../audio/ffmpeg/input-format.ts';

describe('ffmpegInputFor: raw formats get explicit input options, everything else is probed', () => {
  test('compressed and containered types are left to the probe', () => {
    for (const t of [
      undefined,
      '',
      'audio/mpeg',
      'audio/wav',
      'audio/ogg; codecs=opus',
      'audio/flac',
      'application/octet-stream',
    ])
      assert.deepEqual(ffmpegInputFor(t), {}, String(t));
  });
  test('audio/L16 is big-endian with its rate and channels (RFC 2586)', () => {
    assert.deepEqual(ffmpegInputFor('audio/L16;rate=16000;channels=2'), {
      inputFormat: 's16be',
      inputArgs: ['-ar', '16000', '-ac', '2'],
    });
    assert.deepEqual(ffmpegInputFor('audio/l16'), { inputFormat: 's16be', inputArgs: ['-ar', '8000', '-ac', '1'] });
  });
  test('audio/pcm is little-endian, 24 kHz mono unless told', () => {
    assert.deepEqual(ffmpegInputFor('audio/pcm'), { inputFormat: 's16le', inputArgs: ['-ar', '24000', '-ac', '1'] });
    assert.deepEqual(ffmpegInputFor('audio/PCM; rate="16000"'), {
      inputFormat: 's16le',
      inputArgs: ['-ar', '16000', '-ac', '1'],
    });
  });
  test('μ-law and A-law at 8 kHz; absurd parameters are bounded or ignored', () => {
    assert.deepEqual(ffmpegInputFor('audio/basic'), { inputFormat: 'mulaw', inputArgs: ['-ar', '8000', '-ac', '1'] });
    assert.deepEqual(ffmpegInputFor('audio/pcma'), { inputFormat: 'alaw', inputArgs: ['-ar', '8000', '-ac', '1'] });
    assert.deepEqual(ffmpegInputFor('audio/pcm;rate=99999999;channels=-3'), {
      inputFormat: 's16le',
      inputArgs: ['-ar', '384000', '-ac', '1'],
    });
  });
});
