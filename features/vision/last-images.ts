/**
 * @module The opt-in keeping of each device's last photo (`vision.keepLast`), for the console's
 * device view: in memory only, bounded by devices and by bytes (the oldest dropped first), deleted
 * on request. Nothing is kept when the setting is off: this object is not made then.
 */
import type { ImageMime } from './image-check.ts';

export interface LastImage {
  deviceId: string;
  mime: ImageMime;
  width: number;
  height: number;
  data: Buffer;
  question: string;
  /** The model's answer; absent when it gave none. */
  answer?: string;
  /** ISO time it arrived. */
  at: string;
}

export class LastImages {
  readonly #maxDevices: number;
  readonly #maxBytes: number;
  /** By lower-case Device-Id, oldest first. */
  readonly #byDevice = new Map<string, LastImage>();
  #bytes = 0;

  constructor(limits: { maxDevices: number; maxBytes: number }) {
    this.#maxDevices = limits.maxDevices;
    this.#maxBytes = limits.maxBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  keep(image: LastImage): void {
    if (image.data.length > this.#maxBytes) return;
    this.delete(image.deviceId);
    for (const [key, old] of this.#byDevice) {
      if (this.#byDevice.size < this.#maxDevices && this.#bytes + image.data.length <= this.#maxBytes) break;
      this.#byDevice.delete(key);
      this.#bytes -= old.data.length;
    }
    this.#byDevice.set(image.deviceId.toLowerCase(), image);
    this.#bytes += image.data.length;
  }

  get(deviceId: string): LastImage | undefined {
    return this.#byDevice.get(deviceId.toLowerCase());
  }

  /** True when there was one. */
  delete(deviceId: string): boolean {
    const key = deviceId.toLowerCase();
    const old = this.#byDevice.get(key);
    if (!old) return false;
    this.#byDevice.delete(key);
    this.#bytes -= old.data.length;
    return true;
  }
}
