/**
 * The Ogg/Opus muxer against the real decoder: packets of our Opus encoder, put in Ogg pages here,
 * are read back by ffmpeg (ffprobe sees one mono Opus stream; ffmpeg decodes the whole tone without
 * an error, as long as what was encoded). The page CRC is the one Ogg specifies.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ffmpegDecodeOgg as ffmpegDecode } from '../../../helpers/ogg-decode.ts';
import { createOpusCodec } from '../../../../audio/opus/codec.ts';
import { oggCrc } from '../../../../audio/opus/ogg-crc.ts';
import { oggOpus, opusPacketSamples } from '../../../../features/push/ogg-opus.ts';

/** `seconds` of a 440 Hz tone at `rate`, as Opus packets of 60 ms. */
async function tonePackets(seconds: number, rate: 24000 | 16000): Promise<Buffer[]> {
  const codec = await createOpusCodec({ sampleRate: rate, frameMs: 60 });
  try {
    const frame = (rate * 60) / 1000;
    const out: Buffer[] = [];
    for (let f = 0; f < Math.round((seconds * 1000) / 60); f++) {
      const pcm = new Int16Array(frame);
      for (let i = 0; i < frame; i++)
        pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * frame + i)) / rate));
      out.push(codec.encode(pcm));
    }
    return out;
  } finally {
    codec.close();
  }
}

describe('oggOpus', () => {
  test('the CRC is Ogg\'s (polynomial 0x04c11db7, unreflected): the check value of "123456789"', () => {
    assert.equal(oggCrc(Buffer.from('123456789')), 0x89a1897f);
  });

  test('the samples of a packet come from its TOC', async () => {
    const [p] = await tonePackets(0.06, 24000);
    assert.ok(p);
    assert.equal(opusPacketSamples(p), 2880);
  });

  test('ffprobe sees one mono Opus stream and ffmpeg decodes all of it without an error', async () => {
    // 3 s: more packets than fit one page's 255 lacing values with the larger ones.
    const packets = await tonePackets(3, 24000);
    const ogg = oggOpus(packets, { inputSampleRate: 24000 });
    const probe = spawnSync(
      'ffprobe',
      ['-hide_banner', '-loglevel', 'error', '-show_streams', '-of', 'json', '-f', 'ogg', 'pipe:0'],
      { input: ogg },
    );
    assert.equal(probe.status, 0, probe.stderr.toString());
    const info = JSON.parse(probe.stdout.toString()) as { streams: Array<{ codec_name: string; channels: number }> };
    assert.equal(info.streams.length, 1);
    assert.equal(info.streams[0]?.codec_name, 'opus');
    assert.equal(info.streams[0]?.channels, 1);
    const d = ffmpegDecode(ogg);
    assert.equal(d.status, 0);
    assert.equal(d.stderr, '', 'no decoder complaint (a wrong CRC or page is reported)');
    assert.ok(Math.abs(d.pcm.length / 16000 - 3) < 0.1, `decoded ${d.pcm.length / 16000} s`);
    assert.ok(d.rms > 2000, 'the tone is there');
  });

  test('a corrupted byte is caught by the page CRC', async () => {
    const ogg = oggOpus(await tonePackets(1, 16000), { inputSampleRate: 16000 });
    const bad = Buffer.from(ogg);
    bad[bad.length - 10] = (bad[bad.length - 10] ?? 0) ^ 0xff;
    const d = ffmpegDecode(bad);
    assert.match(d.stderr, /checksum|CRC|invalid|error/i);
  });
});
