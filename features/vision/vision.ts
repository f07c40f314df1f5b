/**
 * @module The vision endpoint as the server wires it: its tokens, models, kept photos and route,
 * and each session's grant (the URL and token its device MCP `initialize` advertises). The URL
 * follows the WebSocket's: the host of `server.publicWsUrl` (wss → https), else the scheme and
 * Host the device's own connection used, else (MQTT) the scheme and Host of the device's latest
 * OTA request; a session with none of them is advertised no vision, said once in the log.
 */
import type { Logger } from '../../core/logger.ts';
import { ImageDecoder } from './image-decode.ts';
import { LastImages } from './last-images.ts';
import { OtaOrigins } from './ota-origins.ts';
import { chooseVisionModel, type VisionChoice } from './model-choice.ts';
import { VISION_EXPLAIN_PATH, visionRoute } from './route.ts';
import { VisionTokens } from './tokens.ts';
import { VisionModels, type VisionModel } from './vision-model.ts';
import type { VisionSettings } from './vision-settings.ts';
import type { FastifyInstance } from 'fastify';

export interface VisionOptions {
  settings: VisionSettings;
  /** `server.publicWsUrl`: its host names the advertised URL when set. */
  publicWsUrl: string;
  httpRequestTimeoutMs: number;
  /** Tokens held at most: one per live session (`server.maxSessions`), with room for replaced ones. */
  maxTokens: number;
  /** The configuration's chat model (an agent's `llm.images` falls back to it). */
  chat: VisionModel;
  /** The settings of the agent a device uses now (undefined: the configuration alone). */
  agentSettingsOf(deviceId: string): Record<string, unknown> | undefined;
  onSecret?: (value: string) => void;
  log: Logger;
  /** Wall-clock time tokens age by, ms since the epoch (tests move it); default `Date.now`. */
  now?: () => number;
}

/** One session's right to the endpoint; `release` revokes the token (the session ended). */
export interface VisionGrantForSession {
  url: string;
  token: string;
  release(): void;
}

/** What a session is, as far as its grant goes. */
export interface VisionSessionInfo {
  sessionId: string;
  deviceId: string | null;
  clientId: string | null;
  /** `http(s)://host[:port]` the device's connection reached us at (absent over MQTT). */
  reachedAt?: string;
}

/** The advertised URL: `publicWsUrl`'s scheme and host, else where the device reached us; null: neither. */
export function visionUrlFor(publicWsUrl: string, reachedAt: string | undefined): string | null {
  if (publicWsUrl) {
    try {
      const u = new URL(publicWsUrl);
      const scheme = u.protocol === 'wss:' || u.protocol === 'https:' ? 'https:' : 'http:';
      return `${scheme}//${u.host}${VISION_EXPLAIN_PATH}`;
    } catch {
      return null;
    }
  }
  return reachedAt ? `${reachedAt.replace(/\/+$/, '')}${VISION_EXPLAIN_PATH}` : null;
}

export class Vision {
  readonly #o: VisionOptions;
  readonly tokens: VisionTokens;
  readonly models = new VisionModels();
  /** Each photo's decode by ffmpeg, bounded server-wide. */
  readonly decoder: ImageDecoder;
  /** Each device's last photo (`vision.keepLast`); absent: none is kept. */
  readonly lastImages: LastImages | undefined;
  /** Where each device last reached OTA: the URL of its MQTT sessions without `publicWsUrl`. */
  readonly #otaOrigins = new OtaOrigins();
  #warnedNoUrl = false;

  constructor(o: VisionOptions) {
    this.#o = o;
    this.tokens = new VisionTokens({
      maxAgeMs: o.settings.tokenMaxAgeMs,
      maxTokens: o.maxTokens,
      ...(o.onSecret ? { onSecret: o.onSecret } : {}),
      ...(o.now ? { now: o.now } : {}),
    });
    this.decoder = new ImageDecoder({
      maxConcurrent: o.settings.maxDecodes,
      timeoutMs: o.settings.decodeTimeoutMs,
      log: o.log,
    });
    this.lastImages = o.settings.keepLast
      ? new LastImages({ maxDevices: o.settings.keepLastDevices, maxBytes: o.settings.keepLastBytes })
      : undefined;
  }

  get enabled(): boolean {
    return this.#o.settings.enabled;
  }

  /** The model a device's photos go to now. */
  modelFor(deviceId: string): VisionChoice | null {
    return this.#o.settings.enabled ? this.modelOfAgent(this.#o.agentSettingsOf(deviceId)) : null;
  }

  /** The model an agent with these settings sends photos to (the console shows it). */
  modelOfAgent(settings: Record<string, unknown> | undefined): VisionChoice | null {
    return chooseVisionModel(this.#o.settings, this.#o.chat, settings);
  }

  /**
   * A device's OTA request reached the server at `origin` (`http(s)://host[:port]`, a host that is
   * one of the server's names): its MQTT sessions' URL when `publicWsUrl` is not set.
   */
  reachedByOta(r: { deviceId: string; clientId: string; origin: string }): void {
    if (this.#o.settings.enabled) this.#otaOrigins.remember(r.deviceId, r.clientId, r.origin);
  }

  /** A token for one session's device, advertised with the URL; null when off or there is no URL or device. */
  grantFor(session: VisionSessionInfo): VisionGrantForSession | null {
    if (!this.#o.settings.enabled || session.deviceId === null) return null;
    const reachedAt =
      session.reachedAt ??
      (session.clientId !== null ? this.#otaOrigins.get(session.deviceId, session.clientId) : undefined);
    const url = visionUrlFor(this.#o.publicWsUrl, reachedAt);
    if (!url) {
      if (!this.#warnedNoUrl) {
        this.#warnedNoUrl = true;
        this.#o.log.warn(
          { sessionId: session.sessionId },
          "vision: no URL to advertise to an MQTT session whose device did not ask OTA by one of the server's names: set server.publicWsUrl (or server.publicHosts)",
        );
      }
      return null;
    }
    const minted = this.tokens.mint({
      sessionId: session.sessionId,
      deviceId: session.deviceId,
      clientId: session.clientId,
    });
    return { url, token: minted.token, release: minted.revoke };
  }

  /** The endpoint's route plugin (registered only when `vision.enabled`). */
  route(): (app: FastifyInstance) => Promise<void> {
    return visionRoute({
      settings: this.#o.settings,
      httpRequestTimeoutMs: this.#o.httpRequestTimeoutMs,
      tokens: this.tokens,
      models: this.models,
      decoder: this.decoder,
      modelFor: (deviceId) => this.modelFor(deviceId),
      ...(this.lastImages ? { lastImages: this.lastImages } : {}),
    });
  }
}
