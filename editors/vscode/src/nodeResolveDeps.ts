/** Real implementations of ResolveDeps: the Python extension API, a child process, PATH. */
import { execFile } from "node:child_process";
import { constants as fsConstants, promises as fs } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";

export const PYTHON_EXTENSION_ID = "ms-python.python";
export const IMPORT_PROBE_TIMEOUT_MS = 10_000;

export async function pythonExtensionInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  if (!vscode.extensions.getExtension(PYTHON_EXTENSION_ID)) {
    return undefined;
  }
  // Loaded lazily: the module is only useful when the Python extension is installed.
  const { PythonExtension } = await import("@vscode/python-extension");
  const api = await PythonExtension.api();
  const active = api.environments.getActiveEnvironmentPath(resource);
  const resolved = await api.environments.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath ?? undefined;
}

export function canImportLichLsp(python: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ["-c", "import lich_lsp"], { timeout: IMPORT_PROBE_TIMEOUT_MS }, (error) => resolve(!error));
  });
}

export async function findOnPath(name: string, envPath = process.env.PATH ?? ""): Promise<string | undefined> {
  const suffixes = process.platform === "win32" ? [".exe", ".cmd", ".bat", ""] : [""];
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    for (const suffix of suffixes) {
      const candidate = path.join(dir, name + suffix);
      try {
        await fs.access(candidate, fsConstants.X_OK);
        const stat = await fs.stat(candidate);
        if (stat.isFile()) {
          return candidate;
        }
      } catch {
        // not here; keep looking
      }
    }
  }
  return undefined;
}
