/**
 * Trust of the workspace's `.lich/config.json` (server command `lich.trustWorkspace`).
 *
 * Untrusted, the server ignores the config keys that load code or send data (plugins, providers,
 * ...). "Lich: Trust Workspace Config" records trust through the server; "Lich: Revoke Workspace
 * Config Trust" takes it back. In VS Code's Restricted Mode nothing is ever trusted: the extension
 * starts the server with `workspace_trust: "never"` (settings.ts) and refuses the trust command
 * here, without asking the server.
 */
import { toastError } from "./tasks";

export const TRUST_COMMAND = "lich.trustWorkspace";
export const MANAGE_TRUST_ACTION = "Manage Workspace Trust";
/** VS Code's own command behind "Manage Workspace Trust". */
export const MANAGE_TRUST_COMMAND = "workbench.trust.manage";
export const RESTRICTED_MODE_MESSAGE =
  "Lich: VS Code's Restricted Mode is on, so .lich/config.json is never trusted. Trust this folder in VS Code first (Manage Workspace Trust), then run Lich: Trust Workspace Config.";

export type TrustState = "trusted" | "untrusted" | "no_config" | "refused";

/** One config key the server ignores (or would ignore) while the config is untrusted. */
export interface TrustKey {
  key: string;
  what?: string;
}

/** The result of `lich.trustWorkspace` (and `lich.status`'s `trust` member, without `message`). */
export interface TrustResult {
  state?: TrustState | string;
  config?: string;
  keys?: TrustKey[];
  message?: string;
}

export interface TrustArgs {
  revoke?: boolean;
}

/** The parts of vscode.window the command needs. */
export interface TrustUi {
  showInformationMessage(message: string): Thenable<unknown>;
  showWarningMessage(message: string): Thenable<unknown>;
  showErrorMessage(message: string, ...actions: string[]): Thenable<string | undefined>;
}

export interface TrustDeps {
  /** vscode.workspace.isTrusted: false in Restricted Mode. */
  workspaceTrusted: boolean;
  /** Sends `lich.trustWorkspace` with these arguments; undefined when the server is not running (already reported). */
  send(args: TrustArgs): Promise<TrustResult | undefined>;
  ui: TrustUi;
  /** Opens VS Code's workspace trust editor (the error's action). */
  manageTrust(): void;
}

/** The notification text for a result: the server's own line, else one built from the state. */
export function trustMessage(result: TrustResult, revoke: boolean): string {
  const line = typeof result.message === "string" ? result.message.trim() : "";
  if (line) {
    return /^lich\b/i.test(line) ? line : `Lich: ${line}`;
  }
  const where = result.config ?? ".lich/config.json";
  switch (result.state) {
    case "trusted":
      return `Lich: ${where} is trusted.`;
    case "untrusted":
      return revoke ? `Lich: trust of ${where} revoked.` : `Lich: ${where} is not trusted.`;
    case "no_config":
      return "Lich: this workspace has no .lich/config.json; nothing to trust.";
    case "refused":
      return "Lich: workspace config trust is turned off for this editor (workspace_trust: never).";
    default:
      return `Lich: unexpected answer from lich.trustWorkspace: ${JSON.stringify(result)}`;
  }
}

/**
 * Run "Trust Workspace Config" (`revoke` false) or "Revoke Workspace Config Trust" (`revoke` true).
 * Returns the server's result, or undefined when nothing was sent or the server failed.
 */
export async function runTrustCommand(deps: TrustDeps, revoke: boolean): Promise<TrustResult | undefined> {
  // Revoking only ever narrows what the server does, so it is allowed in Restricted Mode too.
  if (!revoke && !deps.workspaceTrusted) {
    void deps.ui.showErrorMessage(RESTRICTED_MODE_MESSAGE, MANAGE_TRUST_ACTION).then((choice) => {
      if (choice === MANAGE_TRUST_ACTION) {
        deps.manageTrust();
      }
    });
    return undefined;
  }
  let result: TrustResult | undefined;
  try {
    result = await deps.send(revoke ? { revoke: true } : {});
  } catch (err) {
    void deps.ui.showErrorMessage(`Lich: ${revoke ? "revoking" : "recording"} workspace config trust failed: ${toastError(err)}`);
    return undefined;
  }
  if (!result || typeof result !== "object") {
    return undefined;
  }
  const message = trustMessage(result, revoke);
  if (result.state === "refused") {
    void deps.ui.showWarningMessage(message);
  } else {
    void deps.ui.showInformationMessage(message);
  }
  return result;
}
