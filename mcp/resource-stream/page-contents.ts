/**
 * @module Turns one `resources/read` answer into bytes. Blob entries are base64-decoded and are the
 * media; text entries are not (a server's note or error message, which ffmpeg must never be fed),
 * except a text of exactly `[DONE]`, the mcp-go readers' end flag in either form.
 */
import type { ResourceContents } from '../contract/tool-source.ts';

/** The mcp-go readers' end-of-stream flag (McpReadResourceStreamDoneFlag), as a decoded blob or a text. */
export const STREAM_DONE_FLAG = '[DONE]';

const DONE_BYTES = Buffer.from(STREAM_DONE_FLAG, 'utf8');

export interface DecodedPage {
  /** The page's bytes, all entries joined in order (the part before an end flag). */
  bytes: Uint8Array;
  /** True when an entry was the end flag: nothing after it is read. */
  done: boolean;
  /** Text entries (before an end flag) joined by newlines; undefined when there were none. */
  text?: string;
}

/** Decodes a page. Entries after an end flag are ignored: a reader stops at the flag. */
export function decodePage(contents: readonly ResourceContents[]): DecodedPage {
  const parts: Buffer[] = [];
  const texts: string[] = [];
  let done = false;
  for (const entry of contents) {
    if (typeof entry.blob === 'string') {
      const bytes = Buffer.from(entry.blob, 'base64');
      if (bytes.equals(DONE_BYTES)) {
        done = true;
        break;
      }
      parts.push(bytes);
    } else if (typeof entry.text === 'string') {
      if (entry.text === STREAM_DONE_FLAG) {
        done = true;
        break;
      }
      texts.push(entry.text);
    }
  }
  const joined = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  return texts.length > 0 ? { bytes: joined, done, text: texts.join('\n') } : { bytes: joined, done };
}
