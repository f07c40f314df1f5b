/**
 * @module Turns one `resources/read` answer into bytes. Blob entries are base64-decoded, text
 * entries are taken as utf-8; an entry whose bytes are exactly `[DONE]` is the seed's end flag.
 */
import type { ResourceContents } from '../tool-source.ts';

/** The seed's end-of-stream flag (McpReadResourceStreamDoneFlag), as a decoded blob or a text. */
export const STREAM_DONE_FLAG = '[DONE]';

const DONE_BYTES = Buffer.from(STREAM_DONE_FLAG, 'utf8');

export interface DecodedPage {
  /** The page's bytes, all entries joined in order (the part before an end flag). */
  bytes: Uint8Array;
  /** True when an entry was the end flag: nothing after it is read. */
  done: boolean;
}

/** Decodes a page. Entries after an end flag are ignored, as the seed's reader returns there. */
export function decodePage(contents: readonly ResourceContents[]): DecodedPage {
  const parts: Buffer[] = [];
  let done = false;
  for (const entry of contents) {
    let bytes: Buffer;
    if (typeof entry.blob === 'string') bytes = Buffer.from(entry.blob, 'base64');
    else if (typeof entry.text === 'string') bytes = Buffer.from(entry.text, 'utf8');
    else continue;
    if (bytes.equals(DONE_BYTES)) {
      done = true;
      break;
    }
    parts.push(bytes);
  }
  const joined = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  return { bytes: joined, done };
}
