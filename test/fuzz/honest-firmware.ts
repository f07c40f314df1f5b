/**
 * The bystander of the MQTT fuzz: a simulated firmware on MQTT+UDP with its audio channel open,
 * holding typed turns (`listen detect`) one after another while fuzzed packets, hellos and
 * datagrams come and go, and at the end a real spoken turn over UDP. Its own record says whether
 * anything reached it: downlink drops by the firmware's checks, sequence gaps, turns without audio.
 */
import assert from 'node:assert/strict';
import { SimFirmware } from '../fixtures/firmware/firmware.ts';
import { speak16k, utterancePackets } from '../helpers/speech.ts';
import { sleep } from '../helpers/wait.ts';

export class HonestFirmware {
  readonly fw: SimFirmware;
  /** The bystander's last uplink datagrams, as sent (what a replay copies). */
  readonly sent: Buffer[];
  turns = 0;
  failures: string[] = [];
  #stopped = false;
  #loop: Promise<void> = Promise.resolve();

  private constructor(fw: SimFirmware, sent: Buffer[]) {
    this.fw = fw;
    this.sent = sent;
  }

  /** Boots (OTA, broker) and opens the audio channel. */
  static async connect(otaUrl: string, deviceId = '02:00:00:00:00:01'): Promise<HonestFirmware> {
    const sent: Buffer[] = [];
    const fw = new SimFirmware({
      otaUrl,
      identity: { deviceId, clientId: 'a7c7c6a0-0000-4000-8000-000000000001' },
      onUplink: (d) => {
        sent.push(d);
        if (sent.length > 32) sent.shift();
      },
    });
    await fw.boot();
    await fw.openAudioChannel();
    return new HonestFirmware(fw, sent);
  }

  /**
   * A moment of open microphone with nothing said (manual listen, a second of encoded silence,
   * listen stop): uplink datagrams the fuzz can replay, and a sequence the server has seen.
   */
  async openMic(packets: readonly Buffer[]): Promise<void> {
    this.fw.listenStart('manual');
    await this.fw.sendPaced(packets);
    this.fw.listenStop();
  }

  /** One typed turn: answered with a sentence and audio the device plays, ended with tts stop. */
  async textTurn(): Promise<void> {
    const from = this.fw.json.length;
    const framesFrom = this.fw.audio.length;
    this.fw.wakeWordDetected('what time is it');
    const sentence = await this.fw.waitJson('tts', 'sentence_start', 20_000, from);
    assert.match(String(sentence.text), /what time is it/i);
    await this.fw.waitJson('tts', 'stop', 20_000, from);
    const played = this.fw.audio.slice(framesFrom).filter((f) => f.played).length;
    assert.ok(played > 0, 'the answer’s audio arrived and was played');
    this.turns++;
  }

  /** Typed turns until stop(), each at least `minIntervalMs` after the last; failures kept, not thrown. */
  startTalking(minIntervalMs = 0): void {
    this.#loop = (async () => {
      while (!this.#stopped && this.fw.channelOpen) {
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

  /** What the fuzz must not have changed: every downlink datagram passed the firmware's checks, in sequence. */
  assertUntouched(): void {
    assert.deepEqual(
      this.fw.drops,
      { short: 0, type: 0, size: 0, old: 0 },
      'no datagram the firmware would drop reached the bystander',
    );
    assert.equal(this.fw.sequenceGaps, 0, 'the bystander’s downlink sequence ran without gaps');
    assert.equal(this.fw.disconnects, 0, 'the bystander’s broker connection stayed up');
    assert.ok(this.fw.channelOpen, 'the bystander’s audio channel is still open');
  }

  /** A real spoken turn over UDP on the same channel; returns what the server recognised. */
  async voiceTurn(): Promise<string> {
    const packets = await utterancePackets(speak16k('what is the weather today'));
    const from = this.fw.json.length;
    this.fw.listenStart('auto');
    await this.fw.sendPaced(packets, () => this.fw.json.slice(from).some((j) => j.msg.type === 'tts'));
    const stt = await this.fw.waitFor(
      'stt',
      () => this.fw.json.slice(from).find((j) => j.msg.type === 'stt')?.msg,
      20_000,
    );
    await this.fw.waitJson('tts', 'stop', 20_000, from);
    return String(stt.text);
  }

  close(): void {
    this.fw.close();
  }
}
