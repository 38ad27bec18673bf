// outdial dashboard: the microphone side of "Talk to this agent". An AudioWorklet processor that
// turns the microphone's audio (the AudioContext's rate, 44.1 or 48 kHz) into what a web call
// carries: 8 kHz 16-bit mono PCM in 20 ms frames (160 samples), posted to talk.js as ArrayBuffers.
// Each output sample is the mean of the input samples of its 1/8000 s: a box filter that keeps
// most of what lies above 4 kHz out of the telephone band before the rate drops.
const OUT_RATE = 8000;
const FRAME = 160;

class OutdialCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / OUT_RATE;
    this.position = 0;
    this.sum = 0;
    this.count = 0;
    this.frame = new Int16Array(FRAME);
    this.filled = 0;
  }

  process(inputs) {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (let i = 0; i < channel.length; i++) {
      this.sum += channel[i];
      this.count++;
      this.position += 1;
      if (this.position >= this.step) {
        this.position -= this.step;
        const mean = this.sum / this.count;
        this.sum = 0;
        this.count = 0;
        const clipped = Math.max(-1, Math.min(1, mean));
        this.frame[this.filled++] = clipped < 0 ? clipped * 0x8000 : clipped * 0x7fff;
        if (this.filled === FRAME) {
          this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
          this.frame = new Int16Array(FRAME);
          this.filled = 0;
        }
      }
    }
    return true;
  }
}

registerProcessor('outdial-capture', OutdialCapture);
