import { defineConfig } from "vite";

// The build lands in the Go package that embeds it (host/console), served
// by the gateway under /console.
export default defineConfig({
  base: "/console/",
  build: {
    outDir: "../host/console/static/app",
    emptyOutDir: true,
    // No inline module-preload polyfill: the page's CSP allows only the
    // gateway's own script files.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022",
  },
});
