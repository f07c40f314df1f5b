// The package ships no types; `espeak-wasm.ts` describes the parts it uses.
declare module '@echogarden/espeak-ng-emscripten' {
  const create: () => Promise<unknown>;
  export default create;
}
