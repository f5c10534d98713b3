/** Running agent tasks as the client sees them: requests in flight plus lich/event run markers. */

export interface TaskInfo {
  key: string;
  taskId?: string;
  title: string;
  startedAt: number;
}

type Listener = () => void;

export class TaskTracker {
  private readonly tasks = new Map<string, TaskInfo>();
  private readonly listeners: Listener[] = [];
  private nextLocal = 1;

  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.push(listener);
    return {
      dispose: () => {
        const index = this.listeners.indexOf(listener);
        if (index >= 0) {
          this.listeners.splice(index, 1);
        }
      },
    };
  }

  /** A lich.ask request sent by this client; returns the key to pass to `end`. */
  begin(title: string): string {
    const key = `local-${this.nextLocal++}`;
    this.tasks.set(key, { key, title, startedAt: Date.now() });
    this.fire();
    return key;
  }

  /** The server told us the id of a task we started (or of one started elsewhere). */
  attachId(key: string | undefined, taskId: string): void {
    if (key && this.tasks.has(key)) {
      const info = this.tasks.get(key)!;
      info.taskId = taskId;
    }
    this.fire();
  }

  end(key: string): void {
    if (this.tasks.delete(key)) {
      this.fire();
    }
  }

  /** Server-side run markers (lich/event run_start/run_end) for tasks not started by this client. */
  serverStarted(taskId: string, title: string): void {
    for (const info of this.tasks.values()) {
      if (info.taskId === taskId) {
        return;
      }
    }
    // Our own request without a known id yet: adopt the oldest such task instead of doubling it.
    for (const info of this.tasks.values()) {
      if (!info.taskId && info.key.startsWith("local-")) {
        info.taskId = taskId;
        this.fire();
        return;
      }
    }
    const key = `server-${taskId}`;
    this.tasks.set(key, { key, taskId, title, startedAt: Date.now() });
    this.fire();
  }

  serverEnded(taskId: string): void {
    for (const [key, info] of this.tasks) {
      if (info.taskId === taskId && key.startsWith("server-")) {
        this.tasks.delete(key);
        this.fire();
      }
    }
  }

  clear(): void {
    if (this.tasks.size > 0) {
      this.tasks.clear();
      this.fire();
    }
  }

  list(): TaskInfo[] {
    return [...this.tasks.values()].sort((a, b) => a.startedAt - b.startedAt);
  }

  get size(): number {
    return this.tasks.size;
  }

  private fire(): void {
    for (const listener of [...this.listeners]) {
      listener();
    }
  }
}

/**
 * End-of-task notifications. The extension declares `experimental.lich.taskNotifications`, so the
 * server sends no end-of-task window/showMessage for any task; the extension says it itself, once
 * and only for a task not started from the chat (a code action, the palette): the chat shows its
 * own turns' outcome, and one toast per chat turn was a toast for every message.
 */
export const OPEN_CHAT_ACTION = "Open chat";
/** At most this many characters of the answer's first line in the notification. */
export const NOTICE_ANSWER_CHARS = 120;

export interface TaskNotice {
  level: "info" | "warning" | "error";
  message: string;
  /** The thread the task was a turn of: "Open chat" shows it. */
  thread?: string;
}

/**
 * An error as a notification says it: without the JSON-RPC wrapping ("Request lich.ask failed
 * with message: ") or the command's id in front, and a lost connection in plain words.
 */
export function toastError(err: unknown): string {
  const message = err instanceof Error ? err.message : typeof err === "string" ? err : String(err);
  if (/connection (got disposed|is closed)|pending response rejected|client is not running/i.test(message)) {
    return "the language server stopped (it restarts by itself)";
  }
  return message.replace(/^Request \S+ failed with message: /, "").replace(/^lich\.[A-Za-z]+: /, "");
}

function firstLine(text: string, max: number): string {
  const line = text
    .split("\n")
    .map((part) => part.trim())
    .find((part) => part !== "") ?? "";
  const chars = Array.from(line);
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : line;
}

/**
 * The one short notification for a finished lich.ask (its result: AskResult): `Lich: <title>:
 * <first line of the answer>`, or why it stopped. Undefined for something that is not a result.
 */
export function taskNotice(result: unknown, title: string): TaskNotice | undefined {
  if (!result || typeof result !== "object") {
    return undefined;
  }
  const r = result as Record<string, unknown>;
  const text = (value: unknown): string => (typeof value === "string" ? value : "");
  const thread = text(r.thread) || undefined;
  const label = firstLine(title, 60) || "task";
  const reason = text(r.stopped_reason);
  let notice: TaskNotice;
  if (reason === "error") {
    notice = { level: "error", message: `Lich: ${label} failed: ${firstLine(toastError(text(r.error)), NOTICE_ANSWER_CHARS) || "see the chat for details"}` };
  } else if (reason === "aborted") {
    notice = { level: "warning", message: `Lich: ${label}: cancelled.` };
  } else if (reason === "budget") {
    notice = { level: "warning", message: `Lich: ${label}: stopped after its turn limit (lich.maxTurns).` };
  } else {
    const answer = firstLine(text(r.final), NOTICE_ANSWER_CHARS) || firstLine(text(r.review_message), NOTICE_ANSWER_CHARS) || "done.";
    notice = { level: "info", message: `Lich: ${label}: ${answer}` };
  }
  return thread ? { ...notice, thread } : notice;
}

/** Declares `experimental.lich.taskNotifications: true` (a StaticFeature of vscode-languageclient). */
export class TaskNotificationsCapability {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    const lich = (experimental.lich ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, lich: { ...lich, taskNotifications: true } };
  }

  initialize(): void {}

  getState(): { kind: "static" } {
    return { kind: "static" };
  }

  clear(): void {}
}
