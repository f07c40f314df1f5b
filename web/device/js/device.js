/**
 * The browser as a xiaozhi device: OTA → WebSocket (identity and token in the query string, as
 * browsers cannot set headers) → hello → listen/detect/abort, uplink Opus from the microphone,
 * downlink Opus to the player, device MCP. Turn-taking follows the firmware:
 * `tts start` → speaking (the mic pauses unless realtime); `tts stop` → auto: listening again once
 * playback has drained, with a new `listen start`; realtime: listening, no new start; manual: idle.
 *
 * Timing: for spoken turns "end of speech" is the page's own estimate, the end of the last
 * microphone frame louder than the speech threshold before `stt` arrived (for push-to-talk, before
 * release); for typed turns it is the moment the text was sent. "First audio" is when the first
 * answer frame is scheduled to sound, including the output latency the browser reports.
 */
import { frameAudio, unframeAudio } from './framing.js';
import { createOpusEncoder, webCodecsOpusSupported } from './opus-codec.js';
import { DeviceMcpServer } from './device-mcp.js';
import { Mic } from './mic.js';

/** The firmware waits this long for the server hello, in ms. */
const HELLO_TIMEOUT_MS = 10_000;
/** Auto mode waits at most this long for playback to drain before listening again, in ms. */
const DRAIN_WAIT_MS = 4000;
/** Frames louder than the noise floor by this much count as speech, in dB. */
const SPEECH_MARGIN_DB = 12;
/** Floor for the speech threshold, in dBFS: digital silence never counts as speech. */
const MIN_SPEECH_DB = -50;

/**
 * @typedef {'offline'|'connecting'|'idle'|'listening'|'speaking'} DeviceState
 * @typedef {'auto'|'manual'|'realtime'} ListenMode
 * @typedef {{ id: number, source: 'voice'|'text', speechEndAt: number, sttAt?: number, ttsStartAt?: number,
 *   firstPacketAt?: number, firstSoundAt?: number, endToFirstAudioMs?: number, sttToFirstAudioMs?: number,
 *   endToSttMs?: number }} Turn
 * @typedef {{ kind: 'user'|'assistant'|'emotion'|'tool'|'error'|'system', text: string, detail?: string }} LogEntry
 */

export class Device {
  /**
   * @param {{ player: import('./player.js').Player, tools: import('./device-mcp.js').DeviceTool[],
   *   identity: { deviceId: string, clientId: string }, mcpPageBytes?: number, codec?: 'auto'|'webcodecs'|'wasm' }} opts
   */
  constructor(opts) {
    this.player = opts.player;
    this.identity = opts.identity;
    this.codecPreference = opts.codec ?? 'auto';
    /** @type {'webcodecs'|'wasm'|null} */
    this.codec = null;
    this.otaUrl = new URL('/xiaozhi/ota/', location.href).href;
    /** Overrides the token OTA hands out (empty: use OTA's). */
    this.token = '';
    /** @type {ListenMode} */
    this.mode = 'auto';
    /** @type {DeviceState} */
    this.state = 'offline';
    this.sessionId = '';
    this.protocolVersion = /** @type {1|2|3} */ (1);
    /** @type {{ sample_rate: number, frame_duration: number, format?: string, channels?: number } | null} */
    this.audioParams = null;
    /** @type {WebSocket | null} */
    this.ws = null;
    /** Auto/realtime: the user has started a conversation and wants the mic to follow turns. */
    this.callActive = false;
    /** Uplink gate: mic frames are encoded and sent only while true. */
    this.sending = false;
    /** After an abort, downlink audio is dropped until the next `tts start`. */
    this.dropAudio = false;
    this.noiseFloorDb = -60;
    /** @type {number | null} */
    this.lastVoiceAt = null;
    /** @type {Turn | null} */
    this.turn = null;
    /** @type {Turn[]} */
    this.turns = [];
    this.turnSeq = 0;
    /** Text typed and sent, so its `stt` echo is not shown twice. */
    this.pendingTyped = '';
    this.stats = { sent: 0, sentBytes: 0, dropped: 0, badFrames: 0 };
    /** @type {Set<(type: string, detail?: unknown) => void>} */
    this.listeners = new Set();
    /** @type {import('./opus-codec.js').OpusEncoderLike | null} */
    this.encoder = null;
    this.mic = new Mic((frame, db) => this.#onMicFrame(frame, db));
    this.mcp = new DeviceMcpServer({
      tools: opts.tools,
      pageBytes: opts.mcpPageBytes,
      send: (payload) => this.#sendJson({ session_id: this.sessionId, type: 'mcp', payload }),
      onCall: (name, args, r) =>
        this.#log({ kind: 'tool', text: `${name}(${JSON.stringify(args)})`, detail: `${r.ok ? '→' : '✗'} ${r.text}` }),
    });
    this.player.onFirstSound = (at) => this.#onFirstSound(at);
  }

  /** @param {(type: string, detail?: unknown) => void} fn */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * @param {string} type
   * @param {unknown} [detail]
   */
  #emit(type, detail) {
    for (const fn of this.listeners) fn(type, detail);
  }

  /** @param {LogEntry} entry */
  #log(entry) {
    this.#emit('log', entry);
  }

  /** @param {DeviceState} s */
  #setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.#emit('state', s);
  }

  /** OTA, then WebSocket and hello. Call from a click so audio may start. */
  async connect() {
    if (this.state !== 'offline') return;
    this.player.unlock();
    this.#setState('connecting');
    try {
      if (!this.codec) {
        const wc = this.codecPreference !== 'wasm' && (await webCodecsOpusSupported());
        if (this.codecPreference === 'webcodecs' && !wc)
          throw new Error('WebCodecs Opus is not available in this browser');
        this.codec = wc ? 'webcodecs' : 'wasm';
      }
      let ota = await this.#ota();
      // activation mode: show the code, poll /activate like the firmware, then ask OTA again for our token.
      while (ota.activation) {
        this.#emit('activation', ota.activation);
        await this.#waitActivated();
        ota = await this.#ota();
      }
      this.#emit('activation', null);
      await this.#openSocket(ota.url, this.token || ota.token);
      this.#setState('idle');
    } catch (err) {
      this.#log({ kind: 'error', text: err instanceof Error ? err.message : String(err) });
      this.disconnect();
    }
  }

  /** Polls `<ota>activate` every 3 s (as the firmware does) until 200; stops if the user disconnects. */
  async #waitActivated() {
    const url = this.otaUrl.endsWith('/') ? `${this.otaUrl}activate` : `${this.otaUrl}/activate`;
    for (;;) {
      if (this.state !== 'connecting') throw new Error('activation cancelled');
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Device-Id': this.identity.deviceId,
          'Client-Id': this.identity.clientId,
          'Activation-Version': '1',
        },
        body: '{}',
      });
      if (res.status === 200) return;
      if (res.status !== 202) throw new Error(`activation answered HTTP ${res.status}`);
      await new Promise((resolve) => setTimeout(resolve, 3000));
    }
  }

  async #ota() {
    const body = {
      version: 2,
      language: navigator.language,
      mac_address: this.identity.deviceId,
      uuid: this.identity.clientId,
      chip_model_name: 'browser',
      application: { name: 'xiaozhi-web', version: '1.0.0' },
      board: { type: 'web-browser', name: 'web-browser', user_agent: navigator.userAgent },
    };
    let res;
    try {
      res = await fetch(this.otaUrl, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'Device-Id': this.identity.deviceId,
          'Client-Id': this.identity.clientId,
          'Activation-Version': '1',
        },
        body: JSON.stringify(body),
      });
    } catch (err) {
      // A server elsewhere that refuses this page's origin gives it no CORS grant: the browser
      // reports only a network error, so the likely cause is named here.
      const elsewhere = new URL(this.otaUrl, location.href).origin !== location.origin;
      const hint = elsewhere
        ? ` (if that server runs, it may refuse pages from ${location.origin}: add "${location.origin}" to its server.allowedOrigins)`
        : '';
      throw new Error(`OTA ${this.otaUrl} unreachable: ${err instanceof Error ? err.message : String(err)}${hint}`);
    }
    if (res.status === 403) {
      // The server says what to set (server.allowedOrigins, the proxy's Host, server.publicHosts).
      const why = await res.json().catch(() => null);
      if (typeof why?.fix === 'string') throw new Error(`OTA refused this page (${why.error}): ${why.fix}`);
    }
    if (!res.ok) throw new Error(`OTA answered HTTP ${res.status}`);
    const json = await res.json().catch(() => null);
    const ws = json?.websocket;
    if (!ws || typeof ws.url !== 'string' || !ws.url) {
      throw new Error(
        json?.mqtt ? 'OTA offers only MQTT; this page speaks WebSocket' : 'OTA response has no websocket.url',
      );
    }
    const v = Number(ws.version);
    this.protocolVersion = v === 2 || v === 3 ? v : 1;
    this.#emit('ota', json);
    const a = json?.activation;
    const activation =
      a && typeof a.code === 'string'
        ? { code: a.code, message: typeof a.message === 'string' ? a.message : '' }
        : null;
    return { url: ws.url, token: typeof ws.token === 'string' ? ws.token : '', activation };
  }

  /**
   * @param {string} url
   * @param {string} token
   */
  #openSocket(url, token) {
    const u = new URL(url, location.href);
    if (u.protocol === 'http:') u.protocol = 'ws:';
    if (u.protocol === 'https:') u.protocol = 'wss:';
    u.searchParams.set('device-id', this.identity.deviceId);
    u.searchParams.set('client-id', this.identity.clientId);
    if (token) u.searchParams.set('authorization', token.includes(' ') ? token : `Bearer ${token}`);
    const ws = new WebSocket(u.href);
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    return new Promise((resolve, reject) => {
      let helloDone = false;
      const timer = setTimeout(() => {
        reject(new Error(`no server hello within ${HELLO_TIMEOUT_MS / 1000} s`));
      }, HELLO_TIMEOUT_MS);
      ws.onopen = () => {
        this.#sendJson({
          type: 'hello',
          version: this.protocolVersion,
          features: { mcp: true },
          transport: 'websocket',
          audio_params: { format: 'opus', sample_rate: 16000, channels: 1, frame_duration: 60 },
        });
      };
      ws.onerror = () => {
        if (!helloDone) {
          clearTimeout(timer);
          reject(new Error(`WebSocket ${u.origin}${u.pathname} failed (refused, unauthorized or unreachable)`));
        }
      };
      ws.onclose = (e) => {
        clearTimeout(timer);
        if (this.ws !== ws) return;
        if (!helloDone)
          reject(new Error(`WebSocket closed before hello (code ${e.code}${e.reason ? `: ${e.reason}` : ''})`));
        else {
          this.#log({
            kind: e.code === 1000 ? 'system' : 'error',
            text: `Disconnected (code ${e.code}${e.reason ? `: ${e.reason}` : ''})`,
          });
          this.disconnect();
        }
      };
      ws.onmessage = (e) => {
        if (typeof e.data !== 'string') return this.#onAudio(new Uint8Array(e.data));
        let msg;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return this.#log({ kind: 'error', text: 'Server sent text that is not JSON' });
        }
        if (msg?.type === 'hello' && !helloDone) {
          if (msg.transport !== 'websocket') {
            clearTimeout(timer);
            return reject(new Error(`server hello has transport ${String(msg.transport)}`));
          }
          helloDone = true;
          clearTimeout(timer);
          this.sessionId = typeof msg.session_id === 'string' ? msg.session_id : '';
          const ap = msg.audio_params ?? {};
          this.audioParams = {
            format: ap.format ?? 'opus',
            sample_rate: Number(ap.sample_rate) || 24000,
            channels: ap.channels ?? 1,
            frame_duration: Number(ap.frame_duration) || 60,
          };
          const codec = /** @type {'webcodecs'|'wasm'} */ (this.codec);
          this.player
            .configure(codec, this.audioParams.sample_rate, (err) => this.#log({ kind: 'error', text: err.message }))
            .then(() => {
              this.#emit('session', { sessionId: this.sessionId, audioParams: this.audioParams, codec });
              resolve(undefined);
            }, reject);
          return;
        }
        this.#onJson(msg);
      };
    });
  }

  /** Closes the socket and the microphone; safe to call any time. */
  disconnect() {
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState <= 1) ws.close(1000, 'bye');
    this.callActive = false;
    this.sending = false;
    this.mic.stop();
    this.encoder?.close();
    this.encoder = null;
    this.player.stop();
    this.sessionId = '';
    this.#setState('offline');
    this.#emit('session', null);
  }

  /** @param {Record<string, unknown>} msg */
  #sendJson(msg) {
    if (this.ws?.readyState !== 1) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  /**
   * @param {'start'|'stop'|'detect'} state
   * @param {Record<string, unknown>} [extra]
   */
  #listen(state, extra = {}) {
    this.#sendJson({ session_id: this.sessionId, type: 'listen', state, ...extra });
  }

  async #ensureMic() {
    if (!this.encoder) {
      const codec = /** @type {'webcodecs'|'wasm'} */ (this.codec);
      this.encoder = await createOpusEncoder(
        codec,
        (packet) => this.#sendAudio(packet),
        (err) => this.#log({ kind: 'error', text: err.message }),
      );
    }
    await this.mic.start();
  }

  /** @param {Uint8Array} packet */
  #sendAudio(packet) {
    if (!this.sending || this.ws?.readyState !== 1) return;
    this.ws.send(frameAudio(this.protocolVersion, packet));
    this.stats.sent++;
    this.stats.sentBytes += packet.length;
  }

  /**
   * @param {Float32Array} frame
   * @param {number} db
   */
  #onMicFrame(frame, db) {
    // The noise floor follows quiet frames fast and loud ones slowly, so speech does not raise it.
    this.noiseFloorDb += (db - this.noiseFloorDb) * (db < this.noiseFloorDb ? 0.3 : 0.01);
    const speech = db > Math.max(MIN_SPEECH_DB, this.noiseFloorDb + SPEECH_MARGIN_DB);
    if (this.sending && speech) this.lastVoiceAt = performance.now();
    this.#emit('level', { db, speech });
    if (this.sending) this.encoder?.encode(frame);
  }

  /**
   * Talk: in auto/realtime starts a conversation (the mic follows turns until `endTalk`); in
   * manual mode it is the press of push-to-talk.
   */
  async startTalk() {
    if (this.state === 'offline' || this.state === 'connecting') return;
    this.player.unlock();
    try {
      await this.#ensureMic();
    } catch (err) {
      this.#log({ kind: 'error', text: `Microphone: ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    if (this.state === 'speaking') this.abort();
    this.lastVoiceAt = null;
    if (this.mode !== 'manual') this.callActive = true;
    this.#listen('start', { mode: this.mode });
    this.sending = true;
    this.#setState('listening');
    this.#emit('talk', true);
  }

  /** Ends the conversation (auto/realtime) or releases push-to-talk (manual). */
  endTalk() {
    const wasSending = this.sending;
    this.sending = false;
    if (this.mode === 'manual') {
      if (wasSending) {
        this.#newTurn('voice', this.lastVoiceAt ?? performance.now());
        this.#listen('stop');
        if (this.state === 'listening') this.#setState('idle');
      }
    } else {
      this.callActive = false;
      if (this.state === 'listening') {
        // The firmware leaves listening by closing the channel; the page just stops the uplink.
        this.#setState('idle');
      }
    }
    this.#emit('talk', false);
  }

  /**
   * Sends typed text as `listen detect`, as if the wake word engine had heard it.
   * @param {string} text
   */
  sendText(text) {
    const t = text.trim();
    if (!t || this.state === 'offline' || this.state === 'connecting') return false;
    this.player.unlock();
    if (this.state === 'speaking') {
      // The server drops the old answer on detect; stop ours now rather than after its tts stop.
      this.player.stop();
      this.dropAudio = true;
    }
    this.pendingTyped = t;
    this.#log({ kind: 'user', text: t, detail: 'typed' });
    this.#newTurn('text', performance.now());
    this.#listen('detect', { text: t });
    return true;
  }

  /** Abort: tells the server and silences playback at once. */
  abort() {
    this.#sendJson({ session_id: this.sessionId, type: 'abort' });
    this.player.stop();
    this.dropAudio = true;
    this.#emit('abort');
  }

  /** @param {ListenMode} mode */
  setMode(mode) {
    if (this.sending || this.callActive) this.endTalk();
    this.mode = mode;
    this.#emit('mode', mode);
  }

  /**
   * @param {'voice'|'text'} source
   * @param {number} speechEndAt
   */
  #newTurn(source, speechEndAt) {
    this.turn = { id: ++this.turnSeq, source, speechEndAt };
    this.turns.push(this.turn);
    if (this.turns.length > 50) this.turns.shift();
    this.#emit('turn', this.turn);
  }

  /** @param {Record<string, any>} msg */
  #onJson(msg) {
    const now = performance.now();
    switch (msg.type) {
      case 'stt': {
        const text = String(msg.text ?? '');
        const typed = this.pendingTyped && text === this.pendingTyped;
        this.pendingTyped = '';
        if (!typed) {
          // Spoken turn (auto/realtime): the server's VAD decided; our estimate is the last loud frame.
          if (!this.turn || this.turn.sttAt !== undefined || this.turn.source !== 'voice' || this.mode !== 'manual') {
            this.#newTurn('voice', this.lastVoiceAt ?? now);
          }
          this.#log({ kind: 'user', text });
        }
        if (this.turn) {
          this.turn.sttAt = now;
          this.turn.endToSttMs = Math.round(now - this.turn.speechEndAt);
          this.#emit('turn', this.turn);
        }
        break;
      }
      case 'llm':
        if (typeof msg.emotion === 'string')
          this.#log({ kind: 'emotion', text: `${msg.text ?? ''} ${msg.emotion}`.trim() });
        this.#emit('emotion', msg.emotion);
        break;
      case 'tts':
        if (msg.state === 'start') {
          this.dropAudio = false;
          if (this.turn) this.turn.ttsStartAt = now;
          if (this.mode !== 'realtime') this.sending = false;
          this.#setState('speaking');
        } else if (msg.state === 'sentence_start') {
          if (typeof msg.text === 'string') this.#log({ kind: 'assistant', text: msg.text });
        } else if (msg.state === 'stop') {
          void this.#onTtsStop();
        }
        break;
      case 'mcp':
        this.mcp.handle(msg.payload);
        this.#emit('mcp', this.mcp.stats);
        break;
      case 'alert':
        this.#log({ kind: 'error', text: `${msg.status ?? 'Alert'}: ${msg.message ?? ''}` });
        break;
      case 'system':
        this.#log({ kind: 'system', text: `System command: ${String(msg.command)}` });
        if (msg.command === 'reboot') this.disconnect();
        break;
      default:
        this.#log({ kind: 'system', text: `Unhandled message type ${String(msg.type)}` });
    }
  }

  async #onTtsStop() {
    if (this.state !== 'speaking') return;
    if (this.mode === 'manual' || !this.callActive) {
      this.#setState('idle');
      return;
    }
    this.#setState('listening');
    if (this.mode === 'realtime') return;
    // Firmware 2.4: the next listen start waits until the answer has finished playing.
    await this.player.drained(DRAIN_WAIT_MS);
    if (this.state !== 'listening' || !this.callActive) return;
    this.lastVoiceAt = null;
    this.#listen('start', { mode: 'auto' });
    this.sending = true;
  }

  /** @param {Uint8Array} frame */
  #onAudio(frame) {
    const packet = unframeAudio(this.protocolVersion, frame);
    if (!packet) {
      this.stats.badFrames++;
      return;
    }
    // As the firmware: audio is played only while speaking; after an abort it is dropped.
    if (this.state !== 'speaking' || this.dropAudio) {
      this.stats.dropped++;
      return;
    }
    if (this.turn && this.turn.firstPacketAt === undefined) this.turn.firstPacketAt = performance.now();
    this.player.push(packet);
  }

  /** @param {number} at */
  #onFirstSound(at) {
    const t = this.turn;
    if (!t || t.firstSoundAt !== undefined) return;
    t.firstSoundAt = at;
    t.endToFirstAudioMs = Math.round(at - t.speechEndAt);
    if (t.sttAt !== undefined) t.sttToFirstAudioMs = Math.round(at - t.sttAt);
    this.#emit('turn', t);
  }
}
