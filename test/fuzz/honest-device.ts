/**
 * The bystander of the fuzz runs: an ordinary device on the same server that keeps talking while
 * the fuzzed connections come and go (typed turns through `listen detect`), and at the end
 * completes a real spoken turn (flite speech → Opus at real-time pace → VAD → ASR → LLM → TTS).
 */
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { sendPaced, speak16k, utterancePackets } from '../helpers/speech.ts';
import { sleep } from '../helpers/wait.ts';

export class HonestDevice {
  readonly dev: DeviceSim;
  turns = 0;
  failures: string[] = [];
  #stopped = false;
  #loop: Promise<void> = Promise.resolve();

  private constructor(dev: DeviceSim) {
    this.dev = dev;
  }

  static async connect(wsUrl: string): Promise<HonestDevice> {
    const dev = new DeviceSim({ url: wsUrl, deviceId: '02:00:00:00:00:01', protocolVersion: 3 });
    await dev.hello();
    return new HonestDevice(dev);
  }

  /** One typed turn: answered, spoken, and ended with tts stop. */
  async textTurn(): Promise<void> {
    const from = this.dev.json.length;
    this.dev.listen('detect', { text: 'what time is it' });
    const sentence = await this.dev.waitJson('tts', 'sentence_start', 20_000, from);
    assert.match(String(sentence.text), /what time is it/i);
    await this.dev.waitJson('tts', 'stop', 20_000, from);
    this.turns++;
  }

  /**
   * Typed turns one after another until stop(), each started at least `minIntervalMs` after the
   * last (as a person asks, within the server's turn budget); failures are kept, not thrown.
   */
  startTalking(minIntervalMs = 0): void {
    this.#loop = (async () => {
      while (!this.#stopped && this.dev.closeCode === null) {
        const startedAt = Date.now();
        try {
          await this.textTurn();
        } catch (err) {
          this.failures.push(String(err).slice(0, 500));
        }
        while (!this.#stopped && Date.now() - startedAt < minIntervalMs)
          await sleep(Math.min(100, minIntervalMs - (Date.now() - startedAt)));
      }
    })();
  }

  async stopTalking(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
  }

  /** A real spoken turn on the same session. */
  async voiceTurn(): Promise<string> {
    const packets = await utterancePackets(speak16k('what is the weather today'));
    const from = this.dev.json.length;
    this.dev.listen('start', { mode: 'auto' });
    await sendPaced(this.dev, packets, 60, () => this.dev.json.slice(from).some((j) => j.msg.type === 'tts'));
    const stt = await this.dev.waitFor(
      'stt',
      () => this.dev.json.slice(from).find((j) => j.msg.type === 'stt')?.msg,
      20_000,
    );
    await this.dev.waitJson('tts', 'stop', 20_000, from);
    return String(stt.text);
  }

  close(): void {
    this.dev.close();
  }
}
