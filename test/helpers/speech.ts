/**
 * Test speech: real synthesized utterances (flite, which pocketsphinx recognises well; espeak-ng)
 * turned into the 16 kHz 60 ms Opus packets a device sends, and helpers to send them at real-time
 * pace and to decode what the server sends back.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOpusCodec } from '../../audio/opus/codec.ts';
import { resample } from '../../audio/pcm/resample.ts';
import { concatInt16, rms } from '../../audio/pcm/pcm.ts';
import type { DeviceSim } from '../fixtures/device-sim.ts';

/** Reads a 16-bit mono WAV file (the canonical 44-byte header flite and sox write). */
function readWav(file: string): { pcm: Int16Array; rate: number } {
  const buf = readFileSync(file);
  let at = 12;
  let rate = 16000;
  while (at + 8 <= buf.length) {
    const id = buf.toString('latin1', at, at + 4);
    const size = buf.readUInt32LE(at + 4);
    if (id === 'fmt ') rate = buf.readUInt32LE(at + 12);
    if (id === 'data') {
      const data = buf.subarray(at + 8, Math.min(buf.length, at + 8 + size));
      const pcm = new Int16Array(data.length >> 1);
      for (let i = 0; i < pcm.length; i++) pcm[i] = data.readInt16LE(i * 2);
      return { pcm, rate };
    }
    at += 8 + size + (size & 1);
  }
  throw new Error(`no data chunk in ${file}`);
}

/** Speech as 16 kHz mono PCM, from flite (default) or espeak-ng. */
export function speak16k(text: string, engine: 'flite' | 'espeak' = 'flite'): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'speech-'));
  const file = join(dir, 'u.wav');
  try {
    // kal16 is a 16 kHz voice; the default `kal` is 8 kHz and pocketsphinx recognises it poorly.
    if (engine === 'flite') execFileSync('flite', ['-voice', 'kal16', '-t', text, '-o', file]);
    else execFileSync('espeak-ng', ['-w', file, text]);
    const { pcm, rate } = readWav(file);
    return rate === 16000 ? pcm : resample(pcm, rate, 16000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** silence + speech + silence (16 kHz input), encoded as 60 ms Opus packets at `rate` (16 kHz like the firmware). */
export async function utterancePackets(
  speech: Int16Array,
  leadMs = 400,
  tailMs = 1500,
  rate: 16000 | 24000 = 16000,
): Promise<Buffer[]> {
  const codec = await createOpusCodec({ sampleRate: rate });
  try {
    const at16 = concatInt16([new Int16Array(16 * leadMs), speech, new Int16Array(16 * tailMs)]);
    const pcm = rate === 16000 ? at16 : resample(at16, 16000, rate);
    const frame = codec.frameSamples;
    const out: Buffer[] = [];
    for (let i = 0; i < pcm.length; i += frame) {
      const f = new Int16Array(frame);
      f.set(pcm.subarray(i, Math.min(pcm.length, i + frame)));
      out.push(Buffer.from(codec.encode(f)));
    }
    return out;
  } finally {
    codec.close();
  }
}

/** Sends packets at the device's real-time cadence (one per 60 ms). */
export async function sendPaced(
  dev: DeviceSim,
  packets: readonly Buffer[],
  frameMs = 60,
  stop?: () => boolean,
): Promise<void> {
  const start = performance.now();
  for (let i = 0; i < packets.length; i++) {
    if (stop?.()) return;
    const due = start + i * frameMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (dev.ws.readyState !== 1) return;
    dev.sendOpus(packets[i] as Buffer);
  }
}

/** Decodes received downlink packets; returns PCM and its duration. */
export async function decodeDownlink(
  packets: readonly Uint8Array[],
  sampleRate: 16000 | 24000 = 24000,
): Promise<{ pcm: Int16Array; ms: number; rms: number; bad: number }> {
  const codec = await createOpusCodec({ sampleRate });
  try {
    const parts: Int16Array[] = [];
    let bad = 0;
    for (const p of packets) {
      const d = codec.decode(p);
      if (d) parts.push(d);
      else bad++;
    }
    const pcm = concatInt16(parts);
    return { pcm, ms: (pcm.length / sampleRate) * 1000, rms: rms(pcm), bad };
  } finally {
    codec.close();
  }
}

/** Child processes of this test process whose command matches `re` (ffmpeg, espeak-ng, ...). */
export function childProcesses(re: RegExp): string[] {
  const out = execFileSync('ps', ['-o', 'pid=,ppid=,args=', '-e'], { encoding: 'utf8' });
  const rows = out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((r) => r.length >= 3);
  const byParent = new Map<string, string[][]>();
  for (const r of rows) byParent.set(r[1] as string, [...(byParent.get(r[1] as string) ?? []), r]);
  const found: string[] = [];
  const walk = (pid: string): void => {
    for (const r of byParent.get(pid) ?? []) {
      const args = r.slice(2).join(' ');
      if (re.test(args)) found.push(`${r[0]} ${args}`);
      walk(r[0] as string);
    }
  };
  walk(String(process.pid));
  return found;
}
