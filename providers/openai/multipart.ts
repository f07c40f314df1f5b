/**
 * @module Encodes a FormData as a multipart/form-data body (RFC 7578) in one buffer, for
 * `http-fetch.ts`: the SDK's uploads are small (an utterance's WAV), and a buffered body can be
 * sent again when a kept-alive connection turns out closed.
 */
import { randomBytes } from 'node:crypto';

/** Quotes a field or file name the way browsers do: `"`, CR and LF percent-encoded. */
function quoted(name: string): string {
  return `"${name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;
}

export interface EncodedForm {
  body: Buffer;
  contentType: string;
}

export async function encodeMultipart(form: FormData): Promise<EncodedForm> {
  const boundary = `----xiaozhi${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  const entries: Array<[string, FormDataEntryValue]> = [];
  form.forEach((value, name) => entries.push([name, value]));
  for (const [name, value] of entries) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}`;
    if (typeof value === 'string') {
      parts.push(Buffer.from(`${head}\r\n\r\n${value}\r\n`));
      continue;
    }
    head += `; filename=${quoted(value.name)}\r\nContent-Type: ${value.type || 'application/octet-stream'}\r\n\r\n`;
    parts.push(Buffer.from(head), Buffer.from(await value.arrayBuffer()), Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}
