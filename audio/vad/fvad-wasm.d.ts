/** Types for the untyped emscripten module of @echogarden/fvad-wasm (libfvad). */
declare module '@echogarden/fvad-wasm' {
  export interface FvadModule {
    HEAP16: Int16Array;
    _malloc(bytes: number): number;
    _free(ptr: number): void;
    _fvad_new(): number;
    _fvad_free(handle: number): void;
    _fvad_reset(handle: number): void;
    _fvad_set_mode(handle: number, mode: number): number;
    _fvad_set_sample_rate(handle: number, rate: number): number;
    /** 1 = speech, 0 = not, -1 = bad frame length. */
    _fvad_process(handle: number, ptr: number, samples: number): number;
  }
  const factory: (moduleArg?: Record<string, unknown>) => Promise<FvadModule>;
  export default factory;
}
