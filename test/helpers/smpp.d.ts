// The npm `smpp` package (the tests' SMSC peer) ships no types; the tests use it loosely.
declare module 'smpp' {
  const smpp: any;
  export default smpp;
}
