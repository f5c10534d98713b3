/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The Lich chat view's script (runs in the webview; bundled to dist/chat.js). It builds the DOM
 * itself, renders what the extension sends (src/chatProtocol.ts) and posts the user's actions
 * back. It renders incrementally: a streamed event touches only its own turn's last element, and
 * a whole thread is built once, in a fragment.
 */
import { renderMarkdown } from "../chatMarkdown";
import type { LichEvent } from "../transcript";
import type { Notice, ThreadSummary, ToExtension, ToolView, ToView, TurnOutcome, TurnView } from "../chatProtocol";

export interface ChatHost {
  post(message: ToExtension): void;
}

const TARGET_MAX_CHARS = 60;
const DETAIL_MAX_CHARS = 4000;
const MENTION_PATTERN = /(^|\s)@([^\s@]*)$/;
const MENTIONS_SHOWN_MAX = 12;

interface LiveTurn {
  section: HTMLElement;
  body: HTMLElement;
  /** The text segment being streamed into (undefined after a tool call). */
  segment?: { el: HTMLElement; text: string };
  tools: Map<string, HTMLDetailsElement>;
  taskId?: string;
  sawFinal: boolean;
}

interface MentionState {
  start: number;
  end: number;
  id: number;
  items: string[];
  active: number;
}

/** A tool call's target in a few words: the path, command, pattern or URL it works on. */
export function toolTarget(args: unknown): string {
  if (typeof args === "string") {
    // lich.thread sends the arguments as JSON text cut to 300 characters: parse it when whole,
    // else pick the first path-like field out of the text.
    try {
      return toolTarget(JSON.parse(args));
    } catch {
      const field = /"(path|file|uri|command|cmd|pattern|query|url)":\s*"((?:[^"\\]|\\.)*)"/.exec(args);
      const patched = /@@ ([^\s\\]+)/.exec(args);
      return field ? clip(field[2], TARGET_MAX_CHARS) : patched ? clip(patched[1], TARGET_MAX_CHARS) : "";
    }
  }
  if (!args || typeof args !== "object") {
    return "";
  }
  const record = args as Record<string, unknown>;
  for (const key of ["path", "file", "uri", "command", "cmd", "pattern", "query", "url", "name"]) {
    const value = record[key];
    if (typeof value === "string" && value.trim()) {
      return clip(value.trim(), TARGET_MAX_CHARS);
    }
  }
  for (const key of ["input", "patch", "text"]) {
    const value = record[key];
    // A hashline patch names its files on `@@ PATH` lines.
    const files = typeof value === "string" ? [...value.matchAll(/^@@ (\S+)/gm)].map((m) => m[1]) : [];
    if (files.length > 0) {
      return clip([...new Set(files)].join(", "), TARGET_MAX_CHARS);
    }
  }
  return "";
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
  private readonly doc: Document;
  private live: LiveTurn | undefined;
  private thread: string | undefined;
  private history: string[] = [];
  private historyIndex = -1;
  private draft = "";
  private nextMentionId = 1;
  private mention: MentionState | undefined;
  private running = false;

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
    header.append(this.threadSelect, this.newButton);
    this.log = this.el("div", "log");
    this.log.setAttribute("role", "log");
    this.log.setAttribute("aria-live", "polite");
    const footer = this.el("div", "composer");
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
    footer.append(this.attachmentEl, this.mentionList, this.input, buttons);
    app.append(header, this.log, footer);

    this.sendButton.addEventListener("click", () => this.send());
    this.stopButton.addEventListener("click", () => this.host.post({ type: "stop" }));
    this.newButton.addEventListener("click", () => this.host.post({ type: "newThread" }));
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
    }
  }

  private showThread(thread: string | undefined, turns: TurnView[], running: boolean, history: string[], notice?: Notice): void {
    this.thread = thread;
    this.history = [...history];
    this.historyIndex = -1;
    this.live = undefined;
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
    this.scrollToEnd();
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
    for (const tool of turn.tools ?? []) {
      body.append(this.toolElement(tool));
    }
    if (turn.final) {
      body.append(this.markdown(turn.final));
    }
    const outcome = outcomeText(turn.stopped_reason, turn.error);
    if (outcome) {
      body.append(this.text("p", outcome, turn.stopped_reason === "aborted" ? "notice" : "error"));
    }
    if (turn.files && turn.files.length > 0) {
      body.append(this.filesLine(turn.files));
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
      rewind.title = "Take back this turn and every later one: their edits and the conversation";
      rewind.dataset.turn = String(turn);
      head.append(rewind);
    }
  }

  private filesLine(files: string[]): HTMLElement {
    const line = this.el("div", "files");
    line.append(this.text("span", "Changed: "));
    files.forEach((file, index) => {
      const link = this.text("a", file, "file");
      link.setAttribute("href", "#");
      link.dataset.path = file;
      link.title = "Open file";
      line.append(link);
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
    const target = toolTarget(tool.arguments);
    if (target) {
      summary.append(this.text("span", target, "tool-target"));
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
    this.live = { section, body, tools: new Map(), sawFinal: false };
    this.setRunning(true);
    this.scrollToEnd();
  }

  private onEvent(event: LichEvent): void {
    const live = this.live;
    if (!live) {
      return;
    }
    const data = event.data ?? {};
    const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
    switch (event.type) {
      case "run_start":
        live.taskId = str(event.task_id);
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
        const provider = str(data.provider) ?? "the provider";
        const next = data.action === "failover" ? `trying ${str(data.next_provider) ?? "the next provider"}` : "retrying";
        live.body.append(this.text("p", `${provider} failed (${str(data.kind) ?? "error"}): ${next}.`, "notice"));
        break;
      }
      case "tool_call_start": {
        live.segment = undefined;
        const id = str(data.call_id) ?? `call-${live.tools.size}`;
        const args = data.arguments !== undefined ? data.arguments : data.cut !== undefined ? "(arguments too large to show)" : undefined;
        const details = this.toolElement({ id, name: str(data.name) ?? "tool", arguments: args });
        live.tools.set(id, details);
        live.body.append(details);
        break;
      }
      case "tool_call_end": {
        const id = str(data.call_id) ?? "";
        let details = live.tools.get(id);
        if (!details) {
          details = this.toolElement({ id, name: str(data.name) ?? "tool" });
          live.body.append(details);
        }
        const ok = data.ok === true;
        const duration = typeof data.duration_ms === "number" ? data.duration_ms : undefined;
        this.finishTool(details, ok, ok ? str(data.summary) : (str(data.error) ?? str(data.summary)), duration);
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
        live.body.append(this.text("p", `Error: ${str(data.message) ?? str(data.kind) ?? "the run failed"}`, "error"));
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
      return;
    }
    this.live = undefined;
    live.section.classList.remove("live");
    if (!live.sawFinal && outcome.final) {
      live.body.append(this.markdown(outcome.final));
    }
    const words = outcome.error && !outcome.stopped_reason ? outcome.error : outcomeText(outcome.stopped_reason, outcome.error);
    if (words) {
      live.body.append(this.text("p", words, outcome.stopped_reason === "aborted" ? "notice" : "error"));
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
    if (outcome.turn !== undefined) {
      this.setTurnNumber(live.section, outcome.turn);
    }
    this.setRunning(false);
    this.scrollToEnd();
  }

  private notice(notice: Notice): void {
    this.log.append(this.text("p", notice.text, notice.level === "error" ? "error" : "notice"));
    this.scrollToEnd();
  }

  // --- user input -------------------------------------------------------------------------------

  send(): void {
    const prompt = this.input.value.trim();
    if (!prompt || this.running) {
      return;
    }
    this.host.post({ type: "send", prompt });
    this.history = [prompt, ...this.history.filter((item) => item !== prompt)];
    this.historyIndex = -1;
    this.draft = "";
    this.input.value = "";
    this.attachmentEl.hidden = true;
    this.closeMentions();
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
    const rewind = target.closest("button.rewind") as HTMLButtonElement | null;
    if (rewind) {
      if (!this.running) {
        this.host.post({ type: "rewind", turn: Number(rewind.dataset.turn) });
      }
      return;
    }
    const link = target.closest("a") as HTMLAnchorElement | null;
    if (link) {
      event.preventDefault();
      if (link.dataset.path) {
        this.host.post({ type: "openFile", path: link.dataset.path });
      } else if (link.dataset.href) {
        this.host.post({ type: "openLink", href: link.dataset.href });
      }
    }
  }

  private setRunning(running: boolean): void {
    this.running = running;
    this.stopButton.hidden = !running;
    this.sendButton.disabled = running;
    this.log.classList.toggle("running", running);
  }

  private scrollToEnd(): void {
    // Follow the stream only when the user has not scrolled up to read.
    const log = this.log;
    if (log.scrollHeight - log.scrollTop - log.clientHeight < 80) {
      log.scrollTop = log.scrollHeight;
    }
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
