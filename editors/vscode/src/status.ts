/** Status bar text for the running tasks and the provider/model the server reports in lich.status. */
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

/** What `lich.status` says about the chat provider: `provider: {name, kind, model, describe}`. */
export interface ProviderInfo {
  /** Provider kind (`openai_compat`, `ollama`, ...): more telling than the synthetic names "default"/"vscode". */
  kind?: string;
  model?: string;
  /** The server's one-line description of the chat chain, e.g. "ollama qwen3 @ http://...". */
  describe?: string;
  /** Set when the server could not build the provider chain ("misconfigured: KEY: ..."). */
  problem?: string;
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
  return info;
}

export function statusView(state: "starting" | "running" | "stopped" | "missing", tasks: readonly TaskInfo[], provider: ProviderInfo = {}): StatusView {
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
  if (tasks.length > 0) {
    const count = tasks.length === 1 ? "1 task" : `${tasks.length} tasks`;
    const lines = tasks.map((task) => `• ${task.title}${task.taskId ? ` (${task.taskId})` : ""}`);
    return {
      text: `$(sync~spin) Lich: ${count}`,
      tooltip: [`Running (click to cancel):`, ...lines, detail ? `Model: ${detail}` : ""].filter(Boolean).join("\n"),
      command: CANCEL_COMMAND,
    };
  }
  if (provider.problem) {
    return { text: "$(warning) Lich: misconfigured", tooltip: `${provider.problem}\nClick to open .lich/config.json.`, command: CONFIG_COMMAND };
  }
  return {
    text: `$(hubot) Lich${where ? `: ${where}` : ""}`,
    tooltip: `lich-lsp is ready${detail ? ` (model ${detail})` : ""}. Click for the transcript.`,
    command: TRANSCRIPT_COMMAND,
  };
}
