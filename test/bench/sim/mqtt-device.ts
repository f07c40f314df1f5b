/**
 * A device of the fleet on the firmware's MQTT+UDP transport: the simulated firmware
 * (test/fixtures/firmware) boots (OTA, broker connection) and opens its audio channel (hello, UDP);
 * the spoken turn is FleetMember's, the same as over WebSocket.
 */
import { SimFirmware } from '../../fixtures/firmware/firmware.ts';
import { FIRMWARE_2_4_2 } from '../../fixtures/firmware/ota.ts';
import { FleetMember, type ConnectOptions } from './device.ts';
import { sleep } from './stats.ts';

/** CONNACK "server unavailable": the broker's refusal for capacity, retried like a 503. */
const SERVER_UNAVAILABLE = 3;
const RETRY_AFTER_MS = 2000;

export class MqttFleetDevice extends FleetMember {
  fw: SimFirmware | null = null;

  get connected(): boolean {
    return !!this.fw && !this.lost && this.fw.mqttConnected && this.fw.channelOpen;
  }

  /** Connected to the broker (with or without an audio channel). */
  get online(): boolean {
    return !!this.fw && this.fw.mqttConnected;
  }

  /** OTA, the broker connection, and (unless `openSession` is false) hello and the UDP channel. */
  async connect(opts: ConnectOptions): Promise<void> {
    if (!opts.ota) throw new Error('an MQTT device needs the OTA answer (its broker credentials): drop --no-ota');
    this.noteOpened();
    const fw = new SimFirmware({
      otaUrl: opts.otaUrl,
      identity: this.id,
      build: FIRMWARE_2_4_2,
      keepHistory: false,
      pinHost: new URL(opts.otaUrl).hostname,
      warn: opts.warn,
      onJson: (msg, at) => {
        if (this.fw === fw) this.noteJson(msg, at);
      },
      onFrame: (f) => {
        // Every accepted datagram counts, like every binary message on WebSocket.
        if (this.fw === fw) this.noteFrame(f.at);
      },
      onLost: () => {
        if (this.fw === fw) this.noteLost();
      },
      helloTimeoutMs: opts.timeoutMs,
    });
    this.fw = fw;
    await fw.checkVersion(AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)]));
    const retryUntil = performance.now() + opts.retryForMs;
    for (;;) {
      try {
        await fw.startMqtt();
        break;
      } catch (err) {
        if (fw.lastConnackCode !== SERVER_UNAVAILABLE) throw err;
        this.refusals++;
        const wait = RETRY_AFTER_MS * (1 + Math.random() * 0.25);
        if (opts.signal.aborted || performance.now() + wait > retryUntil)
          throw new Error(`broker refused the connection (${this.refusals} tries)`);
        await sleep(wait);
      }
    }
    if (opts.openSession === false) return;
    await fw.openAudioChannel();
  }

  protected sendListenStart(): void {
    this.fw?.listenStart('auto');
  }

  protected sendOpus(packet: Buffer): void {
    this.fw?.sendAudio(packet);
  }

  protected sendAbort(): void {
    this.fw?.abort();
  }

  /** The device's goodbye when a channel is open, then the broker connection dropped. */
  async close(): Promise<void> {
    this.endTurns();
    const fw = this.fw;
    if (!fw) return;
    if (fw.channelOpen) fw.closeAudioChannel(true);
    // Give the goodbye a moment to leave before the socket is ended.
    await sleep(20);
    fw.close();
    this.noteLost();
  }
}
