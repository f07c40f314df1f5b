/**
 * What a device does against a running server, from the outside: OTA, then the WebSocket URL it
 * hands out, hello, one spoken question (flite speech as paced Opus) and the spoken answer.
 * Shared by the shutdown test and the container smoke test.
 */
import assert from 'node:assert/strict';
import { DeviceSim } from '../../../fixtures/device-sim.ts';
import { decodeDownlink, sendPaced } from '../../../helpers/speech.ts';

/** POSTs the firmware's OTA request; returns the WebSocket URL the server hands out. */
export async function otaWebsocketUrl(httpUrl: string, deviceId: string): Promise<string> {
  const res = await fetch(`${httpUrl}/xiaozhi/ota/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Device-Id': deviceId, 'Client-Id': 'ops-test' },
    body: JSON.stringify({
      application: { name: 'xiaozhi', version: '2.4.2' },
      mac_address: deviceId,
      board: { type: 'bread-compact-wifi' },
    }),
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(res.status, 200, 'OTA answers 200');
  const body = (await res.json()) as { websocket?: { url?: unknown } };
  const url = body.websocket?.url;
  assert.equal(typeof url, 'string', 'OTA hands out websocket.url');
  return url as string;
}

export interface SpokenTurnResult {
  dev: DeviceSim;
  recognised: string;
  answer: string;
  /** Decoded answer audio, ms. */
  audioMs: number;
}

/** Connects, says hello and asks one question; leaves the device connected. */
export async function connectAndAsk(
  wsUrl: string,
  deviceId: string,
  packets: readonly Buffer[],
  opts: { waitForStop?: boolean } = {},
): Promise<SpokenTurnResult> {
  const dev = new DeviceSim({ url: wsUrl, deviceId });
  try {
    await dev.hello();
    dev.listen('start', { mode: 'auto' });
    const sending = sendPaced(dev, packets, 60, () => dev.json.some((j) => j.msg.type === 'tts'));
    const stt = await dev.waitJson('stt', undefined, 30_000);
    const sentence = await dev.waitJson('tts', 'sentence_start', 20_000);
    await sending;
    if (opts.waitForStop === false)
      return { dev, recognised: String(stt.text), answer: String(sentence.text), audioMs: 0 };
    await dev.waitJson('tts', 'stop', 30_000);
    const decoded = await decodeDownlink(dev.audio.map((a) => a.payload));
    assert.equal(decoded.bad, 0, 'every answer frame decodes');
    return { dev, recognised: String(stt.text), answer: String(sentence.text), audioMs: decoded.ms };
  } catch (err) {
    dev.close();
    throw err;
  }
}

/** Reads one sample value from Prometheus text (`name{labels} value`); labels match as a substring. */
export function metricValue(text: string, name: string, labels = ''): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels && !rest.includes(labels)) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) return v;
  }
  return undefined;
}
