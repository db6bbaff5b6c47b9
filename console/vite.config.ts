// The console builds to console/dist, which the server serves at `/` (src/platform/http/console.ts).
// `npm run dev --workspace console` serves it with hot reload and forwards the API paths to a server on :3000.
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const api = process.env.CONSOLE_API ?? 'http://127.0.0.1:3000';

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // No inline <script> or data: modules: the server's Content-Security-Policy allows only 'self'.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
  server: {
    proxy: Object.fromEntries(['/api', '/v2', '/admin', '/openapi.json'].map((path) => [path, api])),
  },
});
