/**
 * VS Code settings (`lich.*`) → the server's configuration keys.
 *
 * Only settings the user actually set are sent: initializationOptions and workspace/configuration
 * sit on top of `.lich/config.json`, so sending a default here would silently override the
 * workspace's config file.
 */

export const SECTION = "lich";

/** What an untrusted workspace may do: read files, nothing else. */
export const UNTRUSTED_CAPABILITIES: readonly string[] = ["file/read"];

/**
 * The server's `workspace_trust` key in VS Code's Restricted Mode: never trust `.lich/config.json`
 * and never ask (the keys that load code or send data stay ignored).
 */
export const UNTRUSTED_WORKSPACE_TRUST = "never";

/** The subset of vscode.WorkspaceConfiguration this module needs (easy to fake in tests). */
export interface SettingsSource {
  get<T>(key: string): T | undefined;
  inspect<T>(key: string):
    | {
        globalValue?: T;
        workspaceValue?: T;
        workspaceFolderValue?: T;
      }
    | undefined;
}

export interface ServerSettings {
  [key: string]: unknown;
}

export interface ProviderEntry {
  name: string;
  kind: string;
  model?: string;
  base_url?: string;
  api_key_env?: string;
}

export const VSCODE_PROVIDER_NAME = "vscode";

function isSet(source: SettingsSource, key: string): boolean {
  const info = source.inspect(key);
  if (!info) {
    return false;
  }
  return info.globalValue !== undefined || info.workspaceValue !== undefined || info.workspaceFolderValue !== undefined;
}

function nonEmptyString(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

/** The provider described by lich.provider.kind / model / baseUrl / apiKeyEnv, if a kind is set. */
export function providerFromSettings(source: SettingsSource): ProviderEntry | undefined {
  const kind = nonEmptyString(source.get<string>("provider.kind"));
  if (!kind) {
    return undefined;
  }
  const entry: ProviderEntry = { name: VSCODE_PROVIDER_NAME, kind };
  const model = nonEmptyString(source.get<string>("model"));
  const baseUrl = nonEmptyString(source.get<string>("baseUrl"));
  const apiKeyEnv = nonEmptyString(source.get<string>("apiKeyEnv"));
  if (model) {
    entry.model = model;
  }
  if (baseUrl) {
    entry.base_url = baseUrl;
  }
  if (apiKeyEnv) {
    entry.api_key_env = apiKeyEnv;
  }
  return entry;
}

/**
 * The server-side configuration for these settings: the value of initializationOptions and of
 * the `lich` section of workspace/configuration.
 */
export function serverSettings(source: SettingsSource, trusted: boolean): ServerSettings {
  const out: ServerSettings = {};
  const provider = providerFromSettings(source);
  if (provider) {
    out.providers = [provider];
    out.models = { chat: [VSCODE_PROVIDER_NAME] };
  }
  if (isSet(source, "editMode")) {
    const mode = source.get<string>("editMode");
    if (mode === "apply" || mode === "review") {
      out.edit_mode = mode;
    }
  }
  if (isSet(source, "reviewStyle")) {
    const style = source.get<string>("reviewStyle");
    if (style === "auto" || style === "hunks" || style === "batch") {
      out.review_style = style;
    }
  }
  if (isSet(source, "maxTurns")) {
    const turns = source.get<number | null>("maxTurns");
    if (typeof turns === "number" && Number.isInteger(turns) && turns >= 1) {
      out.max_turns = turns;
    }
  }
  if (isSet(source, "approval")) {
    const approval = source.get<Record<string, unknown>>("approval");
    if (approval && typeof approval === "object" && Object.keys(approval).length > 0) {
      out.approval = { ...approval };
    }
  }
  if (isSet(source, "completions.model")) {
    const model = source.get<Record<string, unknown>>("completions.model");
    if (model && typeof model === "object" && !Array.isArray(model) && Object.keys(model).length > 0) {
      out.completion = { ...model };
    }
  }
  if (isSet(source, "completions.debounceMs")) {
    const debounce = source.get<number | null>("completions.debounceMs");
    if (typeof debounce === "number" && Number.isInteger(debounce) && debounce >= 0) {
      out.completion_debounce_ms = debounce;
    }
  }
  if (!trusted) {
    out.capabilities = [...UNTRUSTED_CAPABILITIES];
    out.workspace_trust = UNTRUSTED_WORKSPACE_TRUST;
  }
  return out;
}

/** Settings whose change needs a new server process rather than a configuration push. */
export const RESTART_SETTINGS: readonly string[] = ["lich.server.command", "lich.server.args"];
