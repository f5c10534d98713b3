import * as path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // `vscode` only exists inside the editor; tests get a small fake with the same surface.
    alias: { vscode: path.resolve(__dirname, "test/mocks/vscode.ts") },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    testTimeout: 10_000,
  },
});
