// Bundle the extension into one CommonJS file; `vscode` is provided by the editor at run time.
// The chat view's script is a second, browser bundle (dist/chat.js) loaded by its webview.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "info" };
const builds = [
  { ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", external: ["vscode"], format: "cjs", platform: "node", target: "node18" },
  // No source map for the webview: its CSP allows nothing but this one file.
  { ...common, entryPoints: ["src/webview/chat.ts"], outfile: "dist/chat.js", format: "iife", platform: "browser", target: "es2020", sourcemap: false },
];

if (watch) {
  for (const options of builds) {
    const context = await esbuild.context(options);
    await context.watch();
  }
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
