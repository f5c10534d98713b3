/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The Lich chat view's script (runs in the webview; bundled to dist/chat.js). It builds the DOM
 * itself, renders what the extension sends (src/chatProtocol.ts) and posts the user's actions
 * back. It renders incrementally: a streamed event touches only its own turn's last element, and
 * a whole thread is built once, in a fragment.
 */
import { renderMarkdown } from "../chatMarkdown";
import { textDiff, toolDiffs, type FileDiff } from "../chatDiff";
import type { LichEvent } from "../transcript";
import { ScrollFollower } from "./chatScroll";
import type { ApprovalView, EditedFile, HunkView, ModelChoice, Notice, ThreadSummary, ToExtension, ToolTargetView, ToolView, ToView, TurnOutcome, TurnView } from "../chatProtocol";

export interface ChatHost {
  post(message: ToExtension): void;
}

const TARGET_MAX_CHARS = 60;
const DETAIL_MAX_CHARS = 4000;
const MENTION_PATTERN = /(^|\s)@([^\s@]*)$/;
const MENTIONS_SHOWN_MAX = 12;
const QUEUED_SHOWN_CHARS = 80;
const PROGRESS_TICK_MS = 1000;
const ALLOW_ALWAYS = "Allow always";
/** The model picker's last entry: opens the config (or the setup, with none), where models are. */
const CONFIGURE_MODELS = "__configure__";

interface LiveTurn {
  section: HTMLElement;
  body: HTMLElement;
  /** The text segment being streamed into (undefined after a tool call). */
  segment?: { el: HTMLElement; text: string };
  tools: Map<string, HTMLDetailsElement>;
  /** Each started call's name and arguments: an edit's diff is drawn from them when it ends ok. */
  calls: Map<string, { name: string; args: unknown }>;
  taskId?: string;
  sawFinal: boolean;
  /** The turn's prompt: Retry sends it again. */
  prompt: string;
  /** The run's `error` event, shown once at the end with the outcome (not twice). */
  error?: string;
  /** Its `summary`: a provider failure in plain words, shown instead (the details folded). */
  errorSummary?: string;
  /** "Working… N s" until the first token or tool call. */
  progress?: { el: HTMLElement; timer: ReturnType<typeof setInterval> };
}

/** A message typed (or composed by Apply) while a turn runs: sent when the turn ends. */
interface QueuedMessage {
  id: number;
  prompt: string;
  uri?: string;
}

interface MentionState {
  start: number;
  end: number;
  id: number;
  items: string[];
  active: number;
}

/**
 * A tool call's target in a few words, from the server's `target` (tool events and lich.thread
 * carry it, computed once in the server's core): the file(s) and lines, the command, the URL or
 * the query. The view derives nothing from the call's arguments.
 */
export function toolTarget(target: unknown): string {
  if (!target || typeof target !== "object") {
    return "";
  }
  const t = target as ToolTargetView;
  const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim() ? value.trim() : undefined);
  const paths = Array.isArray(t.paths) ? t.paths.filter((p): p is string => typeof p === "string" && p !== "") : [];
  const path = paths.length > 1 ? paths.join(", ") : text(t.path);
  const query = text(t.query);
  if (query) {
    return clip(path ? `${query} in ${path}` : query, TARGET_MAX_CHARS);
  }
  if (path) {
    const lines = t.lines && typeof t.lines.start === "number" ? ` (lines ${t.lines.start}-${typeof t.lines.end === "number" ? t.lines.end : ""})` : "";
    return clip(path, TARGET_MAX_CHARS) + lines;
  }
  return clip(text(t.command) ?? text(t.url) ?? "", TARGET_MAX_CHARS);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function pretty(value: unknown): string {
  if (value === undefined || value === null) {
    return "";
  }
  if (typeof value === "string") {
    return clip(value, DETAIL_MAX_CHARS);
  }
  try {
    return clip(JSON.stringify(value, null, 2), DETAIL_MAX_CHARS);
  } catch {
    return String(value);
  }
}

/** The plain-words line for how a turn ended ("" when it simply answered). */
export function outcomeText(reason: string | null | undefined, error: string | null | undefined): string {
  switch (reason) {
    case "aborted":
      return "Stopped: the turn was cancelled.";
    case "budget":
      return "Stopped: the turn used all its model calls (max_turns).";
    case "error":
      return `The turn failed: ${error || "the provider or the server reported an error"}.`;
    default:
      return error ? `The turn failed: ${error}` : "";
  }
}

/** What "Allow always" remembers, in words (lich_core/approvals.py approval_key). */
export function allowAlwaysScope(tool: string, host: string | null | undefined): string {
  return host ? `for ${tool} on ${host}, in this workspace` : `for every ${tool} call, in this workspace`;
}

/** A failed tool's one-word outcome: refused (the policy or the user said no) or failed. */
function failureWord(error: string | undefined): string {
  return error && /^(approval_denied|capability_denied|denied|refused)\b/.test(error) ? "refused" : "failed";
}

export class ChatView {
  readonly log: HTMLElement;
  readonly input: HTMLTextAreaElement;
  readonly stopButton: HTMLButtonElement;
  readonly sendButton: HTMLButtonElement;
  readonly threadSelect: HTMLSelectElement;
  readonly newButton: HTMLButtonElement;
  readonly attachmentEl: HTMLElement;
  readonly mentionList: HTMLElement;
  readonly contextEl: HTMLElement;
  readonly queueEl: HTMLElement;
  readonly jumpButton: HTMLButtonElement;
  readonly modelSelect: HTMLSelectElement;
  /** The model picker's selected option, restored when "Configure models…" is chosen. */
  private pickedModel = 0;
  readonly scroll: ScrollFollower;
  private readonly queue: QueuedMessage[] = [];
  private nextQueueId = 1;
  private readonly doc: Document;
  private live: LiveTurn | undefined;
  private thread: string | undefined;
  private history: string[] = [];
  private historyIndex = -1;
  private draft = "";
  private nextMentionId = 1;
  private mention: MentionState | undefined;
  private running = false;
  private readonly approvals = new Map<number, HTMLElement>();
  private readonly hunkEls = new Map<string, HTMLElement>();
  private readonly hunkDecisions = new Map<string, "accepted" | "rejected">();
  /** Every pending hunk of the server's last listing (also other threads'): Accept all's count. */
  private listedHunks = new Set<string>();

  constructor(
    doc: Document,
    private readonly host: ChatHost,
  ) {
    this.doc = doc;
    const app = doc.getElementById("app") ?? doc.body;
    app.textContent = "";
    const header = this.el("div", "header");
    this.threadSelect = this.el("select", "threads") as HTMLSelectElement;
    this.threadSelect.title = "Threads";
    this.threadSelect.setAttribute("aria-label", "Thread");
    this.newButton = this.button("New thread", "new-thread");
    this.modelSelect = this.el("select", "models") as HTMLSelectElement;
    this.modelSelect.title = "Chat model";
    this.modelSelect.setAttribute("aria-label", "Chat model");
    header.append(this.threadSelect, this.modelSelect, this.newButton);
    this.log = this.el("div", "log");
    this.log.setAttribute("role", "log");
    this.log.setAttribute("aria-live", "polite");
    const footer = this.el("div", "composer");
    this.jumpButton = this.button("↓ Jump to latest", "jump");
    this.jumpButton.hidden = true;
    this.queueEl = this.el("ul", "queue");
    this.queueEl.setAttribute("aria-label", "Queued messages");
    this.queueEl.hidden = true;
    this.contextEl = this.el("div", "context");
    this.contextEl.hidden = true;
    this.attachmentEl = this.el("div", "attachment");
    this.attachmentEl.hidden = true;
    this.mentionList = this.el("ul", "mentions");
    this.mentionList.setAttribute("role", "listbox");
    this.mentionList.hidden = true;
    this.input = this.el("textarea", "input") as HTMLTextAreaElement;
    this.input.rows = 3;
    this.input.placeholder = "Ask Lich… (Enter sends, Shift+Enter new line, @ attaches a file)";
    this.input.setAttribute("aria-label", "Message");
    const buttons = this.el("div", "buttons");
    this.sendButton = this.button("Send", "send");
    this.stopButton = this.button("Stop", "stop");
    this.stopButton.hidden = true;
    buttons.append(this.sendButton, this.stopButton);
    footer.append(this.jumpButton, this.queueEl, this.contextEl, this.attachmentEl, this.mentionList, this.input, buttons);
    app.append(header, this.log, footer);
    this.scroll = new ScrollFollower(this.log, (away) => (this.jumpButton.hidden = !away));

    this.sendButton.addEventListener("click", () => this.send());
    this.stopButton.addEventListener("click", () => this.host.post({ type: "stop" }));
    this.newButton.addEventListener("click", () => {
      this.host.post({ type: "newThread" });
      this.input.focus();
    });
    this.jumpButton.addEventListener("click", () => this.scroll.jump());
    this.modelSelect.addEventListener("change", () => {
      const value = this.modelSelect.value;
      if (value === CONFIGURE_MODELS) {
        this.modelSelect.selectedIndex = this.pickedModel; // the picked model stays picked
        this.host.post({ type: "configureModels" });
      } else if (value) {
        this.pickedModel = this.modelSelect.selectedIndex;
        this.host.post({ type: "pickModel", name: value });
      }
    });
    this.queueEl.addEventListener("click", (event) => {
      const drop = (event.target as HTMLElement).closest<HTMLElement>("button.unqueue");
      if (drop) {
        this.unqueue(Number(drop.dataset.queued));
      }
    });
    this.threadSelect.addEventListener("change", () => {
      const value = this.threadSelect.value;
      if (value && value !== this.thread) {
        this.host.post({ type: "pickThread", thread: value });
      }
    });
    this.threadSelect.addEventListener("focus", () => this.host.post({ type: "listThreads" }));
    this.input.addEventListener("keydown", (event) => this.onKey(event));
    this.input.addEventListener("input", () => this.updateMention());
    this.log.addEventListener("click", (event) => this.onLogClick(event));
    this.mentionList.addEventListener("mousedown", (event) => {
      const item = (event.target as HTMLElement).closest("li");
      if (item?.dataset.index !== undefined) {
        event.preventDefault();
        this.acceptMention(Number(item.dataset.index));
      }
    });
  }

  // --- messages from the extension -----------------------------------------------------------

  handle(message: ToView): void {
    switch (message.type) {
      case "thread":
        this.showThread(message.thread, message.turns, message.running, message.history, message.notice);
        break;
      case "threads":
        this.showThreads(message.threads, message.current);
        break;
      case "turnStart":
        this.startTurn(message.prompt, message.attachment);
        break;
      case "event":
        this.onEvent(message.event);
        break;
      case "turnEnd":
        this.endTurn(message.outcome);
        break;
      case "notice":
        this.notice(message.notice);
        break;
      case "mentionsResult":
        this.showMentions(message.id, message.candidates);
        break;
      case "attachment":
        this.attachmentEl.hidden = !message.label;
        this.attachmentEl.textContent = "";
        if (message.label) {
          const drop = this.button("×", "drop");
          drop.title = "Do not attach";
          drop.addEventListener("click", () => {
            this.attachmentEl.hidden = true;
            this.host.post({ type: "dropAttachment" });
          });
          this.attachmentEl.append(this.text("span", `Attached: ${message.label}`), drop);
        }
        break;
      case "focusInput":
        this.input.focus();
        break;
      case "context":
        this.showContext(message.label);
        break;
      case "submit":
        this.submit(message.prompt, message.uri);
        break;
      case "models":
        this.showModels(message.current, message.models, message.configured);
        break;
      case "approval":
        this.showApproval(message.approval);
        break;
      case "approvalDone":
        this.approvalDone(message.id, message.answer, message.where);
        break;
      case "hunks":
        this.showHunks(message.hunks);
        break;
      case "hunkDecided":
        this.hunkDecisions.set(message.hunk_id, message.decision);
        this.markHunkDecided(message.hunk_id);
        break;
    }
  }

  // --- approvals, diffs, review hunks ----------------------------------------------------------

  private showApproval(approval: ApprovalView): void {
    this.approvals.get(approval.id)?.remove();
    const box = this.el("div", "approval");
    box.dataset.approval = String(approval.id);
    box.setAttribute("role", "alertdialog");
    const details = approval.details;
    if (details) {
      // From the server's data (the `approval` event), not from the question's text.
      const head = this.el("p", "approval-question");
      head.append(this.doc.createTextNode("Run "), this.text("span", details.tool, "approval-tool"));
      const where = details.host ? ` on ${details.host}` : "";
      const target = details.command ? "" : toolTarget(details.target);
      head.append(this.doc.createTextNode(`${target ? ` ${target}` : ""}${where}?`));
      box.append(head);
      if (details.command) {
        const pre = this.el("pre", "approval-command");
        pre.append(this.text("code", details.command));
        box.append(pre);
      }
      if (details.cwd) {
        box.append(this.text("p", `in ${details.cwd}`, "approval-cwd"));
      }
      if (details.what_will_run) {
        box.append(this.text("p", details.what_will_run, "approval-runs"));
      }
    } else {
      box.append(this.text("p", approval.message, "approval-question"));
    }
    const buttons = this.el("div", "approval-buttons");
    let always: HTMLElement | undefined;
    for (const action of approval.actions) {
      const button = this.button(action, action === "Deny" ? "approval-action deny" : action === ALLOW_ALWAYS ? "approval-action always" : "approval-action");
      button.dataset.approval = String(approval.id);
      button.dataset.answer = action;
      if (action === ALLOW_ALWAYS && details) {
        // Set apart, last (on screen and for Tab), naming what it will keep allowing.
        always = this.el("div", "approval-always");
        const scope = allowAlwaysScope(details.tool, details.host);
        button.title = `Allow now and from now on ${scope}`;
        always.append(button, this.text("span", scope, "approval-scope"));
      } else {
        buttons.append(button);
      }
    }
    if (always) {
      buttons.append(always);
    }
    box.append(buttons);
    this.approvals.set(approval.id, box);
    if (approval.inTurn && this.live) {
      this.stopProgress(this.live);
    }
    (approval.inTurn && this.live ? this.live.body : this.log).append(box);
    this.scrollToEnd();
  }

  private approvalDone(id: number, answer: string | undefined, where: "chat" | "dialog" | "gone"): void {
    const box = this.approvals.get(id);
    if (!box) {
      return;
    }
    this.approvals.delete(id);
    box.classList.add("answered");
    for (const button of box.querySelectorAll("button")) {
      (button as HTMLButtonElement).disabled = true;
      button.classList.toggle("chosen", button.getAttribute("data-answer") === answer);
    }
    const said = answer === undefined ? "No longer asked: the request was withdrawn." : where === "dialog" ? `Answered in the notification: ${answer}.` : `Answered: ${answer}.`;
    box.append(this.text("p", said, "approval-answer"));
  }

  /**
   * An edit's diff with its Open file link. `uri`: the file the server named (a review hunk);
   * without it the extension opens the file the server reported for the turn, and the diff's
   * path (the tool call's argument) only helps it choose.
   */
  private diffElement(diff: FileDiff, line?: number, uri?: string): HTMLElement {
    const box = this.el("div", "diff");
    const head = this.el("div", "diff-head");
    head.append(this.text("span", diff.path, "diff-path"));
    const open = this.text("a", "Open file", "open-file");
    open.setAttribute("href", "#");
    if (uri !== undefined) {
      open.dataset.uri = uri;
    } else {
      open.dataset.editPath = diff.path;
    }
    if (line !== undefined) {
      open.dataset.line = String(line);
    }
    head.append(open);
    const body = this.el("pre", "diff-body");
    for (const diffLine of diff.lines) {
      const kind = diffLine.kind === "-" ? "del" : diffLine.kind === "+" ? "ins" : "note";
      body.append(this.text("span", `${diffLine.kind === "@" ? "@@" : diffLine.kind} ${diffLine.text}\n`, kind));
    }
    if (diff.omitted > 0) {
      body.append(this.text("span", `… ${diff.omitted} more line${diff.omitted === 1 ? "" : "s"}\n`, "note"));
    }
    box.append(head, body);
    return box;
  }

  /** The diffs of a successful editing call, right after its collapsed line. */
  private appendToolDiffs(after: HTMLElement, name: string, args: unknown): void {
    let anchor: Element = after;
    for (const diff of toolDiffs(name, args)) {
      const el = this.diffElement(diff);
      anchor.after(el);
      anchor = el;
    }
  }

  private showHunks(hunks: HunkView[]): void {
    const listed = new Set(hunks.map((hunk) => hunk.hunk_id));
    this.listedHunks = listed;
    for (const id of this.hunkEls.keys()) {
      if (!listed.has(id)) {
        this.markHunkDecided(id);
      }
    }
    for (const hunk of hunks) {
      const shown = this.hunkEls.get(hunk.hunk_id);
      if (shown) {
        // Still pending (an Accept that failed): its buttons work again.
        shown.querySelectorAll("button").forEach((button) => ((button as HTMLButtonElement).disabled = false));
        continue;
      }
      // Task ids restart with the server: the newest turn of that task is the one.
      const sections = [...this.log.querySelectorAll<HTMLElement>("section.turn")].filter((s) => s.dataset.taskId === hunk.task_id);
      const body = sections[sections.length - 1]?.querySelector(".answer");
      if (!body) {
        continue; // a task of another thread or face: its hunks are in the editor
      }
      const box = this.el("div", "hunk");
      box.dataset.hunk = hunk.hunk_id;
      const head = this.el("div", "hunk-head");
      head.append(this.text("span", `Pending: ${hunk.summary || "change"}`, "hunk-summary"));
      const accept = this.button("Accept", "hunk-accept");
      const reject = this.button("Reject", "hunk-reject");
      accept.dataset.hunk = reject.dataset.hunk = hunk.hunk_id;
      head.append(accept, reject);
      box.append(head, this.diffElement(textDiff(`${hunk.path}:${hunk.start_line + 1}`, hunk.old_text, hunk.new_text), hunk.start_line, hunk.uri));
      this.hunkEls.set(hunk.hunk_id, box);
      body.append(box);
      // Each change is drawn once: the pending hunk (the exact old and new lines) stands for
      // the tool call's own diff of that file.
      for (const diff of body.querySelectorAll<HTMLElement>(":scope > .diff")) {
        if (diff.querySelector(".diff-path")?.textContent === hunk.path) {
          diff.hidden = true;
          diff.classList.add("superseded");
        }
      }
    }
    this.updateReviewBars();
    this.scrollToEnd();
  }

  private markHunkDecided(id: string): void {
    const box = this.hunkEls.get(id);
    if (!box || box.classList.contains("decided")) {
      return;
    }
    box.classList.add("decided");
    for (const button of box.querySelectorAll("button")) {
      button.remove();
    }
    const decision = this.hunkDecisions.get(id);
    const summary = box.querySelector(".hunk-summary");
    if (summary) {
      summary.textContent = decision === "accepted" ? "Accepted" : decision === "rejected" ? "Rejected" : "No longer pending (decided in the editor, or your edits replaced it)";
    }
    this.updateReviewBars();
  }

  /**
   * Accept all / Reject all, once, above the pending changes of the latest turn that has some.
   * They decide every pending change (lich.acceptAll / lich.rejectAll take no turn), so the count
   * is the server's whole listing, not only this turn's.
   */
  private updateReviewBars(): void {
    const bodies = [...this.log.querySelectorAll<HTMLElement>("section.turn .answer")].filter((body) => body.querySelector(".hunk:not(.decided)"));
    const host = bodies[bodies.length - 1];
    for (const bar of this.log.querySelectorAll<HTMLElement>(".review-all")) {
      if (bar.parentElement !== host) {
        bar.remove();
      }
    }
    const pending = [...this.listedHunks].filter((id) => !this.hunkDecisions.has(id)).length;
    if (!host || pending === 0) {
      return;
    }
    let bar = host.querySelector<HTMLElement>(":scope > .review-all");
    if (!bar) {
      bar = this.el("div", "review-all");
      const accept = this.button("Accept all", "review-accept-all");
      const reject = this.button("Reject all", "review-reject-all");
      accept.title = "Accept every pending change (lich.acceptAll)";
      reject.title = "Reject every pending change (lich.rejectAll)";
      bar.append(this.text("span", "", "review-count"), accept, reject);
      host.querySelector(".hunk")?.before(bar);
    }
    bar.querySelector(".review-count")!.textContent = `${pending} change${pending === 1 ? "" : "s"} pending`;
    // Listed again: whatever was clicked has been answered, so the buttons work again.
    bar.querySelectorAll("button").forEach((button) => ((button as HTMLButtonElement).disabled = false));
  }

  private showThread(thread: string | undefined, turns: TurnView[], running: boolean, history: string[], notice?: Notice): void {
    this.thread = thread;
    this.history = [...history];
    this.historyIndex = -1;
    this.live = undefined;
    this.approvals.clear();
    this.hunkEls.clear();
    const fragment = this.doc.createDocumentFragment();
    for (const turn of turns) {
      fragment.append(this.turnSection(turn));
    }
    this.log.textContent = "";
    if (turns.length === 0) {
      this.log.append(this.text("p", "Ask about this workspace: the conversation shows here, and a follow-up continues it.", "empty"));
    }
    this.log.append(fragment);
    if (running) {
      this.log.append(this.text("p", "A turn of this thread is running elsewhere; its answer shows when it ends.", "notice"));
    }
    if (notice) {
      this.notice(notice);
    }
    this.setRunning(false);
    // A thread opens at its latest turn.
    this.scroll.jump();
  }

  private showThreads(threads: ThreadSummary[], current: string | undefined): void {
    const select = this.threadSelect;
    select.textContent = "";
    const known = threads.some((t) => t.thread === current);
    if (!current || !known) {
      const option = this.doc.createElement("option");
      option.value = current ?? "";
      option.textContent = current ? `Thread ${current}` : "New thread";
      select.append(option);
    }
    for (const info of threads) {
      const option = this.doc.createElement("option");
      option.value = info.thread;
      const turns = info.turns !== undefined ? ` (${info.turns} turn${info.turns === 1 ? "" : "s"})` : "";
      option.textContent = `${clip(info.title || info.thread, 50)}${turns}${info.running ? " · running" : ""}`;
      select.append(option);
    }
    select.value = current ?? "";
  }

  private turnSection(turn: TurnView): HTMLElement {
    const { section, body } = this.turnShell(turn.prompt, undefined, turn.discarded ? undefined : turn.turn);
    if (turn.discarded) {
      section.classList.add("discarded");
      section.title = "Rewound: no longer part of the conversation";
    }
    if (turn.task_id) {
      section.dataset.taskId = turn.task_id;
    }
    section.dataset.turnNo = String(turn.turn);
    for (const tool of turn.tools ?? []) {
      const details = this.toolElement(tool);
      body.append(details);
      if (tool.ok === true) {
        this.appendToolDiffs(details, tool.name, tool.arguments);
      }
    }
    if (turn.final) {
      body.append(this.markdown(turn.final));
    }
    const outcome = outcomeText(turn.stopped_reason, turn.error);
    if (outcome) {
      const failed = turn.stopped_reason !== "aborted";
      body.append(this.text("p", outcome, failed ? "error" : "notice"));
      if (failed && !turn.discarded) {
        body.append(this.retryButton(turn.prompt));
      }
    }
    if (turn.edited && turn.edited.length > 0) {
      body.append(this.filesLine(turn.edited));
    } else if (turn.files && turn.files.length > 0) {
      body.append(this.filesLine(turn.files.map((file) => ({ path: file }))));
    }
    return section;
  }

  private turnShell(prompt: string, attachment: string | undefined, turn: number | undefined): { section: HTMLElement; body: HTMLElement } {
    const section = this.el("section", "turn");
    const head = this.el("div", "prompt");
    head.append(this.text("div", prompt, "prompt-text"));
    if (attachment) {
      head.append(this.text("div", `Attached: ${attachment}`, "prompt-attachment"));
    }
    section.append(head);
    const body = this.el("div", "answer");
    section.append(body);
    if (turn !== undefined) {
      this.setTurnNumber(section, turn);
    }
    return { section, body };
  }

  private setTurnNumber(section: HTMLElement, turn: number): void {
    section.dataset.turn = String(turn);
    const head = section.querySelector(".prompt");
    if (head && !head.querySelector("button.rewind")) {
      const rewind = this.button("Rewind to here", "rewind");
      rewind.title = "Take back this turn and every later one: their edits and the conversation (asks first)";
      rewind.dataset.turn = String(turn);
      head.append(rewind);
    }
  }

  /** "Changed:" and the files: links to the server's URIs (a file without one is only named). */
  private filesLine(files: (EditedFile | { path: string; uri?: undefined })[]): HTMLElement {
    const line = this.el("div", "files");
    line.append(this.text("span", "Changed: "));
    files.forEach((file, index) => {
      if (file.uri !== undefined) {
        const link = this.text("a", file.path, "file");
        link.setAttribute("href", "#");
        link.dataset.uri = file.uri;
        link.title = "Open file";
        line.append(link);
      } else {
        line.append(this.text("span", file.path, "file"));
      }
      if (index < files.length - 1) {
        line.append(this.doc.createTextNode(", "));
      }
    });
    return line;
  }

  private toolElement(tool: ToolView): HTMLDetailsElement {
    const details = this.el("details", "tool") as HTMLDetailsElement;
    const summary = this.el("summary");
    summary.append(this.text("span", tool.name, "tool-name"));
    const target = toolTarget(tool.target);
    if (target) {
      summary.append(this.text("span", target, "tool-target"));
    }
    if (tool.kind) {
      details.dataset.kind = tool.kind;
    }
    summary.append(this.text("span", "running…", "tool-outcome"));
    details.append(summary);
    details.append(this.text("div", "Arguments", "label"), this.text("pre", pretty(tool.arguments) || "(none)", "tool-args"));
    if (tool.id) {
      details.dataset.callId = tool.id;
    }
    if (tool.ok !== undefined) {
      this.finishTool(details, tool.ok, tool.result, tool.duration_ms);
    }
    return details;
  }

  private finishTool(details: HTMLDetailsElement, ok: boolean, result: string | undefined, durationMs: number | undefined): void {
    details.classList.add(ok ? "ok" : "failed");
    const outcome = details.querySelector(".tool-outcome");
    if (outcome) {
      outcome.textContent = ok ? "ok" : failureWord(result);
    }
    if (durationMs !== undefined) {
      details.querySelector("summary")?.append(this.text("span", durationMs >= 1000 ? `${(durationMs / 1000).toFixed(1)} s` : `${Math.round(durationMs)} ms`, "tool-duration"));
    }
    details.append(this.text("div", ok ? "Result" : "Error", "label"), this.text("pre", pretty(result) || "(empty)", "tool-result"));
  }

  private startTurn(prompt: string, attachment: string | undefined): void {
    this.log.querySelector(":scope > p.empty")?.remove();
    const { section, body } = this.turnShell(prompt, attachment, undefined);
    section.classList.add("live");
    this.log.append(section);
    this.live = { section, body, tools: new Map(), calls: new Map(), sawFinal: false, prompt };
    this.startProgress(this.live);
    this.setRunning(true);
    // Sending always shows the new message, wherever the user had scrolled to.
    this.scroll.jump();
  }

  /** "Working… N s" in the turn until its first token, tool call or question. */
  private startProgress(live: LiveTurn): void {
    const el = this.text("p", "Working… 0 s", "progress");
    const started = Date.now();
    const timer = setInterval(() => {
      el.textContent = `Working… ${Math.floor((Date.now() - started) / 1000)} s`;
    }, PROGRESS_TICK_MS);
    live.body.append(el);
    live.progress = { el, timer };
  }

  private stopProgress(live: LiveTurn): void {
    if (live.progress) {
      clearInterval(live.progress.timer);
      live.progress.el.remove();
      live.progress = undefined;
    }
  }

  private onEvent(event: LichEvent): void {
    const live = this.live;
    if (!live) {
      return;
    }
    const data = event.data ?? {};
    const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
    if (event.type === "text_delta" || event.type === "tool_call_start" || event.type === "final" || event.type === "error") {
      this.stopProgress(live);
    }
    switch (event.type) {
      case "run_start":
        live.taskId = str(event.task_id);
        if (live.taskId) {
          live.section.dataset.taskId = live.taskId;
        }
        break;
      case "text_delta": {
        const text = str(data.text) ?? "";
        if (!text) {
          return;
        }
        if (!live.segment) {
          const el = this.el("div", "markdown");
          live.body.append(el);
          live.segment = { el, text: "" };
        }
        live.segment.text += text;
        // Only this segment is re-rendered: earlier turns and tool lines are never touched.
        live.segment.el.innerHTML = renderMarkdown(live.segment.text);
        break;
      }
      case "llm_retry": {
        // Unlike an output channel, the view can take the failed attempt's partial text back.
        if (live.segment) {
          live.segment.el.remove();
          live.segment = undefined;
        }
        // In plain words: no provider names from the config (they are internal to the user).
        const next = data.action === "failover" ? "trying the next model" : "retrying";
        live.body.append(this.text("p", `The model did not answer (${str(data.kind) ?? "error"}): ${next}…`, "notice"));
        break;
      }
      case "tool_call_start": {
        live.segment = undefined;
        const id = str(data.call_id) ?? `call-${live.tools.size}`;
        const args = data.arguments !== undefined ? data.arguments : data.cut !== undefined ? "(arguments too large to show)" : undefined;
        const details = this.toolElement({ id, name: str(data.name) ?? "tool", arguments: args, kind: str(data.kind), target: data.target });
        live.tools.set(id, details);
        live.calls.set(id, { name: str(data.name) ?? "tool", args: data.arguments });
        live.body.append(details);
        break;
      }
      case "tool_call_end": {
        const id = str(data.call_id) ?? "";
        let details = live.tools.get(id);
        if (!details) {
          details = this.toolElement({ id, name: str(data.name) ?? "tool", kind: str(data.kind), target: data.target });
          live.body.append(details);
        }
        const ok = data.ok === true;
        const duration = typeof data.duration_ms === "number" ? data.duration_ms : undefined;
        this.finishTool(details, ok, ok ? str(data.summary) : (str(data.error) ?? str(data.summary)), duration);
        const call = live.calls.get(id);
        if (ok && call) {
          this.appendToolDiffs(details, call.name, call.args);
        }
        break;
      }
      case "final": {
        const text = str(data.text) ?? "";
        live.sawFinal = true;
        if (live.segment) {
          live.segment.text = text;
          live.segment.el.innerHTML = renderMarkdown(text);
        } else if (text) {
          const el = this.markdown(text);
          live.body.append(el);
          live.segment = { el, text };
        }
        break;
      }
      case "error":
        // Shown once, when the turn ends (with Retry), not here and again there.
        live.error = str(data.message) ?? str(data.kind) ?? "the run failed";
        live.errorSummary = str(data.summary);
        break;
      case "budget_exhausted":
        break; // run_end says it in words
      case "compress_start":
        live.body.append(this.text("p", "Compressing the conversation…", "notice"));
        break;
      case "plugin_warning":
        live.body.append(this.text("p", `Plugin warning: ${str(data.message) ?? ""}`, "notice"));
        break;
      default:
        return;
    }
    this.scrollToEnd();
  }

  private endTurn(outcome: TurnOutcome): void {
    const live = this.live;
    if (!live) {
      if (outcome.error) {
        this.notice({ level: "error", text: outcome.error });
      }
      this.setRunning(false);
      this.sendQueued();
      return;
    }
    this.live = undefined;
    this.stopProgress(live);
    live.section.classList.remove("live");
    if (!live.sawFinal && outcome.final) {
      live.body.append(this.markdown(outcome.final));
    }
    const error = outcome.error ?? (outcome.stopped_reason === "error" ? live.error : undefined);
    const plain = outcome.stopped_reason === "error" ? live.errorSummary : undefined;
    const words = plain ? `The turn failed: ${plain}` : error && !outcome.stopped_reason ? error : outcomeText(outcome.stopped_reason, error);
    if (words) {
      const failed = outcome.stopped_reason !== "aborted";
      live.body.append(this.text("p", words, failed ? "error" : "notice"));
      if (plain && error) {
        // The provider's own words, for whoever fixes the setup: folded under the plain ones.
        const details = this.el("details", "error-details");
        details.append(this.text("summary", "Details"), this.text("pre", error));
        live.body.append(details);
      }
      if (failed) {
        live.body.append(this.retryButton(live.prompt));
      }
    }
    for (const extra of [outcome.refused_message, outcome.review_message]) {
      if (extra) {
        live.body.append(this.text("p", extra, "notice"));
      }
    }
    for (const details of live.tools.values()) {
      if (!details.classList.contains("ok") && !details.classList.contains("failed")) {
        const label = details.querySelector(".tool-outcome");
        if (label) {
          label.textContent = "not finished";
        }
      }
    }
    if (outcome.edited && outcome.edited.length > 0) {
      live.body.append(this.filesLine(outcome.edited));
    }
    if (outcome.transcript) {
      const footer = this.el("div", "turn-footer");
      const link = this.text("a", "Transcript", "transcript");
      link.setAttribute("href", "#");
      link.dataset.transcript = outcome.transcript;
      link.title = "Open this task's transcript (markdown) in an editor tab";
      footer.append(link);
      live.body.append(footer);
    }
    if (outcome.turn !== undefined) {
      this.setTurnNumber(live.section, outcome.turn);
      live.section.dataset.turnNo = String(outcome.turn);
    }
    this.setRunning(false);
    this.scrollToEnd();
    this.sendQueued();
  }

  private retryButton(prompt: string): HTMLButtonElement {
    const retry = this.button("Retry", "retry");
    retry.title = "Send this message again";
    retry.dataset.prompt = prompt;
    return retry;
  }

  private notice(notice: Notice): void {
    this.log.append(this.text("p", notice.text, notice.level === "error" ? "error" : "notice"));
    this.scrollToEnd();
  }

  // --- user input -------------------------------------------------------------------------------

  send(): void {
    const prompt = this.input.value.trim();
    if (!prompt) {
      return;
    }
    this.submit(prompt);
    this.history = [prompt, ...this.history.filter((item) => item !== prompt)];
    this.historyIndex = -1;
    this.draft = "";
    this.input.value = "";
    this.attachmentEl.hidden = true;
    this.closeMentions();
  }

  /** Send a message now, or queue it behind the running turn. */
  submit(prompt: string, uri?: string): void {
    if (this.running) {
      this.queue.push({ id: this.nextQueueId++, prompt, ...(uri !== undefined ? { uri } : {}) });
      this.renderQueue();
      return;
    }
    this.host.post(uri !== undefined ? { type: "send", prompt, uri } : { type: "send", prompt });
  }

  /** The messages waiting for the running turn, in order. */
  get queued(): string[] {
    return this.queue.map((item) => item.prompt);
  }

  private unqueue(id: number): void {
    const index = this.queue.findIndex((item) => item.id === id);
    if (index >= 0) {
      this.queue.splice(index, 1);
      this.renderQueue();
      this.input.focus();
    }
  }

  /** The turn ended: the first queued message goes out (the rest wait for its turn). */
  private sendQueued(): void {
    const next = this.queue.shift();
    if (next) {
      this.renderQueue();
      this.submit(next.prompt, next.uri);
    }
  }

  private renderQueue(): void {
    this.queueEl.textContent = "";
    for (const item of this.queue) {
      const li = this.el("li", "queued");
      li.append(this.text("span", "Queued", "queued-label"), this.text("span", clip(item.prompt.replace(/\s+/g, " "), QUEUED_SHOWN_CHARS), "queued-text"));
      const drop = this.button("×", "unqueue");
      drop.title = "Remove this queued message";
      drop.setAttribute("aria-label", "Remove queued message");
      drop.dataset.queued = String(item.id);
      li.append(drop);
      this.queueEl.append(li);
    }
    this.queueEl.hidden = this.queue.length === 0;
  }

  /** The editor context chip: the active file (and selection) the next message carries. */
  private showContext(label: string | undefined): void {
    this.contextEl.textContent = "";
    this.contextEl.hidden = !label;
    if (!label) {
      return;
    }
    const chip = this.text("span", label, "context-label");
    chip.title = "The active file (and selection) is sent with your next message";
    const drop = this.button("×", "drop-context");
    drop.title = "Do not send the active file with the next messages";
    drop.setAttribute("aria-label", `Remove ${label} from the context`);
    drop.addEventListener("click", () => {
      this.contextEl.hidden = true;
      this.host.post({ type: "dropContext" });
      this.input.focus();
    });
    this.contextEl.append(this.text("span", "Context:", "context-prefix"), chip, drop);
  }

  private showModels(current: string | undefined, models: ModelChoice[], configured: boolean): void {
    const select = this.modelSelect;
    select.textContent = "";
    if (models.length === 0) {
      const none = this.doc.createElement("option");
      none.value = "";
      none.textContent = "No model configured";
      select.append(none);
    }
    for (const choice of models) {
      const option = this.doc.createElement("option");
      option.value = choice.name;
      option.textContent = choice.label;
      select.append(option);
    }
    const configure = this.doc.createElement("option");
    configure.value = CONFIGURE_MODELS;
    configure.textContent = configured ? "Configure models…" : "Set up a model…";
    select.append(configure);
    const index = models.findIndex((choice) => choice.name === current);
    select.selectedIndex = Math.max(index, 0);
    this.pickedModel = select.selectedIndex;
  }

  private onKey(event: KeyboardEvent): void {
    if (this.mention && !this.mentionList.hidden) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const count = this.mention.items.length;
        this.mention.active = (this.mention.active + (event.key === "ArrowDown" ? 1 : count - 1)) % count;
        this.renderMentionList();
        return;
      }
      if (event.key === "Enter" || event.key === "Tab") {
        event.preventDefault();
        this.acceptMention(this.mention.active);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        this.closeMentions();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
      return;
    }
    if (event.key === "Escape" && this.running) {
      // Escape in the input stops the running turn (what is typed stays).
      event.preventDefault();
      this.host.post({ type: "stop" });
      return;
    }
    const value = this.input.value;
    const caret = this.input.selectionStart ?? value.length;
    if (event.key === "ArrowUp" && !value.slice(0, caret).includes("\n") && this.historyIndex + 1 < this.history.length) {
      event.preventDefault();
      if (this.historyIndex === -1) {
        this.draft = value;
      }
      this.historyIndex++;
      this.setInput(this.history[this.historyIndex]);
    } else if (event.key === "ArrowDown" && this.historyIndex >= 0 && !value.slice(caret).includes("\n")) {
      event.preventDefault();
      this.historyIndex--;
      this.setInput(this.historyIndex === -1 ? this.draft : this.history[this.historyIndex]);
    }
  }

  private setInput(text: string): void {
    this.input.value = text;
    this.input.selectionStart = this.input.selectionEnd = text.length;
  }

  /** After each keystroke: an `@word` right before the caret asks the extension for paths. */
  private updateMention(): void {
    const caret = this.input.selectionStart ?? this.input.value.length;
    const before = this.input.value.slice(0, caret);
    const match = MENTION_PATTERN.exec(before);
    if (!match) {
      this.closeMentions();
      return;
    }
    const prefix = match[2];
    const id = this.nextMentionId++;
    this.mention = { start: caret - prefix.length, end: caret, id, items: this.mention?.items ?? [], active: 0 };
    this.host.post({ type: "mentions", id, prefix });
  }

  private showMentions(id: number, candidates: string[]): void {
    if (!this.mention || this.mention.id !== id) {
      return; // an answer to an older keystroke
    }
    this.mention.items = candidates.slice(0, MENTIONS_SHOWN_MAX);
    this.mention.active = 0;
    if (this.mention.items.length === 0) {
      this.mentionList.hidden = true;
      return;
    }
    this.renderMentionList();
  }

  private renderMentionList(): void {
    const state = this.mention!;
    this.mentionList.textContent = "";
    state.items.forEach((item, index) => {
      const li = this.text("li", item, index === state.active ? "active" : undefined);
      li.dataset.index = String(index);
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", String(index === state.active));
      this.mentionList.append(li);
    });
    this.mentionList.hidden = false;
  }

  private acceptMention(index: number): void {
    const state = this.mention;
    if (!state || !state.items[index]) {
      return;
    }
    const value = this.input.value;
    const chosen = state.items[index];
    const after = value.slice(state.end);
    const inserted = `${chosen}${after.startsWith(" ") ? "" : " "}`;
    this.input.value = `${value.slice(0, state.start)}${inserted}${after}`;
    const caret = state.start + inserted.length;
    this.input.selectionStart = this.input.selectionEnd = caret;
    this.closeMentions();
    this.input.focus();
  }

  private closeMentions(): void {
    this.mention = undefined;
    this.mentionList.hidden = true;
    this.mentionList.textContent = "";
  }

  private onLogClick(event: Event): void {
    const target = event.target as HTMLElement;
    const approval = target.closest("button.approval-action") as HTMLButtonElement | null;
    if (approval) {
      if (!approval.disabled && approval.dataset.answer) {
        // Greyed out at once; the extension's approvalDone says which answer counted.
        for (const button of approval.closest(".approval-buttons")?.querySelectorAll("button") ?? []) {
          (button as HTMLButtonElement).disabled = true;
        }
        this.host.post({ type: "answerApproval", id: Number(approval.dataset.approval), answer: approval.dataset.answer });
      }
      return;
    }
    const hunkButton = target.closest("button.hunk-accept, button.hunk-reject") as HTMLButtonElement | null;
    if (hunkButton) {
      if (!hunkButton.disabled && hunkButton.dataset.hunk) {
        for (const button of hunkButton.parentElement?.querySelectorAll("button") ?? []) {
          (button as HTMLButtonElement).disabled = true;
        }
        this.host.post({ type: "reviewHunk", hunk_id: hunkButton.dataset.hunk, accept: hunkButton.classList.contains("hunk-accept") });
      }
      return;
    }
    const code = target.closest("button.code-action") as HTMLButtonElement | null;
    if (code) {
      this.onCodeAction(code);
      return;
    }
    const retry = target.closest("button.retry") as HTMLButtonElement | null;
    if (retry) {
      if (retry.dataset.prompt) {
        this.submit(retry.dataset.prompt);
      }
      return;
    }
    const all = target.closest("button.review-accept-all, button.review-reject-all") as HTMLButtonElement | null;
    if (all) {
      for (const button of all.parentElement?.querySelectorAll("button") ?? []) {
        (button as HTMLButtonElement).disabled = true;
      }
      this.host.post({ type: "reviewAll", accept: all.classList.contains("review-accept-all") });
      return;
    }
    const confirm = target.closest("button.rewind-confirm, button.rewind-cancel") as HTMLButtonElement | null;
    if (confirm) {
      const box = confirm.closest(".rewind-question");
      const section = confirm.closest<HTMLElement>("section.turn");
      box?.remove();
      if (confirm.classList.contains("rewind-confirm") && !this.running && section?.dataset.turn) {
        this.host.post({ type: "rewind", turn: Number(section.dataset.turn) });
      } else {
        section?.querySelector<HTMLButtonElement>("button.rewind")?.focus();
      }
      return;
    }
    const rewind = target.closest("button.rewind") as HTMLButtonElement | null;
    if (rewind) {
      if (!this.running) {
        this.askRewind(rewind);
      }
      return;
    }
    const link = target.closest("a") as HTMLAnchorElement | null;
    if (link) {
      event.preventDefault();
      // The view opens nothing itself: it says what was clicked and the extension decides.
      if (link.dataset.transcript) {
        this.host.post({ type: "openTranscript", uri: link.dataset.transcript });
      } else if (link.dataset.link !== undefined) {
        this.host.post({ type: "openLink", href: link.dataset.link });
      } else if (link.dataset.uri !== undefined || link.dataset.editPath !== undefined) {
        this.host.post(this.openEditedMessage(link));
      }
    }
  }

  /** Rewind to here asks first, naming the turn by its prompt. */
  private askRewind(rewind: HTMLButtonElement): void {
    const section = rewind.closest<HTMLElement>("section.turn");
    if (!section || section.querySelector(".rewind-question")) {
      section?.querySelector<HTMLButtonElement>("button.rewind-confirm")?.focus();
      return;
    }
    const prompt = section.querySelector(".prompt-text")?.textContent ?? "";
    const box = this.el("div", "rewind-question");
    box.setAttribute("role", "alertdialog");
    box.append(
      this.text("p", `Rewind to before “${clip(prompt.replace(/\s+/g, " "), 120)}”? This turn and every later one are taken back, and the files they changed are put back as they were.`, "rewind-text"),
    );
    const buttons = this.el("div", "rewind-buttons");
    const yes = this.button("Rewind", "rewind-confirm");
    buttons.append(yes, this.button("Cancel", "rewind-cancel"));
    box.append(buttons);
    section.querySelector(".prompt")?.after(box);
    yes.focus();
  }

  /** A code block's Copy, Insert at cursor or Apply to file: the extension does the work. */
  private onCodeAction(button: HTMLButtonElement): void {
    const block = button.closest<HTMLElement>(".code-block");
    const code = block?.querySelector("pre code")?.textContent ?? "";
    if (button.classList.contains("code-copy")) {
      this.host.post({ type: "copyCode", code });
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    } else if (button.classList.contains("code-insert")) {
      this.host.post({ type: "insertCode", code });
    } else if (button.classList.contains("code-apply")) {
      const language = block?.dataset.lang;
      this.host.post(language ? { type: "applyCode", code, language } : { type: "applyCode", code });
    }
  }

  /** What an Open file / Changed: link asks for: the server's URI, or the edit of its turn. */
  private openEditedMessage(link: HTMLElement): ToExtension {
    const message: Extract<ToExtension, { type: "openEdited" }> = { type: "openEdited" };
    if (link.dataset.uri !== undefined) {
      message.uri = link.dataset.uri;
    } else {
      const section = link.closest<HTMLElement>("section.turn");
      if (section?.dataset.taskId) {
        message.task_id = section.dataset.taskId;
      }
      const turn = Number(section?.dataset.turnNo);
      if (section?.dataset.turnNo !== undefined && Number.isInteger(turn)) {
        message.turn = turn;
      }
      message.path = link.dataset.editPath;
    }
    const line = link.dataset.line !== undefined ? Number(link.dataset.line) : undefined;
    if (line !== undefined && Number.isInteger(line) && line >= 0) {
      message.line = line;
    }
    return message;
  }

  private setRunning(running: boolean): void {
    this.running = running;
    this.stopButton.hidden = !running;
    // While a turn runs a message is queued, not refused.
    this.sendButton.textContent = running ? "Queue" : "Send";
    this.sendButton.title = running ? "Send when the running turn ends" : "Send (Enter)";
    this.log.classList.toggle("running", running);
  }

  private scrollToEnd(): void {
    // New content: followed unless the user scrolled up to read (then "Jump to latest" shows).
    this.scroll.contentAdded();
  }

  // --- DOM helpers ------------------------------------------------------------------------------

  private el(tag: string, className?: string): HTMLElement {
    const el = this.doc.createElement(tag);
    if (className) {
      el.className = className;
    }
    return el;
  }

  private text(tag: string, text: string, className?: string): HTMLElement {
    const el = this.el(tag, className);
    el.textContent = text;
    return el;
  }

  private button(label: string, className: string): HTMLButtonElement {
    const button = this.el("button", className) as HTMLButtonElement;
    button.type = "button";
    button.textContent = label;
    return button;
  }

  private markdown(text: string): HTMLElement {
    const el = this.el("div", "markdown");
    el.innerHTML = renderMarkdown(text);
    return el;
  }
}

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** Start the view in the webview (not under the tests, which construct ChatView themselves). */
export function boot(): ChatView | undefined {
  if (typeof acquireVsCodeApi !== "function" || typeof document === "undefined") {
    return undefined;
  }
  const api = acquireVsCodeApi();
  const view = new ChatView(document, { post: (message) => api.postMessage(message) });
  window.addEventListener("message", (event: MessageEvent) => view.handle(event.data as ToView));
  api.postMessage({ type: "ready" } satisfies ToExtension);
  return view;
}

boot();
