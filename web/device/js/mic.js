/**
 * Microphone capture: getUserMedia → AudioWorklet → 60 ms frames of 16 kHz float PCM, each with
 * its level, so the page can stream them and estimate when the user stopped speaking.
 */

export class Mic {
  /**
   * @param {(frame: Float32Array, levelDb: number) => void} onFrame
   */
  constructor(onFrame) {
    this.onFrame = onFrame;
    /** @type {MediaStream | null} */
    this.stream = null;
    /** @type {AudioContext | null} */
    this.ctx = null;
    /** @type {AudioWorkletNode | null} */
    this.node = null;
    /** Browser echo cancellation / noise suppression; on for real rooms, off for clean test input. */
    this.processing = true;
  }

  get open() {
    return this.stream !== null;
  }

  async start() {
    if (this.stream) return;
    if (!navigator.mediaDevices?.getUserMedia) {
      throw new Error('microphone unavailable: this page must be opened over https or on localhost');
    }
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: {
        channelCount: 1,
        echoCancellation: this.processing,
        noiseSuppression: this.processing,
        autoGainControl: this.processing,
      },
    });
    let ctx;
    try {
      ctx = new AudioContext({ sampleRate: 16000 });
    } catch {
      // Some browsers refuse a rate that differs from the device's; the worklet resamples then.
      ctx = new AudioContext();
    }
    try {
      await ctx.audioWorklet.addModule(new URL('./capture-worklet.js', import.meta.url));
      const src = ctx.createMediaStreamSource(stream);
      const node = new AudioWorkletNode(ctx, 'xiaozhi-capture', {
        numberOfInputs: 1,
        numberOfOutputs: 1,
        channelCount: 1,
      });
      node.port.onmessage = (e) => {
        const frame = /** @type {Float32Array} */ (e.data);
        let sum = 0;
        for (let i = 0; i < frame.length; i++) sum += (frame[i] ?? 0) ** 2;
        const db = 10 * Math.log10(sum / frame.length + 1e-12);
        this.onFrame(frame, db);
      };
      // A silent sink keeps the graph pulled in every browser without playing the mic back.
      const mute = ctx.createGain();
      mute.gain.value = 0;
      src.connect(node).connect(mute).connect(ctx.destination);
      if (ctx.state === 'suspended') await ctx.resume();
      this.stream = stream;
      this.ctx = ctx;
      this.node = node;
    } catch (err) {
      for (const t of stream.getTracks()) t.stop();
      void ctx.close();
      throw err;
    }
  }

  stop() {
    if (this.node) this.node.port.onmessage = null;
    for (const t of this.stream?.getTracks() ?? []) t.stop();
    void this.ctx?.close();
    this.stream = null;
    this.ctx = null;
    this.node = null;
  }
}
