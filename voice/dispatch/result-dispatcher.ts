/**
 * @module Routes each round of tool results after Act, and returns the round's decision.
 *
 * For one round (results in the order the model called the tools):
 * 1. Media, in call order: a local tool's MediaStream, `audio` content (base64), embedded audio
 *    blobs, then `resource_link`s to audio (read in pages from the server that produced them).
 *    Before the first one, the model's own words so far are spoken. Each plays under a
 *    `sentence_start` saying what plays; one that cannot play is replaced by a spoken note. Any
 *    media ends the turn: `played`, with the notes spoken.
 * 2. Without media, the results' flags decide (`decideByFlags`): `silenceLLM` ends the turn
 *    silently, `final` / `noFurtherResponse` end it with the results' text to say, anything else
 *    goes back to the model (`observe`): text, embedded text resources, images, non-audio links
 *    and errors, which the ReAct loop has already put in the history.
 * Nothing here speaks that end text or writes the history: the ReAct loop acts on the decision.
 * An abort stops whichever branch runs (the reads, ffmpeg and the pacer all take the signal).
 */
import { isAbortError, toVoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { ffmpegInputFor } from '../../audio/ffmpeg/input-format.ts';
import { transcodeToPcm } from '../../audio/ffmpeg/transcode.ts';
import { decideByFlags, type RoundDecision, type ToolCallResult } from '../../llm/round-decision.ts';
import { readResourceStream } from '../../mcp/resource-stream/stream.ts';
import type { ResourceLinkContent, ResourceSource, ToolResult } from '../../mcp/contract/tool-source.ts';
import type { DispatchContext, TurnDispatcher } from './dispatch.ts';

export interface ResultDispatcherOptions {
  log: Logger;
  /** Resource stream paging (McpReadResourcePageSize and friends). */
  pageSize: number;
  pageTimeoutMs: number;
  retryDelayMs: number;
  maxTries: number;
  /** Spoken when a media item cannot be played. */
  playbackError: (label: string) => string;
  /** Observability: tool result → first audio frame of the media, ms. */
  onMediaStart?: (info: { kind: MediaItem['kind']; firstFrameMs: number }) => void;
}

export interface MediaItem {
  kind: 'local' | 'audio' | 'embedded' | 'link';
  label: string;
  mimeType?: string;
  open(signal: AbortSignal): AsyncIterable<Uint8Array>;
}

const AUDIO_EXT_RE = /\.(mp3|wav|ogg|oga|opus|m4a|aac|flac|webm)(\?|#|$)/i;

function isAudioLink(link: ResourceLinkContent): boolean {
  if (link.mimeType) return link.mimeType.toLowerCase().startsWith('audio/');
  return AUDIO_EXT_RE.test(link.uri) || AUDIO_EXT_RE.test(link.description ?? '') || AUDIO_EXT_RE.test(link.name ?? '');
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/** A label is spoken ("could not play …") and logged: a server's title of any size is cut to this. */
const MAX_LABEL_CHARS = 80;

function labelOf(link: ResourceLinkContent): string {
  const raw =
    link.title ?? link.name ?? (link.description && !/^https?:/i.test(link.description) ? link.description : undefined);
  if (raw) return raw.length > MAX_LABEL_CHARS ? `${raw.slice(0, MAX_LABEL_CHARS - 1)}…` : raw;
  try {
    const u = new URL(link.description && /^https?:/i.test(link.description) ? link.description : link.uri);
    return decodeURIComponent(u.pathname.split('/').pop() ?? '') || u.hostname || 'audio';
  } catch {
    return 'audio';
  }
}

/** The media a result carries, in content order. */
export function mediaOf(
  result: ToolResult,
  opts: Pick<ResultDispatcherOptions, 'pageSize' | 'pageTimeoutMs' | 'retryDelayMs' | 'maxTries' | 'log'>,
): MediaItem[] {
  if (result.isError) return [];
  const items: MediaItem[] = [];
  if (result.media) {
    const m = result.media;
    items.push({
      kind: 'local',
      label: m.label,
      ...(m.mimeType ? { mimeType: m.mimeType } : {}),
      open: (s) => m.open(s),
    });
  }
  for (const c of result.content) {
    if (c.type === 'audio') {
      items.push({
        kind: 'audio',
        label: 'audio',
        mimeType: c.mimeType,
        open: () => once(Buffer.from(c.data, 'base64')),
      });
    } else if (
      c.type === 'resource' &&
      c.resource.blob !== undefined &&
      (c.resource.mimeType ?? '').startsWith('audio/')
    ) {
      const blob = c.resource.blob;
      items.push({
        kind: 'embedded',
        label: c.resource.uri.split('/').pop() || 'audio',
        mimeType: c.resource.mimeType as string,
        open: () => once(Buffer.from(blob, 'base64')),
      });
    } else if (c.type === 'resource_link' && isAudioLink(c) && result.resources) {
      const source: ResourceSource = result.resources;
      const link = c;
      items.push({
        kind: 'link',
        label: labelOf(link),
        ...(link.mimeType ? { mimeType: link.mimeType } : {}),
        open: (signal) =>
          readResourceStream(source, link, {
            signal,
            pageSize: opts.pageSize,
            pageTimeoutMs: opts.pageTimeoutMs,
            retryDelayMs: opts.retryDelayMs,
            maxTries: opts.maxTries,
            log: opts.log,
          }),
      });
    }
  }
  return items;
}

export function createResultDispatcher(opts: ResultDispatcherOptions): TurnDispatcher {
  return {
    async dispatch(results: ToolCallResult[], ctx: DispatchContext): Promise<RoundDecision> {
      const media = results.flatMap((r) => mediaOf(r.result, opts));
      if (media.length === 0) return decideByFlags(results);
      const said: string[] = [];
      await ctx.flushSpeech();
      for (const item of media) {
        const started = performance.now();
        try {
          // Raw PCM has no header for ffmpeg to probe: its MIME type says what it is.
          const pcm = transcodeToPcm(item.open(ctx.signal), {
            sampleRate: ctx.sampleRate,
            signal: ctx.signal,
            log: opts.log,
            ...ffmpegInputFor(item.mimeType),
          });
          await ctx.out.play(`♪ ${item.label}`, pcm, () => {
            const firstFrameMs = Math.round(performance.now() - started);
            opts.log.info({ kind: item.kind, label: item.label, firstFrameMs }, 'media started');
            opts.onMediaStart?.({ kind: item.kind, firstFrameMs });
          });
          opts.log.info(
            { kind: item.kind, label: item.label, ms: Math.round(performance.now() - started) },
            'media played',
          );
        } catch (err) {
          if (isAbortError(err) || ctx.signal.aborted) throw err;
          const e = toVoiceError(err);
          opts.log.warn({ kind: item.kind, label: item.label, code: e.code, err: e.message }, 'media playback failed');
          const note = opts.playbackError(item.label);
          said.push(note);
          ctx.speak(note);
          await ctx.flushSpeech();
        }
      }
      return { next: 'played', said };
    },
  };
}
