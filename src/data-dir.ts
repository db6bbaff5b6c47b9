// The data directory without DATA_DIR, in a module of its own with no imports: main.ts reads it before the
// server's bundle (and config.ts within it) is loaded, to start the embedded database's thread.
/** Where the embedded database and the generated secrets live when DATA_DIR is not set. */
export const DEFAULT_DATA_DIR = './data';
