/**
 * The messages between the Lich chat view (a webview, src/webview/chat.ts) and the extension
 * (src/chatView.ts). Both sides import these types, so a renamed field fails `tsc` on both.
 * Everything crossing the boundary is plain JSON (webview postMessage clones it).
 */
import type { LichEvent } from "./transcript";

/** One tool call of a turn: from `lich.thread` (reloaded) or from the live events. */
export interface ToolView {
  id?: string;
  name: string;
  arguments?: unknown;
  /** What the call does (read, edit, execute, ...), as the server says (tool events, lich.thread). */
  kind?: string;
  /** What it works on, as the server says: see ToolTargetView. */
  target?: unknown;
  ok?: boolean;
  result?: string;
  duration_ms?: number;
}

/** A tool call's target as the server computes it (docs/lich-event.schema.json, ToolTarget). */
export interface ToolTargetView {
  path?: string;
  paths?: string[];
  lines?: { start: number; end?: number };
  command?: string;
  cwd?: string;
  url?: string;
  query?: string;
}

/** One turn as `lich.thread` lists it (the fields the view shows). */
export interface TurnView {
  turn: number;
  prompt: string;
  final?: string | null;
  error?: string | null;
  stopped_reason?: string | null;
  files?: string[];
  tools?: ToolView[];
  discarded?: boolean;
  /** The server's task id of the turn (its pending review hunks carry it). */
  task_id?: string | null;
  /** The files the turn wrote, as the server reported them (the extension fills it in from `files`). */
  edited?: EditedFile[];
}

/** A file an agent task wrote, as the server reported it: the only files "Open file" opens. */
export interface EditedFile {
  /** Workspace-relative path, for showing. */
  path: string;
  /** The server's URI of the file: what opens. */
  uri: string;
}

/** One pending review hunk (`lich.reviewList`), shown in the turn of the task that proposed it. */
export interface HunkView {
  hunk_id: string;
  task_id: string;
  uri: string;
  /** Workspace-relative path (the extension fills it in from `uri`). */
  path: string;
  /** 0-based first old line. */
  start_line: number;
  old_text: string;
  new_text: string;
  summary: string;
}

/** An approval question of the server (window/showMessageRequest) shown in the chat. */
/**
 * An approval question as data: the `approval` lich/event the server sends just before the
 * window/showMessageRequest whose message is `question` (docs/lich-event.schema.json).
 */
export interface ApprovalDetails {
  id: string;
  call_id?: string;
  tool: string;
  capability?: string | null;
  kind?: string;
  target?: unknown;
  command?: string | null;
  cwd?: string | null;
  host?: string | null;
  what_will_run?: string | null;
  question: string;
  options?: string[];
}

export interface ApprovalView {
  id: number;
  message: string;
  actions: string[];
  /** The question as the server's data (absent from a server without `approval` events). */
  details?: ApprovalDetails;
  /** In the running turn (its tool call waits for the answer), else at the end of the log. */
  inTurn: boolean;
}

export interface ThreadSummary {
  thread: string;
  title?: string;
  turns?: number;
  updated?: string | number;
  running?: boolean;
}

/** What the finished `lich.ask` said, reduced to what the view shows. */
export interface TurnOutcome {
  stopped_reason?: string;
  final?: string;
  /** A plain-words failure: the request was refused, the provider failed, the server went away. */
  error?: string;
  /** The files the turn wrote (lich.ask's `edited`, the server's URIs). */
  edited?: EditedFile[];
  /** The turn's number in the thread (lich.ask's `turn`; for Rewind to here). */
  turn?: number;
  review_message?: string;
  refused_message?: string;
  /** The task's markdown transcript file (a file URI), for the turn's Transcript link. */
  transcript?: string;
}

/** Extension → view. */
export type ToView =
  | { type: "thread"; thread?: string; title?: string; turns: TurnView[]; running: boolean; history: string[]; notice?: Notice }
  | { type: "threads"; threads: ThreadSummary[]; current?: string }
  | { type: "turnStart"; prompt: string; attachment?: string }
  | { type: "event"; event: LichEvent }
  | { type: "turnEnd"; outcome: TurnOutcome }
  | { type: "notice"; notice: Notice }
  | { type: "mentionsResult"; id: number; candidates: string[] }
  | { type: "attachment"; label?: string }
  | { type: "focusInput" }
  | { type: "approval"; approval: ApprovalView }
  /** The question was answered (here, in the dialog) or dropped (`answer` undefined). */
  | { type: "approvalDone"; id: number; answer?: string; where: "chat" | "dialog" | "gone" }
  /** Every pending hunk: the view adds new ones and marks the ones no longer listed as decided. */
  | { type: "hunks"; hunks: HunkView[] }
  | { type: "hunkDecided"; hunk_id: string; decision: "accepted" | "rejected" }
  /**
   * The editor context the next message carries by default (the active file, and the selection
   * when there is one): a removable chip. `label` undefined: nothing is attached.
   */
  | { type: "context"; label?: string }
  /**
   * A message the extension composed for the user (Apply to file): the view sends it now, or
   * queues it behind the running turn like a typed one. `uri`: the file it is about.
   */
  | { type: "submit"; prompt: string; uri?: string; label?: string }
  /** The chat model(s) as lich.status reports them, for the header's picker. */
  /** The header's model picker: the configured providers (lich.status `models`), `current` the one
   * the next turn runs on; `configured` false: none is set up (the picker offers setup). */
  | { type: "models"; current?: string; models: ModelChoice[]; configured: boolean };

export interface Notice {
  level: "info" | "error";
  text: string;
}

/** View → extension. */
export type ToExtension =
  | { type: "ready" }
  /** `uri`: the file the message is about, instead of the editor context (Apply to file). */
  | { type: "send"; prompt: string; uri?: string }
  | { type: "stop" }
  | { type: "rewind"; turn: number }
  | { type: "newThread" }
  | { type: "pickThread"; thread: string }
  | { type: "listThreads" }
  | { type: "mentions"; id: number; prefix: string }
  /**
   * A link in the model's text was clicked: `href` is its raw target. The extension decides what,
   * if anything, opens (src/chatLinks.ts); the view never opens anything itself.
   */
  | { type: "openLink"; href: string }
  /**
   * "Open file" of an edit or a "Changed:" entry. `uri` is a file URI the extension sent (a turn's
   * edited files, a review hunk); otherwise the extension opens the file the server reported for
   * the turn of `task_id` / `turn`, using `path` (the tool call's own argument, model text) only
   * to choose among several. A path from model text is never opened as such.
   */
  | { type: "openEdited"; uri?: string; task_id?: string; turn?: number; path?: string; line?: number }
  /** The turn's Transcript link: open that task's transcript file (a URI the extension sent). */
  | { type: "openTranscript"; uri: string }
  | { type: "dropAttachment" }
  | { type: "answerApproval"; id: number; answer: string }
  | { type: "reviewHunk"; hunk_id: string; accept: boolean }
  /** Accept all / Reject all: every pending change (lich.acceptAll / lich.rejectAll). */
  | { type: "reviewAll"; accept: boolean }
  /** The editor context chip's ×: the next messages go without it until another file is active. */
  | { type: "dropContext" }
  /** A code block's buttons: its text, and its fence's language. */
  | { type: "copyCode"; code: string }
  | { type: "insertCode"; code: string }
  | { type: "applyCode"; code: string; language?: string }
  /** The header's model picker: configure the models (the chat model comes from the config). */
  | { type: "configureModels" }
  /** The header's model picker: run the next turns on this configured provider. */
  | { type: "pickModel"; name: string };

export const CHAT_VIEW_ID = "lichClient.chat";

/** A configured provider in the model picker: its name (lich.ask `model`) and what it runs. */
export interface ModelChoice {
  name: string;
  label: string;
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text as HTML text or an attribute value (the page's and the markdown renderer's escaping). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]);
}
export const OPEN_CHAT_COMMAND = "lichClient.openChat";

/** Whether `value` is one of the view's messages (the webview is code we ship, but check anyway). */
export function isToExtension(value: unknown): value is ToExtension {
  if (!value || typeof value !== "object") {
    return false;
  }
  const message = value as Record<string, unknown>;
  switch (message.type) {
    case "ready":
    case "stop":
    case "newThread":
    case "listThreads":
    case "dropAttachment":
    case "dropContext":
    case "configureModels":
      return true;
    case "pickModel":
      return typeof message.name === "string" && message.name !== "";
    case "send":
      return typeof message.prompt === "string" && (message.uri === undefined || typeof message.uri === "string");
    case "reviewAll":
      return typeof message.accept === "boolean";
    case "copyCode":
    case "insertCode":
      return typeof message.code === "string";
    case "applyCode":
      return typeof message.code === "string" && (message.language === undefined || typeof message.language === "string");
    case "rewind":
      return typeof message.turn === "number" && Number.isInteger(message.turn);
    case "pickThread":
      return typeof message.thread === "string";
    case "mentions":
      return typeof message.id === "number" && typeof message.prefix === "string";
    case "openEdited":
      return (
        (message.uri === undefined || typeof message.uri === "string") &&
        (message.task_id === undefined || typeof message.task_id === "string") &&
        (message.turn === undefined || (typeof message.turn === "number" && Number.isInteger(message.turn))) &&
        (message.path === undefined || typeof message.path === "string") &&
        (message.line === undefined || (typeof message.line === "number" && Number.isInteger(message.line) && message.line >= 0)) &&
        (message.uri !== undefined || message.task_id !== undefined || message.turn !== undefined)
      );
    case "answerApproval":
      return typeof message.id === "number" && typeof message.answer === "string";
    case "reviewHunk":
      return typeof message.hunk_id === "string" && typeof message.accept === "boolean";
    case "openLink":
      return typeof message.href === "string";
    case "openTranscript":
      return typeof message.uri === "string";
    default:
      return false;
  }
}
