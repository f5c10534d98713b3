/**
 * Renders `lich/event` notifications (the agent core's events) as readable transcript text.
 * Pure: the extension appends the returned text to the "Lich Transcript" output channel.
 */

import type { LichEventPayload } from "./protocol.generated";

export const EVENT_METHOD = "lich/event";
export const TRANSCRIPT_CHANNEL = "Lich Transcript";
/** Lich: Open Task Transcript: a finished task's markdown transcript file in an editor tab. */
export const OPEN_TRANSCRIPT_COMMAND = "lichClient.openTranscript";
const SUMMARY_MAX_CHARS = 200;

/**
 * One `lich/event` as the server sends it: docs/lich-event.schema.json, generated from the event
 * dataclasses in lich_core/agent/events.py (the tests validate their fixtures against it). Read
 * only the fields listed there; `data` may be cut down to its short fields plus `data.cut`.
 */
export interface LichEvent {
  /** One of the schema's event types (src/protocol.generated.ts, generated from it), or a newer
   * server's type this client does not know (shown as a generic line). */
  type?: LichEventPayload["type"] | (string & {});
  task_id?: LichEventPayload["task_id"];
  /** The conversation the task belongs to (lich.ask's `thread`). */
  thread?: LichEventPayload["thread"];
  run_id?: LichEventPayload["run_id"];
  session_id?: LichEventPayload["session_id"];
  seq?: LichEventPayload["seq"];
  ts?: LichEventPayload["ts"];
  /** Read field by field: a cut event keeps only its short fields (and `cut`). */
  data?: Record<string, unknown>;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function summarise(value: unknown, limit = SUMMARY_MAX_CHARS): string {
  let text: string;
  if (typeof value === "string") {
    text = value;
  } else if (value === undefined || value === null) {
    text = "";
  } else {
    try {
      text = JSON.stringify(value);
    } catch {
      text = String(value);
    }
  }
  text = text.replace(/\s*\n\s*/g, " ⏎ ").trim();
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/**
 * The line for an `llm_retry` event: which provider failed, why, and what happens next.
 * `restartsBelow` adds where the restarted answer begins, for a view that cannot un-print the
 * streamed text the failed attempt left behind.
 */
export function retryNotice(data: Record<string, unknown>, restartsBelow: boolean): string {
  const provider = str(data.provider) ?? "?";
  const kind = str(data.kind) ?? "error";
  let next: string;
  if (data.action === "failover") {
    next = `failing over to ${str(data.next_provider) ?? "the next provider"}`;
  } else {
    const delay = num(data.delay_s);
    const attempt = num(data.attempt);
    const max = num(data.max_attempts);
    next = "retrying";
    if (delay !== undefined && delay > 0) {
      next += ` in ${delay.toFixed(1)} s`;
    }
    if (attempt !== undefined && max !== undefined) {
      next += ` (attempt ${attempt + 1} of ${max})`;
    }
  }
  return `… provider ${provider} failed (${kind}): ${next}${restartsBelow ? "; the answer restarts below" : ""}`;
}

/**
 * The transcript file of a finished `lich.ask` (its answer's `transcript`, a file URI:
 * docs/lsp.md); undefined when the server could not write one or the ask gave no answer.
 */
export function askTranscript(result: unknown): string | undefined {
  const uri = result && typeof result === "object" ? (result as { transcript?: unknown }).transcript : undefined;
  return typeof uri === "string" && uri.startsWith("file:") ? uri : undefined;
}

/** The event's task id: the server's `task_id`, else the core's `run_id`. */
export function eventTaskId(event: LichEvent): string | undefined {
  return str(event.task_id) ?? str(event.run_id);
}

export class TranscriptRenderer {
  private midLine = false;

  /** Text to append for this event ("" for events not worth showing). */
  render(event: LichEvent): string {
    const data = event.data ?? {};
    const line = (text: string): string => {
      const prefix = this.midLine ? "\n" : "";
      this.midLine = false;
      return `${prefix}${text}\n`;
    };
    switch (event.type) {
      case "run_start": {
        // The server sends the prompt's length only; the extension shows the prompt it sent.
        const id = eventTaskId(event);
        const model = str(data.model);
        return line(`▶ task${id ? ` ${id}` : ""}${model ? ` (${model})` : ""}`);
      }
      case "text_delta": {
        const text = str(data.text) ?? "";
        if (!text) {
          return "";
        }
        this.midLine = !text.endsWith("\n");
        return text;
      }
      case "llm_retry": {
        // An output channel cannot take text back: end the void partial line and say where
        // the next attempt's answer starts.
        const discarded = (num(data.discarded_chars) ?? 0) > 0;
        return line(retryNotice(data, discarded));
      }
      case "llm_end":
        if (this.midLine) {
          this.midLine = false;
          return "\n";
        }
        return "";
      case "tool_call_start": {
        const name = str(data.name) ?? "tool";
        // A call too large to send whole arrives without its arguments (data.cut says so).
        const args = data.arguments !== undefined ? summarise(data.arguments) : data.cut !== undefined ? "(arguments too large to show)" : "";
        return line(`  → ${name}${args ? ` ${args}` : ""}`);
      }
      case "tool_call_end": {
        const name = str(data.name) ?? "tool";
        const ok = data.ok === true;
        const body = ok ? summarise(data.summary) : summarise(data.error);
        return line(`  ${ok ? "←" : "✖"} ${name}${body ? `: ${body}` : ""}`);
      }
      case "compress_start":
        return line("  … compressing the conversation");
      case "final": {
        const text = str(data.text) ?? "";
        return line(`✔ ${text}`);
      }
      case "budget_exhausted":
        return line(`✖ turn budget exhausted${data.max_turns !== undefined ? ` (${String(data.max_turns)} turns)` : ""}`);
      case "error":
        return line(`✖ error: ${summarise(data.message)}`);
      case "plugin_warning":
        return line(`  ! plugin warning: ${summarise(data.message)}`);
      case "run_end": {
        const reason = str(data.stopped_reason) ?? "done";
        return line(`■ task ended: ${reason}`);
      }
      default:
        return "";
    }
  }
}
