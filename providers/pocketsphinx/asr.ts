/**
 * @module The embedded recogniser: which engine runs the `asr: { provider: pocketsphinx }` block.
 * `stream` (the helper, partial transcripts while the user speaks) when it is built, else
 * `continuous` (Debian's pocketsphinx_continuous, one result per finished utterance), like the
 * embedded TTS's native helper and its WebAssembly fallback.
 */
import type { Asr } from '../../audio/asr/asr.ts';
import { ErrorCode, VoiceError } from '../../core/errors.ts';
import type { Logger } from '../../core/logger.ts';
import { PocketsphinxContinuousAsr } from './continuous.ts';
import { streamHelperPath } from './helper.ts';
import type { PocketsphinxAsrOptions } from './options.ts';
import { PocketsphinxStreamAsr } from './stream-asr.ts';

export async function createPocketsphinxAsr(opts: PocketsphinxAsrOptions, log: Logger): Promise<Asr> {
  if (opts.engine === 'continuous') return PocketsphinxContinuousAsr.create(opts, log);
  const helper = streamHelperPath();
  if (helper) return PocketsphinxStreamAsr.create(opts, log, helper);
  if (opts.engine === 'stream')
    throw new VoiceError(
      ErrorCode.ConfigInvalid,
      'asr.engine is stream, but build/pocketsphinx-stream is not built (scripts/setup.sh builds it: a C compiler and libpocketsphinx3 are needed)',
    );
  log.info('pocketsphinx: the streaming helper is not built (scripts/setup.sh builds it); no partial transcripts');
  return PocketsphinxContinuousAsr.create(opts, log);
}
