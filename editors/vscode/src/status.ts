/** Status bar text for the running tasks and the configured provider/model. */
import type { TaskInfo } from "./tasks";

export interface StatusView {
  text: string;
  tooltip: string;
  /** Command id run on click. */
  command: string;
}

export const CANCEL_COMMAND = "lichClient.cancelTask";
export const TRANSCRIPT_COMMAND = "lichClient.showTranscript";

/** Provider and model from a `lich.status` result, whatever nesting the server uses. */
export function providerModel(status: unknown): { provider?: string; model?: string } {
  if (!status || typeof status !== "object") {
    return {};
  }
  const record = status as Record<string, unknown>;
  const nested = (record.provider && typeof record.provider === "object" ? record.provider : undefined) as Record<string, unknown> | undefined;
  const pick = (...values: unknown[]): string | undefined => values.find((v): v is string => typeof v === "string" && v !== "");
  return {
    provider: pick(nested?.name, nested?.kind, record.provider, record.provider_name),
    model: pick(nested?.model, record.model),
  };
}

export function statusView(state: "starting" | "running" | "stopped" | "missing", tasks: readonly TaskInfo[], provider?: string, model?: string): StatusView {
  const where = [provider, model].filter(Boolean).join("/");
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
      tooltip: [`Running (click to cancel):`, ...lines, where ? `Model: ${where}` : ""].filter(Boolean).join("\n"),
      command: CANCEL_COMMAND,
    };
  }
  return {
    text: `$(hubot) Lich${where ? `: ${where}` : ""}`,
    tooltip: `lich-lsp is ready${where ? ` (model ${where})` : ""}. Click for the transcript.`,
    command: TRANSCRIPT_COMMAND,
  };
}
