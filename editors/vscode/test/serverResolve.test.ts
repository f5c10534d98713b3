import { mkdtempSync, writeFileSync, chmodSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { findOnPath } from "../src/nodeResolveDeps";
import { INSTALL_HINT, resolveServer, serverMissingMessage, type ResolveDeps } from "../src/serverResolve";

function deps(overrides: Partial<ResolveDeps> = {}): ResolveDeps {
  return {
    configuredCommand: "",
    configuredArgs: [],
    pythonInterpreter: vi.fn(async () => "/venv/bin/python"),
    canImportLichLsp: vi.fn(async () => true),
    findOnPath: vi.fn(async (name: string) => `/usr/local/bin/${name}`),
    ...overrides,
  };
}

describe("resolveServer", () => {
  it("uses the configured command first and asks nothing else", async () => {
    const d = deps({ configuredCommand: " /opt/py/bin/python ", configuredArgs: ["-m", "lich_lsp", "--log", "debug"] });
    const spec = await resolveServer(d);
    expect(spec).toEqual({ command: "/opt/py/bin/python", args: ["-m", "lich_lsp", "--log", "debug"], source: "setting" });
    expect(d.pythonInterpreter).not.toHaveBeenCalled();
    expect(d.findOnPath).not.toHaveBeenCalled();
  });

  it("uses the Python extension's interpreter with -m lich_lsp when it can import the package", async () => {
    const d = deps();
    const spec = await resolveServer(d);
    expect(spec).toEqual({ command: "/venv/bin/python", args: ["-m", "lich_lsp"], source: "python-extension" });
    expect(d.canImportLichLsp).toHaveBeenCalledWith("/venv/bin/python");
    expect(d.findOnPath).not.toHaveBeenCalled();
  });

  it("falls back to lich-lsp on PATH when the selected interpreter lacks the package", async () => {
    const d = deps({ canImportLichLsp: vi.fn(async () => false) });
    expect(await resolveServer(d)).toEqual({ command: "/usr/local/bin/lich-lsp", args: [], source: "path" });
  });

  it("falls back to PATH when the Python extension is missing or throws", async () => {
    expect((await resolveServer(deps({ pythonInterpreter: async () => undefined })))?.source).toBe("path");
    const throwing = deps({
      pythonInterpreter: async () => {
        throw new Error("python extension broke");
      },
    });
    expect((await resolveServer(throwing))?.source).toBe("path");
    expect(throwing.canImportLichLsp).not.toHaveBeenCalled();
  });

  it("returns undefined when nothing is found, and the message says how to install", async () => {
    const spec = await resolveServer(deps({ pythonInterpreter: async () => undefined, findOnPath: async () => undefined }));
    expect(spec).toBeUndefined();
    const message = serverMissingMessage(undefined);
    expect(message).toContain(INSTALL_HINT);
    expect(message).toContain("pip install lich-lsp");
    expect(message).toContain("Restart Server");
  });

  it("names the configured command when that one fails", () => {
    const message = serverMissingMessage({ command: "/nope/python", args: ["-m", "lich_lsp"], source: "setting" }, "not found");
    expect(message).toContain("/nope/python -m lich_lsp");
    expect(message).toContain("lich.server.command");
    expect(message).toContain("pip install lich-lsp");
  });
});

describe("findOnPath", () => {
  it("finds an executable file and skips non-executables and directories", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "lich-path-"));
    const a = path.join(root, "a");
    const b = path.join(root, "b");
    mkdirSync(a);
    mkdirSync(b);
    writeFileSync(path.join(a, "lich-lsp"), "#!/bin/sh\n"); // not executable
    mkdirSync(path.join(a, "other"));
    writeFileSync(path.join(b, "lich-lsp"), "#!/bin/sh\n");
    chmodSync(path.join(b, "lich-lsp"), 0o755);
    const searchPath = [a, b].join(path.delimiter);
    expect(await findOnPath("lich-lsp", searchPath)).toBe(path.join(b, "lich-lsp"));
    expect(await findOnPath("other", searchPath)).toBeUndefined();
    expect(await findOnPath("missing", searchPath)).toBeUndefined();
  });
});
