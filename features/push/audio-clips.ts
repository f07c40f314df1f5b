/**
 * @module The audio of `notify` messages: each clip is served once, at an unguessable URL
 * (`/push/audio/<24 random bytes, base64url>.ogg`), until it is fetched or `ttlMs` passes; then
 * that URL answers 404. At most MAX_CLIPS wait at once (a new one drops the oldest), so a burst
 * of `say` requests to idle devices cannot fill the memory.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { makeRoom } from '../../core/bounded-map.ts';

export const PUSH_AUDIO_PATH = '/push/audio/';
export const MAX_CLIPS = 256;

interface Clip {
  bytes: Buffer;
  expiresAt: number;
}

export class AudioClips {
  readonly #clips = new Map<string, Clip>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(ttlMs: number, now: () => number = Date.now) {
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** Keeps `bytes` for one fetch; returns the clip's file name (the last part of its URL). */
  add(bytes: Buffer): string {
    this.#prune();
    makeRoom(this.#clips, MAX_CLIPS);
    const name = `${randomBytes(24).toString('base64url')}.ogg`;
    this.#clips.set(name, { bytes, expiresAt: this.#now() + this.#ttlMs });
    return name;
  }

  /** The clip's bytes, once: it is gone afterwards. Undefined when unknown, fetched or expired. */
  take(name: string): Buffer | undefined {
    const clip = this.#clips.get(name);
    if (!clip) return undefined;
    this.#clips.delete(name);
    return clip.expiresAt > this.#now() ? clip.bytes : undefined;
  }

  get size(): number {
    this.#prune();
    return this.#clips.size;
  }

  #prune(): void {
    const now = this.#now();
    for (const [name, clip] of this.#clips) if (clip.expiresAt <= now) this.#clips.delete(name);
  }
}

/** `GET /push/audio/<name>.ogg`: the clip once, as `audio/ogg`; 404 for anything else. */
export function pushAudioRoute(clips: AudioClips): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    app.get<{ Params: { name: string } }>(`${PUSH_AUDIO_PATH}:name`, async (request, reply) => {
      const bytes = /^[A-Za-z0-9_-]{32}\.ogg$/.test(request.params.name) ? clips.take(request.params.name) : undefined;
      if (!bytes)
        return reply
          .code(404)
          .header('Cache-Control', 'no-store')
          .send({ error: 'no such clip (unknown, already fetched or expired)' });
      return reply.code(200).header('Content-Type', 'audio/ogg').header('Cache-Control', 'no-store').send(bytes);
    });
  };
}
