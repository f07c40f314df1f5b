/**
 * @module The utterance's text as FunASR results build it. A streaming result (`online`,
 * `2pass-online`) is a new piece of the open sentence, appended. A sentence result (`2pass-offline`,
 * `offline`) is the offline model's whole text of one sentence (one per VAD segment, several in an
 * utterance with pauses): it replaces the streaming pieces of that sentence and closes it. FunASR's
 * own client builds its display the same way.
 */

/** Longest transcript kept; a server that sends more is failing (a minute of speech is ~300 characters). */
export const MAX_TRANSCRIPT_CHARS = 4000;

export type ApplyResult = 'changed' | 'unchanged' | 'too_long';

export class FunasrTranscript {
  /** Text of the sentences the offline pass has closed. */
  #closed = '';
  /** Streaming pieces of the sentence still open. */
  #open = '';

  /** The whole hypothesis so far. */
  get text(): string {
    return (this.#closed + this.#open).trim();
  }

  /** Applies one result; results of other modes (an acknowledgement) change nothing. */
  apply(mode: string | undefined, text: string): ApplyResult {
    const before = this.text;
    let closed = this.#closed;
    let open = this.#open;
    if (mode === 'online' || mode === '2pass-online') open += text;
    else if (mode === '2pass-offline' || mode === 'offline') {
      closed += text;
      open = '';
    } else return 'unchanged';
    if (closed.length + open.length > MAX_TRANSCRIPT_CHARS) return 'too_long';
    this.#closed = closed;
    this.#open = open;
    return this.text === before ? 'unchanged' : 'changed';
  }
}
