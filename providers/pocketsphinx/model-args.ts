/**
 * @module The recogniser's model arguments (`-hmm`, `-dict`, `-lm`, `-jsgf`) from the options,
 * the same for both engines. An inline grammar is written to a temp file, since pocketsphinx
 * reads a grammar only from a file; its directory is the caller's to remove (`cleanup`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PocketsphinxAsrOptions } from './options.ts';

export interface ModelArgs {
  args: string[];
  /** Removes the inline grammar's temp directory, if one was made. Idempotent. */
  cleanup(): Promise<void>;
}

export async function modelArgs(opts: PocketsphinxAsrOptions): Promise<ModelArgs> {
  let tmpDir: string | undefined;
  const args: string[] = [];
  if (opts.grammar !== undefined) {
    let path = opts.grammar;
    if (opts.grammar.trimStart().startsWith('#JSGF')) {
      tmpDir = await mkdtemp(join(tmpdir(), 'psx-'));
      path = join(tmpDir, 'commands.gram');
      await writeFile(path, opts.grammar);
    }
    args.push('-jsgf', path);
  }
  if (opts.hmm) args.push('-hmm', opts.hmm);
  if (opts.dict) args.push('-dict', opts.dict);
  if (opts.lm && opts.grammar === undefined) args.push('-lm', opts.lm);
  return {
    args,
    cleanup: async () => {
      const dir = tmpDir;
      tmpDir = undefined;
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
