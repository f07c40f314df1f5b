/**
 * AudioWorklet: turns the microphone's render quanta into 60 ms frames of 16 kHz mono float PCM
 * (960 samples) and posts them to the page. Resamples linearly when the context does not run at
 * 16 kHz (browsers that ignore the requested rate); speech ASR does not need better.
 */
/* global AudioWorkletProcessor, sampleRate, registerProcessor -- AudioWorkletGlobalScope names */
const OUT_RATE = 16000;
const FRAME = 960;

class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.frame = new Float32Array(FRAME);
    this.fill = 0;
    this.step = sampleRate / OUT_RATE;
    this.pos = 0;
    this.prev = 0;
  }

  /** @param {Float32Array[][]} inputs */
  process(inputs) {
    const ch = inputs[0]?.[0];
    if (!ch) return true;
    if (this.step === 1) {
      for (let i = 0; i < ch.length; i++) this.push(ch[i]);
    } else {
      // pos is the fractional read position relative to this block; -1 means the previous block's last sample.
      while (this.pos < ch.length) {
        const i = Math.floor(this.pos);
        const frac = this.pos - i;
        const a = i < 0 ? this.prev : ch[i];
        const b = i + 1 < ch.length ? ch[i + 1] : ch[i];
        this.push(a + (b - a) * frac);
        this.pos += this.step;
      }
      this.pos -= ch.length;
      this.prev = ch[ch.length - 1];
    }
    return true;
  }

  /** @param {number} s */
  push(s) {
    this.frame[this.fill++] = s;
    if (this.fill === FRAME) {
      this.port.postMessage(this.frame, [this.frame.buffer]);
      this.frame = new Float32Array(FRAME);
      this.fill = 0;
    }
  }
}

registerProcessor('xiaozhi-capture', CaptureProcessor);
