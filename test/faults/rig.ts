/**
 * The per-file set-up every fault suite shares: the server and fake LLM it started (asserted
 * present when used, so a failed `before` fails the test instead of throwing a TypeError), and
 * fresh devices with distinct MAC addresses under the file's own prefix.
 */
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import type { FakeOpenAi } from '../fixtures/fake-openai.ts';
import type { VoiceApp } from '../helpers/voice-app.ts';

export class FaultRig {
  srv: VoiceApp | undefined;
  llm: FakeOpenAi | undefined;
  #n = 0;
  readonly #macPrefix: string;

  /** `macPrefix`: the first five bytes of the devices' MACs, e.g. `fa:00:00:00:03`. */
  constructor(macPrefix: string) {
    this.#macPrefix = macPrefix;
  }

  readonly server = (): VoiceApp => {
    assert.ok(this.srv, 'server started');
    return this.srv;
  };

  readonly fake = (): FakeOpenAi => {
    assert.ok(this.llm, 'fake LLM started');
    return this.llm;
  };

  readonly device = (): DeviceSim => new DeviceSim({ url: this.server().wsUrl, deviceId: `${this.#macPrefix}:${String(++this.#n).padStart(2, '0')}` });
}
