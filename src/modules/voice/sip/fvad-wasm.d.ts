// @echogarden/fvad-wasm ships no types: its default export is the Emscripten module factory (vad.ts types the
// functions it uses).
declare module '@echogarden/fvad-wasm' {
  const createModule: () => Promise<unknown>;
  export default createModule;
}
