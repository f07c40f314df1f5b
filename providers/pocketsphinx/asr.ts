/**
 * @module The embedded recogniser: which engine runs the `asr: { provider: pocketsphinx }` block.
 */
import type { Asr } from '../../audio/asr/asr.ts';
import type { Logger } from '../../core/logger.ts';
import { PocketsphinxContinuousAsr } from './continuous.ts';
import type { PocketsphinxAsrOptions } from './options.ts';

export function createPocketsphinxAsr(opts: PocketsphinxAsrOptions, log: Logger): Promise<Asr> {
  return PocketsphinxContinuousAsr.create(opts, log);
}
