/**
 * "Lich: Undo Task" (server command `lich.undoTask {task_id}`).
 *
 * The server keeps a journal of every change its tasks made (the last 20 tasks, across restarts)
 * and sends the inverse of one task as ONE workspace edit: one Ctrl+Z puts the task's changes
 * back. Files the user changed since are rebased through those edits, or refused where the edits
 * touch the task's lines; the server tells the user what happened with window/showMessage, so
 * here we only pick the task (from lich.status's `undoable_tasks`, newest first) and report a
 * request that failed.
 */
import { toastError } from "./tasks";

export const UNDO_COMMAND = "lich.undoTask";
export const UNDO_TITLE = "Lich: Undo Task";

/** One entry of lich.status's `undoable_tasks`. */
export interface UndoableTask {
  task_id: string;
  title: string;
  /** Epoch seconds. */
  started?: number;
  files: string[];
  running?: boolean;
}

export interface UndoFile {
  uri?: string;
  path?: string;
  outcome?: "undone" | "rebased" | "unchanged" | "refused" | "failed";
  reason?: string;
  lines?: [number, number];
}

export interface UndoResult {
  task_id?: string | null;
  title?: string;
  ok?: boolean;
  files?: UndoFile[];
  task_running?: boolean;
  message?: string;
  error?: string;
  dismissed?: boolean;
}

export interface UndoPickItem {
  label: string;
  description: string;
  detail: string;
  task: UndoableTask;
}

/** The parts of vscode.window the command needs. */
export interface UndoUi {
  showQuickPick(items: UndoPickItem[], options: { title?: string; placeHolder?: string; matchOnDescription?: boolean; matchOnDetail?: boolean }): Thenable<UndoPickItem | undefined>;
  showInformationMessage(message: string): Thenable<unknown>;
  showErrorMessage(message: string): Thenable<unknown>;
}

export interface UndoDeps {
  /** lich.status; undefined when the server is not running (already reported). */
  status(): Promise<unknown>;
  /** Sends lich.undoTask with these arguments; undefined when the server is not running. */
  send(args: { task_id: string }): Promise<UndoResult | undefined>;
  ui: UndoUi;
  /** Epoch milliseconds (tests pin it). */
  now?: () => number;
}

/** lich.status's `undoable_tasks`, keeping only well-formed entries. */
export function undoableTasks(status: unknown): UndoableTask[] {
  const list = status && typeof status === "object" ? (status as { undoable_tasks?: unknown }).undoable_tasks : undefined;
  if (!Array.isArray(list)) {
    return [];
  }
  const tasks: UndoableTask[] = [];
  for (const entry of list as Record<string, unknown>[]) {
    if (!entry || typeof entry.task_id !== "string") {
      continue;
    }
    tasks.push({
      task_id: entry.task_id,
      title: typeof entry.title === "string" && entry.title ? entry.title : entry.task_id,
      started: typeof entry.started === "number" ? entry.started : undefined,
      files: Array.isArray(entry.files) ? entry.files.filter((f): f is string => typeof f === "string") : [],
      running: entry.running === true,
    });
  }
  return tasks;
}

/** "just now", "5 min ago", "3 h ago", "2 days ago". */
export function ago(startedSeconds: number | undefined, nowMs: number): string {
  if (startedSeconds === undefined) {
    return "";
  }
  const seconds = Math.max(0, Math.round(nowMs / 1000 - startedSeconds));
  if (seconds < 60) {
    return "just now";
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)} min ago`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)} h ago`;
  }
  const days = Math.floor(seconds / 86400);
  return `${days} day${days === 1 ? "" : "s"} ago`;
}

const MAX_FILES_SHOWN = 4;

export function pickItems(tasks: UndoableTask[], nowMs: number): UndoPickItem[] {
  return tasks.map((task) => {
    const files = task.files.slice(0, MAX_FILES_SHOWN).join(", ") + (task.files.length > MAX_FILES_SHOWN ? ` and ${task.files.length - MAX_FILES_SHOWN} more` : "");
    const when = ago(task.started, nowMs);
    return {
      label: task.title,
      description: [task.task_id, when, task.running ? "running" : ""].filter(Boolean).join(" · "),
      detail: files,
      task,
    };
  });
}

/**
 * Undo the task `taskId`, or the one the user picks from the recent undoable tasks. Returns the
 * server's result, or undefined when nothing was sent (no task, dismissed, server not running)
 * or the request failed.
 */
export async function undoTaskCommand(deps: UndoDeps, taskId?: string): Promise<UndoResult | undefined> {
  let chosen = typeof taskId === "string" && taskId ? taskId : undefined;
  try {
    if (!chosen) {
      const status = await deps.status();
      if (status === undefined) {
        return undefined;
      }
      const tasks = undoableTasks(status);
      if (tasks.length === 0) {
        void deps.ui.showInformationMessage("Lich: no task to undo (the server keeps the last 20 tasks that changed files).");
        return undefined;
      }
      const picked = await deps.ui.showQuickPick(pickItems(tasks, (deps.now ?? Date.now)()), {
        title: UNDO_TITLE,
        placeHolder: "Which task's changes to undo? (files you edited since keep your edits)",
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!picked) {
        return undefined;
      }
      chosen = picked.task.task_id;
    }
    return await deps.send({ task_id: chosen });
  } catch (err) {
    void deps.ui.showErrorMessage(`Lich: undoing the task failed: ${toastError(err)}`);
    return undefined;
  }
}
