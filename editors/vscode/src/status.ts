/** Status bar text for the running tasks, the provider/model and the MCP servers the server reports in lich.status. */
import type { TaskInfo } from "./tasks";

export interface StatusView {
  text: string;
  tooltip: string;
  /** Command id run on click. */
  command: string;
}

export const CANCEL_COMMAND = "lichClient.cancelTask";
export const TRANSCRIPT_COMMAND = "lichClient.showTranscript";
export const CONFIG_COMMAND = "lichClient.openConfig";
/** The first-run setup (./welcome); here as a string so this module stays free of vscode. */
export const SETUP_MODEL_COMMAND = "lichClient.setUpModel";
export const SERVER_LOG_COMMAND = "lichClient.showServerLog";

/** What `lich.status` says about the chat provider: `provider: {name, kind, model, describe}`. */
export interface ProviderInfo {
  /** Provider kind (`openai_compat`, `ollama`, ...): more telling than the synthetic names "default"/"vscode". */
  kind?: string;
  model?: string;
  /** The server's one-line description of the chat chain, e.g. "ollama qwen3 @ http://...". */
  describe?: string;
  /** Set when the server could not build the provider chain ("misconfigured: KEY: ..."). */
  problem?: string;
  /** False when no provider is configured and the built-in default would be tried (lich.status). */
  configured?: boolean;
}

export function providerInfo(status: unknown): ProviderInfo {
  if (!status || typeof status !== "object") {
    return {};
  }
  const provider = (status as Record<string, unknown>).provider;
  if (!provider || typeof provider !== "object") {
    return {};
  }
  const record = provider as Record<string, unknown>;
  const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
  const describe = text(record.describe);
  const info: ProviderInfo = { kind: text(record.kind), model: text(record.model), describe };
  if (!info.kind && describe?.startsWith("misconfigured")) {
    info.problem = describe;
  }
  if (typeof record.configured === "boolean") {
    info.configured = record.configured;
  }
  return info;
}

/** One MCP server of `lich.status`'s `mcp_servers`: `{name, transport?, state, tools, last_error}`. */
export interface McpServerInfo {
  name: string;
  transport?: string;
  /** disabled | refused | not_started | connecting | connected | failed (or a newer server's own). */
  state: string;
  tools?: number;
  lastError?: string;
}

/** The MCP servers `lich.status` lists; [] when the field is missing or malformed (older servers). */
export function mcpServers(status: unknown): McpServerInfo[] {
  if (!status || typeof status !== "object") {
    return [];
  }
  const servers = (status as Record<string, unknown>).mcp_servers;
  if (!Array.isArray(servers)) {
    return [];
  }
  const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim() !== "" ? value : undefined);
  const found: McpServerInfo[] = [];
  for (const entry of servers) {
    if (!entry || typeof entry !== "object" || Array.isArray(entry)) {
      continue;
    }
    const record = entry as Record<string, unknown>;
    const info: McpServerInfo = { name: text(record.name) ?? "?", state: text(record.state) ?? "unknown" };
    const transport = text(record.transport);
    if (transport) {
      info.transport = transport;
    }
    if (typeof record.tools === "number" && Number.isFinite(record.tools)) {
      info.tools = record.tools;
    }
    const lastError = text(record.last_error);
    if (lastError) {
      info.lastError = lastError;
    }
    found.push(info);
  }
  return found;
}

/** At most this many characters of an MCP server's last error in its status line. */
export const MCP_ERROR_CHARS = 120;

function clipLine(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  const chars = Array.from(one);
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : one;
}

/** `MCP files: connected, 12 tools`, `MCP web: failed: <last error, one line, clipped>`, `MCP x: not started`. */
export function mcpLine(server: McpServerInfo): string {
  let text = `MCP ${server.name}: ${server.state.replace(/_/g, " ")}`;
  if (server.state === "connected") {
    if (server.tools !== undefined) {
      text += `, ${server.tools} ${server.tools === 1 ? "tool" : "tools"}`;
    }
  } else if (server.lastError) {
    text += `: ${clipLine(server.lastError, MCP_ERROR_CHARS)}`;
  }
  return text;
}

/** Whether an MCP server needs the user's attention (the status bar shows a warning mark). */
export function mcpTrouble(servers: readonly McpServerInfo[]): boolean {
  return servers.some((server) => server.state === "failed" || server.state === "refused");
}

export function statusView(
  state: "starting" | "running" | "stopped" | "missing",
  tasks: readonly TaskInfo[],
  provider: ProviderInfo = {},
  mcp: readonly McpServerInfo[] = [],
  completion?: string | null,
): StatusView {
  const where = [provider.kind, provider.model].filter(Boolean).join("/");
  const detail = provider.describe ?? where;
  if (state === "missing") {
    return { text: "$(error) Lich: no server", tooltip: "The lich-lsp server was not found. Click for the transcript.", command: TRANSCRIPT_COMMAND };
  }
  if (state === "starting") {
    return { text: "$(loading~spin) Lich", tooltip: "Starting the lich-lsp server…", command: TRANSCRIPT_COMMAND };
  }
  if (state === "stopped") {
    return { text: "$(debug-stop) Lich", tooltip: "The lich-lsp server is stopped. Run Lich: Restart Server.", command: TRANSCRIPT_COMMAND };
  }
  const mcpLines = mcp.map(mcpLine);
  const mark = mcpTrouble(mcp) ? " $(warning)" : "";
  if (tasks.length > 0) {
    const count = tasks.length === 1 ? "1 task" : `${tasks.length} tasks`;
    const lines = tasks.map((task) => `• ${task.title}${task.taskId ? ` (${task.taskId})` : ""}`);
    return {
      text: `$(sync~spin) Lich: ${count}${mark}`,
      tooltip: [`Running (click to cancel):`, ...lines, detail ? `Model: ${detail}` : "", ...mcpLines].filter(Boolean).join("\n"),
      command: CANCEL_COMMAND,
    };
  }
  if (provider.problem) {
    return {
      text: "$(warning) Lich: misconfigured",
      tooltip: [`${provider.problem}\nClick to open .lich/config.json.`, ...mcpLines].join("\n"),
      command: CONFIG_COMMAND,
    };
  }
  if (provider.configured === false) {
    // The server would try its built-in default (Ollama on localhost): not a model the user chose.
    return {
      text: `$(hubot) Lich: no model${mark}`,
      tooltip: [`No model is set up yet${detail ? ` (the default would be ${detail})` : ""}. Click to set one up.`, ...mcpLines].join("\n"),
      command: SETUP_MODEL_COMMAND,
    };
  }
  return {
    text: `$(hubot) Lich${where ? `: ${where}` : ""}${mark}`,
    tooltip: [`lich-lsp is ready${detail ? ` (model ${detail})` : ""}. Click for the transcript.`, ...(completion ? [`Completions: ${completion}`] : []), ...mcpLines].join("\n"),
    command: TRANSCRIPT_COMMAND,
  };
}

/** `lich.status`'s `completion`: the model (null: completions off) and the last failed request. */
export interface CompletionInfo {
  model: string | null | undefined;
  /** The last failure in plain words; cleared by the next success. */
  lastError?: string;
  /** When it failed (ISO time). */
  lastErrorAt?: string;
  /** Why there is no model although one is configured (`completion.error`: the entry is wrong). */
  configError?: string;
}

export function completionInfo(status: unknown): CompletionInfo {
  const completion = status && typeof status === "object" ? (status as Record<string, unknown>).completion : undefined;
  if (completion === undefined) {
    return { model: undefined };
  }
  if (!completion || typeof completion !== "object") {
    return { model: null };
  }
  const record = completion as Record<string, unknown>;
  const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim() !== "" ? value : undefined);
  const info: CompletionInfo = { model: text(record.model) ?? null };
  const configError = text(record.error);
  if (!info.model && configError) {
    info.configError = configError;
  }
  const lastError = text(record.last_error);
  if (lastError) {
    info.lastError = lastError;
    info.lastErrorAt = text(record.last_error_at);
  }
  return info;
}

/** At most this many characters of the last completion failure in the status item's tooltip. */
export const COMPLETION_ERROR_CHARS = 200;
export const COMPLETION_ITEM_TEXT = "Ghost text";

/** "14:03:07" from an ISO time (the local clock), or the text as it is when it does not parse. */
export function clockTime(iso: string | undefined, zone?: string): string {
  if (!iso) {
    return "";
  }
  const when = new Date(iso);
  return Number.isNaN(when.getTime()) ? iso : when.toLocaleTimeString("en-GB", { hour12: false, timeZone: zone });
}

/**
 * The ghost-text status item: hidden (undefined) while completions are off or unknown; the model
 * when they work; a warning with the last failure (when, and what) while they fail.
 */
export function completionView(info: CompletionInfo, enabled: boolean, zone?: string): StatusView | undefined {
  if (!enabled) {
    return undefined;
  }
  if (!info.model && info.configError) {
    // A completion model is configured but cannot be built: say so rather than nothing.
    return {
      text: `$(warning) ${COMPLETION_ITEM_TEXT}: off`,
      tooltip: `Ghost text is off: ${clipLine(info.configError, COMPLETION_ERROR_CHARS)}\nClick for the server log.`,
      command: SERVER_LOG_COMMAND,
    };
  }
  if (!info.model) {
    return undefined;
  }
  if (info.lastError) {
    const at = clockTime(info.lastErrorAt, zone);
    return {
      text: `$(warning) ${COMPLETION_ITEM_TEXT}: failing`,
      tooltip: `Ghost text from ${info.model} failed${at ? ` at ${at}` : ""}: ${clipLine(info.lastError, COMPLETION_ERROR_CHARS)}\nClick for the server log.`,
      command: SERVER_LOG_COMMAND,
    };
  }
  return {
    text: `$(sparkle) ${COMPLETION_ITEM_TEXT}`,
    tooltip: `Ghost text from ${info.model}. Click for the server log.`,
    command: SERVER_LOG_COMMAND,
  };
}
