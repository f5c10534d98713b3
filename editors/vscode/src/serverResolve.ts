/**
 * Which process runs the language server. Order: the configured command → the Python
 * extension's selected interpreter with `-m lich_lsp` (only if it can import lich_lsp) →
 * `lich-lsp` on PATH. Nothing found → undefined, and the caller shows one actionable error.
 */

export type ServerSource = "setting" | "python-extension" | "path";

export interface ServerSpec {
  command: string;
  args: string[];
  source: ServerSource;
}

export interface ResolveDeps {
  configuredCommand: string | undefined;
  configuredArgs: readonly string[] | undefined;
  /** The interpreter selected in the Python extension, or undefined when it is not installed. */
  pythonInterpreter(): Promise<string | undefined>;
  /** Whether `python -c "import lich_lsp"` succeeds for that interpreter. */
  canImportLichLsp(python: string): Promise<boolean>;
  /** Absolute path of an executable on PATH, or undefined. */
  findOnPath(name: string): Promise<string | undefined>;
}

export const SERVER_EXECUTABLE = "lich-lsp";
export const PYTHON_MODULE_ARGS: readonly string[] = ["-m", "lich_lsp"];
export const INSTALL_HINT = "install with: pip install lich-lsp";

export async function resolveServer(deps: ResolveDeps): Promise<ServerSpec | undefined> {
  const configured = deps.configuredCommand?.trim();
  if (configured) {
    return { command: configured, args: [...(deps.configuredArgs ?? [])], source: "setting" };
  }
  let python: string | undefined;
  try {
    python = await deps.pythonInterpreter();
  } catch {
    python = undefined; // a broken Python extension must not stop the PATH fallback
  }
  if (python && (await deps.canImportLichLsp(python))) {
    return { command: python, args: [...PYTHON_MODULE_ARGS], source: "python-extension" };
  }
  const onPath = await deps.findOnPath(SERVER_EXECUTABLE);
  if (onPath) {
    return { command: onPath, args: [], source: "path" };
  }
  return undefined;
}

/** The one error message for a server that cannot be found or started. */
export function serverMissingMessage(spec: ServerSpec | undefined, detail?: string): string {
  if (spec && spec.source === "setting") {
    const shown = [spec.command, ...spec.args].join(" ");
    return `Lich: the configured server command \`${shown}\` could not be started${detail ? ` (${detail})` : ""}. Fix lich.server.command, or clear it and ${INSTALL_HINT}.`;
  }
  return `Lich: language server not found${detail ? ` (${detail})` : ""}; ${INSTALL_HINT} (or set lich.server.command), then run "Lich: Restart Server".`;
}
