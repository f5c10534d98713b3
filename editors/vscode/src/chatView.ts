/**
 * The extension's side of the Lich chat view: a conversation on one of the server's threads
 * (docs/conversations.md). `ChatSession` holds the logic and talks to the server only through
 * `ChatDeps.request` (tested without VS Code); `ChatViewProvider` is the webview view around it.
 *
 * Which events belong to the turn in the view: the server tags every `lich/event` with its
 * `task_id` and `thread`, and the view names its thread up front (`thread` to continue one,
 * `new_thread` with an id it chose to start one), so its turn adopts the first `run_start` of that
 * thread after its `lich.ask` went out, then follows that task id only.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { chatHtml, makeNonce } from "./chatHtml";
import { resolveChatLink } from "./chatLinks";
import { CHAT_VIEW_ID, isToExtension, type ApprovalDetails, type EditedFile, type HunkView, type ModelChoice, type Notice, type ToExtension, type ToView, type TurnOutcome, type TurnView } from "./chatProtocol";
import { ASK_COMMAND, trackedAsk, type AskArgs } from "./middleware";
import type { PromptHistory } from "./prompt";
import type { TaskTracker } from "./tasks";
import { askTranscript, eventTaskId, type LichEvent } from "./transcript";
import type { CommandResult } from "./protocol.generated";

export const THREAD_STATE_KEY = "lich.chatThread";
export const THREADS_COMMAND = "lich.threads";
export const THREAD_COMMAND = "lich.thread";
export const REWIND_COMMAND = "lich.rewind";
export const MENTIONS_COMMAND = "lich.mentions";
export const CANCEL_COMMAND = "lich.cancel";
export const REVIEW_LIST_COMMAND = "lich.reviewList";
export const ACCEPT_HUNK_COMMAND = "lich.acceptHunk";
export const REJECT_HUNK_COMMAND = "lich.rejectHunk";
export const STATUS_COMMAND = "lich.status";
export const ACCEPT_ALL_COMMAND = "lich.acceptAll";
export const REJECT_ALL_COMMAND = "lich.rejectAll";
export const APPLY_PATCH_COMMAND = "lich.applyPatch";
/** lich.ask's `origin` for a chat turn: the server sends no end-of-task notification for it. */
export const CHAT_ORIGIN = "chat";

export interface ChatDeps {
  /** One server command; rejects when the server is not running or answers with an error. */
  request<T>(command: string, args: Record<string, unknown>): Promise<T>;
  history: PromptHistory;
  tasks: TaskTracker;
  state: { get<T>(key: string): T | undefined; update(key: string, value: unknown): Thenable<void> };
  /**
   * Open a file in the editor, at a 0-based line when given. Only ever called with a file URI the
   * session decided on: a link checked by src/chatLinks.ts, or a file the server reported edited.
   */
  openFile(uri: string, line?: number): void;
  /** Open a web page outside VS Code (vscode.env.openExternal, which asks first). */
  openExternal(url: string): void;
  /** Say something in an information message (why a clicked link opened nothing). */
  inform(text: string): void;
  /** Open a task's transcript file (Lich: Open Task Transcript with that file). */
  openTranscript?(uri: string): void;
  /** Each finished lich.ask result (review mode: the extension shows the first pending hunk). */
  onAskResult?(result: unknown): void;
  /** Put text on the clipboard (a code block's Copy). */
  copyText?(text: string): Thenable<void>;
  /** Insert text at the active editor's cursor, as a normal (undoable) edit; false: no editor. */
  insertText?(text: string): Thenable<boolean>;
  /** Open the user's config (the model picker's "Configure models…"). */
  configureModels?(): void;
  /** The model picker's "Set up a model…" (none is configured): the first-run setup. */
  setUpModel?(): void;
}

/** The active editor's file (and selection) the next message carries unless the user removes it. */
export interface EditorContext {
  uri: string;
  range?: unknown;
  label: string;
}

export interface Attachment {
  label: string;
  uri: string;
  range?: unknown;
}

interface LiveAsk {
  thread?: string;
  taskId?: string;
  stopRequested: boolean;
  /** The turn's approval questions as data (its `approval` events), by question text: the
   * showMessageRequest that follows each has that text as its message. */
  asked: Map<string, ApprovalDetails>;
}

/** An approval question shown in the view: `answer` settles when the user answers it there. */
export interface ChatApproval {
  readonly id: number;
  readonly answer: Promise<string>;
  /** Whether a view showed it (else only the dialog can answer). */
  readonly shown: boolean;
  /** The question is answered (in the view or the dialog) or gone: the view greys it out. */
  settle(answer: string | undefined, where: "chat" | "dialog" | "gone"): void;
}

interface PendingApproval {
  message: string;
  actions: string[];
  details?: ApprovalDetails;
  resolve(answer: string): void;
}

/** lich.thread's answer (its generated type), with the turns as the view reads them. */
type ThreadAnswer = Partial<Omit<CommandResult<"lich.thread">, "turns">> & { turns?: TurnView[] };

/** A fresh thread id for `lich.ask {new_thread}`: sortable by time like the server's own ids. */
export function newThreadId(now: Date = new Date(), random: () => number = Math.random): string {
  const pad = (n: number): string => String(n).padStart(2, "0");
  const day = `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}`;
  const time = `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  const suffix = Math.floor(random() * 0xffffff)
    .toString(16)
    .padStart(6, "0");
  return `${day}-${time}-vs${suffix}`;
}

/** An error as the user should read it: the server's message without the JSON-RPC wrapping. */
export function plainError(err: unknown): string {
  const message = err instanceof Error ? err.message : typeof err === "string" ? err : JSON.stringify(err);
  if (/connection (got disposed|is closed)|pending response rejected|client is not running/i.test(message)) {
    return "The language server stopped before the turn ended; it restarts by itself and the thread is reloaded.";
  }
  return message.replace(/^Request \S+ failed with message: /, "");
}

/** Whether a code block is a hashline patch (`@@ PATH` first): Apply hands it to lich.applyPatch. */
export function isHashlinePatch(code: string): boolean {
  const first = code.split("\n").find((line) => line.trim() !== "");
  return first !== undefined && /^@@ \S/.test(first);
}

/** The message Apply to file sends for a code block that is not a patch: the agent edits the file. */
export function applyPrompt(code: string, language: string | undefined, label: string): string {
  const fence = code.includes("```") ? "~~~" : "```";
  return `Apply this code to ${label}, changing only what it covers:\n\n${fence}${language ?? ""}\n${code}\n${fence}`;
}

/** A rewind's outcome in words (no thread ids): the files restored, and the ones that were not. */
export function rewindNotice(answer: Partial<CommandResult<"lich.rewind">> | undefined, turn: number, prompt: string | undefined): Notice {
  if (!answer || answer.ok === false || answer.error) {
    const why = answer?.error || answer?.message || "the server gave no answer";
    return { level: "error", text: `Rewind failed: ${why.replace(/^lich(\.rewind)?: /, "")}` };
  }
  const count = Array.isArray(answer.rewound) ? answer.rewound.length : 1;
  const parts = [`Rewound to before ${prompt ? quoted(prompt, 60) : `turn ${turn}`}${count > 1 ? ` (${count} turns taken back)` : ""}`];
  const files = Array.isArray(answer.files) ? answer.files : [];
  const restored = files.filter((f) => f.outcome === "undone" || f.outcome === "rebased").map((f) => f.path);
  if (restored.length > 0) {
    parts.push(`restored ${restored.join(", ")}`);
  }
  for (const file of files.filter((f) => f.outcome === "refused" || f.outcome === "failed")) {
    parts.push(`not restored: ${file.path}${file.reason ? ` (${file.reason.replace(/^[\w.]+: /, "")})` : ""}`);
  }
  for (const item of Array.isArray(answer.not_restored) ? answer.not_restored : []) {
    parts.push(`not restored: ${item.files.join(", ")} (${item.reason})`);
  }
  const problems = parts.some((part) => part.startsWith("not restored"));
  return { level: problems ? "error" : "info", text: `${parts.join("; ")}.` };
}

/** lich.status's `models` as the picker's choices (entries of another shape are skipped). */
export function modelChoices(value: unknown): ModelChoice[] {
  if (!Array.isArray(value)) {
    return [];
  }
  const choices: ModelChoice[] = [];
  for (const item of value) {
    const { name, kind, model } = (item ?? {}) as Record<string, unknown>;
    if (typeof name === "string" && name) {
      const runs = [kind, model].filter((part) => typeof part === "string" && part).join("/");
      choices.push({ name, label: runs ? `${name} (${runs})` : name });
    }
  }
  return choices;
}

/** The view's summary of a lich.ask result. */
export function askOutcome(result: unknown): TurnOutcome {
  if (!result || typeof result !== "object") {
    return { error: "The server gave no answer (the request was dismissed)." };
  }
  // The generated type of lich.ask's answer; each field is still checked as it is read.
  const r = result as Partial<Record<keyof CommandResult<"lich.ask">, unknown>>;
  const str = (value: unknown): string | undefined => (typeof value === "string" && value ? value : undefined);
  return {
    stopped_reason: str(r.stopped_reason),
    final: str(r.final),
    error: str(r.error),
    edited: Array.isArray(r.edited) ? r.edited.filter((e): e is string => typeof e === "string").map(editedFile) : undefined,
    review_message: str(r.review_message),
    refused_message: str(r.refused_message),
    transcript: askTranscript(result),
    // The thread's number of this turn, as the server counts them (lich.thread's `turn`).
    turn: typeof r.turn === "number" ? r.turn : undefined,
  };
}

/** A file URI from the server as the workspace-relative path the view shows (and opens). */
export function displayPath(uri: string): string {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  try {
    const parsed = vscode.Uri.parse(uri);
    if (root && parsed.scheme === "file" && parsed.path.startsWith(`${root.path}/`)) {
      return parsed.path.slice(root.path.length + 1);
    }
    return parsed.scheme === "file" ? parsed.path : uri;
  } catch {
    return uri;
  }
}

/** A file URI the server reported as edited, with the path the view shows for it. */
export function editedFile(uri: string): EditedFile {
  return { path: displayPath(uri), uri };
}

/** A path the server wrote in a thread's turn (`files`: root-relative, or absolute outside the root) as a URI. */
export function serverFileUri(file: string): string | undefined {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (path.isAbsolute(file)) {
    return vscode.Uri.file(file).toString();
  }
  return root ? vscode.Uri.joinPath(root, ...file.split("/").filter((part) => part !== "")).toString() : undefined;
}

/** The workspace folders on disk: where links in the chat may lead. */
function workspaceRoots(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((folder) => folder.uri.scheme === "file").map((folder) => folder.uri.fsPath);
}

/** Model text in a message: one line, cut short. */
function quoted(text: string, max = 80): string {
  const line = text.replace(/\s+/g, " ").trim();
  return `"${line.length > max ? `${line.slice(0, max - 1)}…` : line}"`;
}

/**
 * The edited file "Open file" opens: among the files the server reported for the turn, the one
 * the tool call's own path names (resolved against the root as the tools resolve it), else the
 * only one. Undefined when the turn wrote several and the call's path names none of them.
 */
export function chooseEdited(reported: readonly string[], hint: string | undefined): string | undefined {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (hint && root && root.scheme === "file") {
    const named = path.resolve(root.fsPath, hint);
    const match = reported.find((uri) => {
      try {
        const parsed = vscode.Uri.parse(uri);
        return parsed.scheme === "file" && path.resolve(parsed.fsPath) === named;
      } catch {
        return false;
      }
    });
    if (match) {
      return match;
    }
  }
  return reported.length === 1 ? reported[0] : undefined;
}

export class ChatSession {
  thread: string | undefined;
  private live: LiveAsk | undefined;
  private attachment: Attachment | undefined;
  /** The provider picked in the header for the next turns (lich.ask `model`); none: the chain. */
  private model: string | undefined;
  /** Whether lich.status named a configured model, as the picker last showed. */
  private modelsConfigured = true;
  private editorContext: EditorContext | undefined;
  /** The file whose context chip the user removed: it stays off until another file is active. */
  private contextDropped: string | undefined;
  /** The prompts of the thread's turns, by number: a rewind's notice names the turn it took back. */
  private readonly turnPrompts = new Map<number, string>();
  private poster: ((message: ToView) => void) | undefined;
  private focusWhenReady = false;
  private readonly approvals = new Map<number, PendingApproval>();
  private nextApprovalId = 1;
  /** The view was last sent pending hunks: an empty listing must reach it to grey them out. */
  private hunksListed = false;
  /** The transcript files this session's turns named: the only ones the view may ask to open. */
  private readonly transcripts = new Set<string>();
  /**
   * The files the server reported edited (lich.ask's `edited`, lich.thread's `files`, review
   * hunks): by `task:<id>` and `turn:<thread>:<n>`, and all of them. "Open file" opens only these.
   */
  private readonly edits = new Map<string, string[]>();
  private readonly editedUris = new Set<string>();

  constructor(private readonly deps: ChatDeps) {
    this.thread = deps.state.get<string>(THREAD_STATE_KEY) || undefined;
  }

  get running(): boolean {
    return this.live !== undefined;
  }

  /** The view is up (its script said `ready`): `post` reaches it until `detach`. */
  attach(post: (message: ToView) => void): void {
    this.poster = post;
  }

  detach(): void {
    this.poster = undefined;
  }

  private post(message: ToView): void {
    this.poster?.(message);
  }

  async onMessage(message: unknown): Promise<void> {
    if (!isToExtension(message)) {
      return;
    }
    const m: ToExtension = message;
    switch (m.type) {
      case "ready":
        await this.reload();
        void this.listThreads();
        if (this.attachment) {
          this.post({ type: "attachment", label: this.attachment.label });
        }
        this.postContext();
        void this.sendModels();
        if (this.focusWhenReady) {
          this.focusWhenReady = false;
          this.post({ type: "focusInput" });
        }
        return;
      case "send":
        await this.send(m.prompt, m.uri !== undefined ? { uri: m.uri } : {});
        return;
      case "dropContext":
        this.contextDropped = this.editorContext?.uri;
        return;
      case "reviewAll":
        await this.reviewAll(m.accept);
        return;
      case "copyCode":
        await this.deps.copyText?.(m.code);
        return;
      case "insertCode":
        if (this.deps.insertText && !(await this.deps.insertText(m.code))) {
          this.post({ type: "notice", notice: { level: "error", text: "Insert at cursor needs an open editor: click into the file first, then Insert again." } });
        }
        return;
      case "applyCode":
        await this.applyCode(m.code, m.language);
        return;
      case "pickModel":
        this.model = m.name;
        await this.sendModels();
        return;
      case "configureModels":
        if (this.modelsConfigured || !this.deps.setUpModel) {
          this.deps.configureModels?.();
        } else {
          this.deps.setUpModel();
        }
        return;
      case "stop":
        await this.stop();
        return;
      case "rewind":
        await this.rewind(m.turn);
        return;
      case "newThread":
        await this.newThread();
        return;
      case "pickThread":
        await this.pickThread(m.thread);
        return;
      case "listThreads":
        await this.listThreads();
        return;
      case "mentions":
        await this.mentions(m.id, m.prefix);
        return;
      case "openLink":
        await this.openLink(m.href);
        return;
      case "openEdited":
        await this.openEdited(m);
        return;
      case "openTranscript":
        if (this.transcripts.has(m.uri)) {
          this.deps.openTranscript?.(m.uri);
        }
        return;
      case "dropAttachment":
        this.attachment = undefined;
        return;
      case "answerApproval":
        this.approvals.get(m.id)?.resolve(m.answer);
        return;
      case "reviewHunk":
        await this.reviewHunk(m.hunk_id, m.accept);
        return;
    }
  }

  /**
   * Show an approval question of the server in the view: in the running turn when a tool call of
   * its task is waiting (the question names the tool), else at the end of the log. The caller
   * races `answer` with the dialog and calls `settle` with whichever answered.
   */
  askApproval(message: string, actions: string[]): ChatApproval {
    const id = this.nextApprovalId++;
    let resolve: (answer: string) => void = () => undefined;
    const answer = new Promise<string>((done) => (resolve = done));
    // The running turn's `approval` event said this question (its data, matched by the request's
    // message): shown in that turn, from the data. Anything else goes at the end of the log.
    const details = this.live?.asked.get(message);
    this.live?.asked.delete(message);
    this.approvals.set(id, { message, actions, resolve, details });
    const inTurn = details !== undefined;
    const shown = this.poster !== undefined;
    this.post({ type: "approval", approval: { id, message, actions, inTurn, ...(details ? { details } : {}) } });
    return {
      id,
      answer,
      shown,
      settle: (given, where) => {
        if (this.approvals.delete(id)) {
          this.post({ type: "approvalDone", id, answer: given, where });
        }
      },
    };
  }

  /** Accept or Reject one hunk from the view (lich.acceptHunk / lich.rejectHunk). */
  async reviewHunk(hunkId: string, accept: boolean): Promise<void> {
    try {
      const answer = await this.deps.request<{ ok?: boolean; error?: string }>(accept ? ACCEPT_HUNK_COMMAND : REJECT_HUNK_COMMAND, { hunk_id: hunkId });
      if (answer?.ok === false) {
        this.post({ type: "notice", notice: { level: "error", text: answer.error || `Could not ${accept ? "accept" : "reject"} the change.` } });
      } else {
        this.post({ type: "hunkDecided", hunk_id: hunkId, decision: accept ? "accepted" : "rejected" });
      }
    } catch (err) {
      this.post({ type: "notice", notice: { level: "error", text: `Could not ${accept ? "accept" : "reject"} the change: ${plainError(err)}` } });
    }
    await this.refreshHunks();
  }

  /**
   * Send the view every pending review hunk (lich.reviewList): it shows each in the turn of the
   * task that proposed it and greys out the ones that are no longer pending.
   */
  async refreshHunks(): Promise<void> {
    if (!this.poster) {
      return;
    }
    let listed: unknown[];
    try {
      const answer = await this.deps.request<{ hunks?: unknown }>(REVIEW_LIST_COMMAND, {});
      listed = Array.isArray(answer?.hunks) ? answer.hunks : [];
    } catch {
      return; // the server is away: the hunks went with it, the next listing says so
    }
    const hunks = listed.flatMap((raw): HunkView[] => {
      const h = raw as Record<string, unknown>;
      if (typeof h.hunk_id !== "string" || typeof h.task_id !== "string" || typeof h.uri !== "string") {
        return [];
      }
      this.rememberEdits(`task:${h.task_id}`, [h.uri]);
      const text = (value: unknown): string => (typeof value === "string" ? value : "");
      return [
        {
          hunk_id: h.hunk_id,
          task_id: h.task_id,
          uri: h.uri,
          path: displayPath(h.uri),
          start_line: typeof h.start_line === "number" ? h.start_line : 0,
          old_text: text(h.old_text),
          new_text: text(h.new_text),
          summary: text(h.summary),
        },
      ];
    });
    if (hunks.length === 0 && !this.hunksListed) {
      return; // nothing pending and nothing shown: spare the view
    }
    this.hunksListed = hunks.length > 0;
    this.post({ type: "hunks", hunks });
  }

  private rememberEdits(key: string, uris: readonly string[]): void {
    const known = this.edits.get(key) ?? [];
    for (const uri of uris) {
      if (!known.includes(uri)) {
        known.push(uri);
      }
      this.editedUris.add(uri);
    }
    this.edits.set(key, known);
  }

  /** A turn of lich.thread with the files it wrote as the server's URIs (remembered for Open file). */
  private withEdits(turn: TurnView): TurnView {
    const files = Array.isArray(turn.files) ? turn.files.filter((f): f is string => typeof f === "string") : [];
    const uris = files.map(serverFileUri).filter((uri): uri is string => uri !== undefined);
    if (turn.task_id) {
      this.rememberEdits(`task:${turn.task_id}`, uris);
    }
    if (this.thread && typeof turn.turn === "number") {
      this.rememberEdits(`turn:${this.thread}:${turn.turn}`, uris);
    }
    return uris.length > 0 ? { ...turn, edited: uris.map(editedFile) } : turn;
  }

  /**
   * A link in the model's text was clicked. The view only says which; what opens is decided here
   * (src/chatLinks.ts): web pages outside VS Code, workspace files in the editor, nothing else.
   */
  async openLink(href: string): Promise<void> {
    const decision = await resolveChatLink(href, workspaceRoots());
    switch (decision.kind) {
      case "external":
        this.deps.openExternal(decision.url);
        return;
      case "file":
        this.deps.openFile(vscode.Uri.file(decision.path).toString(), decision.line);
        return;
      case "refused":
        this.deps.inform(`Lich: the link ${quoted(href)} in the chat was not opened: ${decision.reason}.`);
        return;
    }
  }

  /**
   * "Open file" of an edit, a "Changed:" entry or a review hunk: opens a file the server reported
   * edited, never a path from the model's text (a tool call's `path` only picks among them).
   */
  async openEdited(m: Extract<ToExtension, { type: "openEdited" }>): Promise<void> {
    if (m.uri !== undefined) {
      if (this.editedUris.has(m.uri)) {
        this.deps.openFile(m.uri, m.line);
      } else {
        this.deps.inform(`Lich: ${quoted(m.uri)} was not opened: the server did not report it as a file the agent edited.`);
      }
      return;
    }
    let reported = [...(m.task_id !== undefined ? (this.edits.get(`task:${m.task_id}`) ?? []) : [])];
    if (reported.length === 0 && m.turn !== undefined && this.thread) {
      reported = [...(this.edits.get(`turn:${this.thread}:${m.turn}`) ?? [])];
    }
    if (reported.length === 0 && m.task_id !== undefined) {
      reported = await this.editsOfRunningTask(m.task_id);
    }
    const chosen = chooseEdited(reported, m.path);
    if (chosen) {
      this.deps.openFile(chosen, m.line);
    } else if (reported.length === 0) {
      this.deps.inform("Lich: the server has not reported a file written by this turn (yet), so nothing was opened.");
    } else {
      const names = reported.map((uri) => displayPath(uri)).join(", ");
      this.deps.inform(`Lich: the edit names ${quoted(m.path ?? "")}, which is not one of the files the server reported for this turn (${names}); nothing was opened.`);
    }
  }

  /**
   * The files a task wrote so far, while it runs (lich.ask's `edited` comes at its end): its undo
   * journal entry in lich.status and its pending review hunks, both from the server.
   */
  private async editsOfRunningTask(taskId: string): Promise<string[]> {
    const found: string[] = [];
    try {
      const status = await this.deps.request<{ undoable_tasks?: unknown }>(STATUS_COMMAND, {});
      const tasks = Array.isArray(status?.undoable_tasks) ? (status.undoable_tasks as Record<string, unknown>[]) : [];
      for (const task of tasks) {
        if (task?.task_id === taskId && Array.isArray(task.files)) {
          found.push(...task.files.filter((f): f is string => typeof f === "string").flatMap((f) => serverFileUri(f) ?? []));
        }
      }
    } catch {
      // the server is away: nothing reported
    }
    try {
      const review = await this.deps.request<{ hunks?: unknown }>(REVIEW_LIST_COMMAND, {});
      for (const hunk of Array.isArray(review?.hunks) ? (review.hunks as Record<string, unknown>[]) : []) {
        if (hunk?.task_id === taskId && typeof hunk.uri === "string") {
          found.push(hunk.uri);
        }
      }
    } catch {
      // as above
    }
    const unique = [...new Set(found)];
    for (const uri of unique) {
      this.editedUris.add(uri);
    }
    return unique;
  }

  /** Focus the input now, or as soon as the view's script is up. */
  focusInput(): void {
    if (this.poster) {
      this.post({ type: "focusInput" });
    } else {
      this.focusWhenReady = true;
    }
  }

  /** Attach a file or selection to the next message (Ask About Selection, code actions). */
  setAttachment(attachment: Attachment | undefined): void {
    this.attachment = attachment;
    this.post({ type: "attachment", label: attachment?.label });
  }

  private async setThread(thread: string | undefined): Promise<void> {
    this.thread = thread;
    await this.deps.state.update(THREAD_STATE_KEY, thread ?? "");
  }

  /** One message of the conversation: a lich.ask on the current thread (a new one when none). */
  async send(prompt: string, extra: AskArgs = {}): Promise<unknown> {
    const text = prompt.trim();
    if (!text) {
      return undefined;
    }
    if (this.live) {
      this.post({ type: "notice", notice: { level: "error", text: "A turn is still running: Stop it or wait for its answer." } });
      return undefined;
    }
    // A chat turn ends in the chat: the server sends no end-of-task notification for it.
    const args: AskArgs = { ...extra, prompt: text, origin: CHAT_ORIGIN };
    if (this.model !== undefined) {
      args.model = this.model;
    }
    const attachment = this.attachment;
    this.attachment = undefined;
    // What the message is about: a `uri` of the caller (Apply to file), else an explicit
    // attachment (Ask About Selection), else the editor context unless its chip was removed.
    const context = this.currentContext();
    const about = attachment ?? context;
    if (about && args.uri === undefined) {
      args.uri = about.uri;
      if (about.range !== undefined) {
        args.range = about.range;
      }
    }
    if (args.thread === undefined && args.new_thread === undefined) {
      if (this.thread) {
        args.thread = this.thread;
      } else {
        args.new_thread = newThreadId();
      }
    }
    const named = args.thread ?? args.new_thread;
    const live: LiveAsk = { thread: typeof named === "string" ? named : undefined, stopRequested: false, asked: new Map() };
    this.live = live;
    void this.deps.history.add(text);
    this.post({ type: "turnStart", prompt: text, attachment: attachment?.label ?? (args.uri === context?.uri ? context?.label : undefined) });
    this.post({ type: "attachment" });
    let result: unknown;
    let outcome: TurnOutcome;
    try {
      result = await trackedAsk(this.deps.tasks, args, (sent) => this.deps.request<unknown>(ASK_COMMAND, sent));
      outcome = askOutcome(result);
      const thread = (result as { thread?: unknown } | undefined)?.thread;
      if (typeof thread === "string" && thread) {
        await this.setThread(thread);
      }
    } catch (err) {
      outcome = { error: plainError(err) };
    } finally {
      this.live = undefined;
    }
    const reported = (outcome.edited ?? []).map((file) => file.uri);
    const taskId = typeof (result as { task_id?: unknown } | undefined)?.task_id === "string" ? (result as { task_id: string }).task_id : live.taskId;
    if (taskId) {
      this.rememberEdits(`task:${taskId}`, reported);
    }
    if (this.thread && outcome.turn !== undefined) {
      this.rememberEdits(`turn:${this.thread}:${outcome.turn}`, reported);
      this.turnPrompts.set(outcome.turn, text);
    }
    if (outcome.transcript) {
      this.transcripts.add(outcome.transcript);
    }
    this.post({ type: "turnEnd", outcome });
    this.deps.onAskResult?.(result);
    void this.listThreads();
    void this.sendModels(); // a config edited meanwhile may have changed the model
    await this.refreshHunks();
    return result;
  }

  /** A `lich/event` from the server: forwarded when it belongs to the view's running turn. */
  onEvent(event: LichEvent): void {
    const live = this.live;
    const id = eventTaskId(event);
    if (!live || !id) {
      return;
    }
    if (live.taskId === undefined) {
      if (event.type !== "run_start" || (live.thread !== undefined && event.thread !== undefined && event.thread !== live.thread)) {
        return;
      }
      live.taskId = id;
      if (!this.thread && event.thread) {
        void this.setThread(event.thread);
      }
      if (live.stopRequested) {
        void this.stop();
      }
    } else if (live.taskId !== id) {
      return;
    }
    if (event.type === "approval" && typeof event.data?.question === "string") {
      live.asked.set(event.data.question, event.data as unknown as ApprovalDetails);
    }
    this.post({ type: "event", event });
  }

  async stop(): Promise<void> {
    const live = this.live;
    if (!live) {
      return;
    }
    if (live.taskId === undefined) {
      live.stopRequested = true; // cancelled as soon as the server names the task
      return;
    }
    try {
      await this.deps.request(CANCEL_COMMAND, { task_id: live.taskId });
    } catch (err) {
      this.post({ type: "notice", notice: { level: "error", text: `Could not stop the turn: ${plainError(err)}` } });
    }
  }

  async rewind(turn: number): Promise<void> {
    if (!this.thread || this.live) {
      return;
    }
    let notice: Notice;
    try {
      const answer = await this.deps.request<Partial<CommandResult<"lich.rewind">>>(REWIND_COMMAND, { thread: this.thread, turn });
      notice = rewindNotice(answer, turn, this.turnPrompts.get(turn));
    } catch (err) {
      notice = { level: "error", text: `Rewind failed: ${plainError(err)}` };
    }
    await this.reload(notice);
    void this.listThreads();
  }

  async newThread(): Promise<void> {
    if (this.live) {
      this.post({ type: "notice", notice: { level: "error", text: "A turn is still running: Stop it or wait before starting a new thread." } });
      return;
    }
    await this.setThread(undefined);
    await this.reload();
    void this.listThreads();
  }

  async pickThread(thread: string): Promise<void> {
    if (this.live) {
      this.post({ type: "notice", notice: { level: "error", text: "A turn is still running: Stop it or wait before switching threads." } });
      void this.listThreads();
      return;
    }
    await this.setThread(thread);
    await this.reload();
  }

  /** Show the current thread as the server has it (after opening, a rewind, a server restart). */
  async reload(notice?: Notice): Promise<void> {
    if (!this.poster) {
      return;
    }
    await this.loadThread(notice);
    // The thread was drawn anew: questions still waiting and the pending hunks go back in.
    for (const [id, pending] of this.approvals) {
      this.post({ type: "approval", approval: { id, message: pending.message, actions: pending.actions, inTurn: false, ...(pending.details ? { details: pending.details } : {}) } });
    }
    await this.refreshHunks();
  }

  private async loadThread(notice?: Notice): Promise<void> {
    const history = this.deps.history.list();
    if (!this.thread) {
      this.post({ type: "thread", turns: [], running: false, history, notice });
      return;
    }
    try {
      const answer = await this.deps.request<ThreadAnswer>(THREAD_COMMAND, { thread: this.thread });
      const turns = (answer?.turns ?? []).map((turn) => this.withEdits(turn));
      this.turnPrompts.clear();
      for (const turn of turns) {
        this.turnPrompts.set(turn.turn, turn.prompt);
      }
      this.post({ type: "thread", thread: this.thread, title: answer?.title, turns, running: answer?.running === true && !this.live, history, notice });
    } catch (err) {
      const text = plainError(err);
      if (/unknown_thread/.test(text)) {
        const gone = this.thread;
        await this.setThread(undefined);
        this.post({ type: "thread", turns: [], running: false, history, notice: { level: "info", text: `Thread ${gone} is gone (pruned or deleted); your next message starts a new one.` } });
      } else {
        this.post({ type: "thread", thread: this.thread, turns: [], running: false, history, notice: { level: "error", text: `Could not load the thread: ${text}` } });
      }
    }
  }

  /** The editor's active file (and selection) changed: the chip follows it. */
  setEditorContext(context: EditorContext | undefined): void {
    if (context?.uri !== this.contextDropped) {
      this.contextDropped = undefined; // another file: attached again, as a new context
    }
    const shownBefore = this.currentContext()?.label;
    this.editorContext = context;
    if (this.currentContext()?.label !== shownBefore) {
      this.postContext(); // not at every cursor move: only when the chip would change
    }
  }

  /** The editor context the next message carries: undefined when none or removed by the user. */
  currentContext(): EditorContext | undefined {
    const context = this.editorContext;
    return context && context.uri !== this.contextDropped ? context : undefined;
  }

  private postContext(): void {
    this.post({ type: "context", label: this.currentContext()?.label });
  }

  /**
   * Apply to file of a code block, through the server's edit path (never a raw write here): a
   * hashline patch goes to lich.applyPatch; other code becomes a chat turn asking the agent to
   * apply it to the active file, whose edit is reviewable (review mode) and undoable.
   */
  async applyCode(code: string, language: string | undefined): Promise<void> {
    if (isHashlinePatch(code)) {
      try {
        const result = await this.deps.request<Partial<CommandResult<"lich.applyPatch">>>(APPLY_PATCH_COMMAND, { patch: code, label: "Lich: apply from the chat" });
        const edited = (result?.output ?? "").split("\n").filter((line) => line.startsWith("Edited ")).join("; ");
        this.post({
          type: "notice",
          notice: result?.ok === false ? { level: "error", text: `The patch was not applied: ${result.error ?? "the server refused it"}` } : { level: "info", text: edited || "Patch applied." },
        });
      } catch (err) {
        this.post({ type: "notice", notice: { level: "error", text: `The patch was not applied: ${plainError(err)}` } });
      }
      return;
    }
    const target = this.editorContext;
    if (!target) {
      this.post({ type: "notice", notice: { level: "error", text: "Apply to file needs the file to change: open it in the editor, then Apply again." } });
      return;
    }
    const label = target.label.replace(/:\d+(-\d+)?$/, "");
    this.post({ type: "submit", prompt: applyPrompt(code, language, label), uri: target.uri, label });
  }

  /** Accept all / Reject all of the chat: every pending change (lich.acceptAll / lich.rejectAll). */
  async reviewAll(accept: boolean): Promise<void> {
    try {
      const answer = await this.deps.request<{ ok?: boolean; error?: string; message?: string }>(accept ? ACCEPT_ALL_COMMAND : REJECT_ALL_COMMAND, {});
      if (answer?.ok === false) {
        this.post({ type: "notice", notice: { level: "error", text: answer.error || `Could not ${accept ? "accept" : "reject"} the changes.` } });
      }
    } catch (err) {
      this.post({ type: "notice", notice: { level: "error", text: `Could not ${accept ? "accept" : "reject"} the changes: ${plainError(err)}` } });
    }
    await this.refreshHunks();
  }

  /** The header's model picker: the configured providers lich.status lists, the picked one (or
   * the chain's first) current. */
  async sendModels(): Promise<void> {
    try {
      const status = await this.deps.request<{ provider?: { name?: unknown; configured?: unknown }; models?: unknown }>(STATUS_COMMAND, {});
      const models = modelChoices(status?.models);
      if (this.model !== undefined && !models.some((m) => m.name === this.model)) {
        this.model = undefined; // no longer configured: the next turns run on the chain again
      }
      const first = typeof status?.provider?.name === "string" ? status.provider.name : undefined;
      const configured = status?.provider?.configured !== false && models.length > 0;
      this.modelsConfigured = configured;
      this.post({ type: "models", current: this.model ?? first, models: configured ? models : [], configured });
    } catch {
      this.post({ type: "models", models: [], configured: false });
    }
  }

  async listThreads(): Promise<void> {
    if (!this.poster) {
      return;
    }
    try {
      const answer = await this.deps.request<{ threads?: unknown }>(THREADS_COMMAND, {});
      const threads = Array.isArray(answer?.threads) ? answer.threads : [];
      this.post({ type: "threads", threads, current: this.thread });
    } catch {
      this.post({ type: "threads", threads: [], current: this.thread });
    }
  }

  async mentions(id: number, prefix: string): Promise<void> {
    let candidates: string[] = [];
    try {
      const answer = await this.deps.request<{ candidates?: unknown }>(MENTIONS_COMMAND, { prefix });
      candidates = Array.isArray(answer?.candidates) ? answer.candidates.filter((c): c is string => typeof c === "string") : [];
    } catch {
      // No completion is better than an error popup while typing.
    }
    if ("problems".startsWith(prefix) && !candidates.includes("problems")) {
      candidates = [...candidates, "problems"];
    }
    this.post({ type: "mentionsResult", id, candidates });
  }
}

/** The part of a text editor the chat's context reads (vscode.TextEditor has it). */
export interface EditorLike {
  document: { uri: { scheme: string; toString(): string }; isUntitled?: boolean };
  selection: { isEmpty: boolean; start: { line: number; character: number }; end: { line: number; character: number } };
}

/**
 * The chat's editor context for `editor`: its file, and its selection when there is one (an LSP
 * range: VS Code's positions are UTF-16 like the server's). Only files on disk: the server reads
 * them; output panels and untitled buffers are not attached.
 */
export function editorContext(editor: EditorLike | undefined): EditorContext | undefined {
  if (!editor || editor.document.uri.scheme !== "file" || editor.document.isUntitled) {
    return undefined;
  }
  const uri = editor.document.uri.toString();
  let name = uri;
  try {
    name = vscode.workspace.asRelativePath(vscode.Uri.parse(uri), false);
  } catch {
    // keep the URI
  }
  const selection = editor.selection;
  if (selection.isEmpty) {
    return { uri, label: name };
  }
  const range = { start: { line: selection.start.line, character: selection.start.character }, end: { line: selection.end.line, character: selection.end.character } };
  const first = selection.start.line + 1;
  // A selection ending at column 0 does not include that line.
  const last = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
  return { uri, range, label: first === last ? `${name}:${first}` : `${name}:${first}-${last}` };
}

/** The webview view "Lich" in the side bar around a ChatSession. */
export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    readonly session: ChatSession,
  ) {
    // The active file and selection ride along with the next message (a removable chip).
    const follow = (): void => session.setEditorContext(editorContext(vscode.window.activeTextEditor));
    const window = vscode.window as Partial<typeof vscode.window>;
    for (const subscribe of [window.onDidChangeActiveTextEditor, window.onDidChangeTextEditorSelection]) {
      if (subscribe) {
        this.disposables.push((subscribe as vscode.Event<unknown>)(follow));
      }
    }
    follow();
  }

  get visible(): boolean {
    return this.view?.visible === true;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = chatHtml({
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "chat.js")).toString(),
      nonce: makeNonce(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: unknown) => {
        if ((message as { type?: unknown })?.type === "ready") {
          this.session.attach((out) => void view.webview.postMessage(out));
        }
        void this.session.onMessage(message);
      }),
      view.onDidDispose(() => {
        this.session.detach();
        this.view = undefined;
      }),
    );
  }

  /** Lich: Open Chat: reveal the view and put the cursor in its input. */
  async open(): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    this.view?.show(false);
    this.session.focusInput();
  }

  dispose(): void {
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }
}
