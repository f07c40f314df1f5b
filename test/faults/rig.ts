/**
 * The per-file set-up every fault suite shares: the server and fake LLM it started (asserted
 * present when used, so a failed `before` fails the test instead of throwing a TypeError), fresh
 * devices with distinct MAC addresses under the file's own prefix, and the one warm-up.
 */
import assert from 'node:assert/strict';
import { DeviceSim } from '../fixtures/device-sim.ts';
import { fakeText, startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.ts';
import { startVoiceApp, type VoiceApp } from '../helpers/voice-app.ts';

/** The server's own start options (e.g. `onWorker`, to reach its worker threads). */
type StartOptions = NonNullable<Parameters<typeof startVoiceApp>[3]>;
import { waitFor, within } from '../helpers/wait.ts';

/** What the warm-up device heard of its answer. */
export interface WarmUpAnswer {
  /** sentence_start texts. */
  said: string[];
  /** Opus packets received. */
  frames: number;
}

/**
 * The warm-up before a fault suite's tests: one device says hello, runs `turns` and leaves, and
 * this returns once its session has ended. The first session and turn create what lives as long
 * as the server (media engine session slots, the pacer clock, HTTP parsers, loaded models), so
 * the tests' leak baselines are taken with it present and no test pays for start-up.
 */
export async function warmUp<T>(
  server: VoiceApp,
  device: () => DeviceSim,
  turns: (dev: DeviceSim) => Promise<T>,
): Promise<T> {
  const dev = device();
  let out: T;
  try {
    await within(dev.hello(), 20_000, 'hello');
    out = await turns(dev);
  } finally {
    dev.close();
  }
  await within(dev.closed, 5000, 'warm-up device closed');
  await waitFor(() => server.app.registry.size === 0, { what: 'no session', timeoutMs: 5000 });
  return out;
}

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

  readonly device = (): DeviceSim =>
    new DeviceSim({ url: this.server().wsUrl, deviceId: `${this.#macPrefix}:${String(++this.#n).padStart(2, '0')}` });

  /**
   * Starts the fake LLM and the server (`overrides` as for `startVoiceApp`), then warms it up with
   * one typed turn answered "Ready." (checked). Returns what the warm-up device heard.
   */
  async start(overrides: Record<string, unknown> = {}, opts: StartOptions = {}): Promise<WarmUpAnswer> {
    this.llm = await startFakeOpenAi({ keepAlive: false });
    this.srv = await startVoiceApp(this.llm.url, overrides, undefined, opts);
    return warmUp(this.srv, this.device, async (dev) => {
      const from = dev.json.length;
      const audioFrom = dev.audio.length;
      this.fake().script(fakeText('Ready.'));
      dev.listen('detect', { text: 'warm up' });
      await dev.waitJson('tts', 'stop', 30_000, from);
      const said = dev.json
        .slice(from)
        .filter((j) => j.msg.type === 'tts' && j.msg.state === 'sentence_start')
        .map((j) => String(j.msg.text));
      assert.deepEqual(said, ['Ready.'], 'the warm-up turn is answered');
      return { said, frames: dev.audio.length - audioFrom };
    });
  }
}
