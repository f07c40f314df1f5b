/**
 * @module The providers' public surface: the registry of ASR, TTS and realtime vendors and their option
 * schemas (`registry/`). Kept in a folder of its own so that the provider thread (`thread/`), which
 * builds providers through it, imports a sibling and not the folder above.
 */
export * from './registry/registry.ts';
