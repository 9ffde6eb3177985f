/**
 * The console's build: a static app in dist/console, every asset named by its hash. Asset URLs are relative,
 * so the same files work under any path prefix: the API serves index.html with a <base> naming where it is.
 */
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  // Copied as they are, under names that never change: browsers ask for /favicon.ico by that name.
  publicDir: 'public',
  logLevel: 'warn',
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    manifest: true,
    target: 'es2022',
    // No inline data: URLs, which the Content-Security-Policy would have to allow.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    // The views that draw charts and graphs are large, and loaded only when opened; the first script has a budget
    // of its own (scripts/console-bundle-size.mjs).
    chunkSizeWarningLimit: 1024,
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
