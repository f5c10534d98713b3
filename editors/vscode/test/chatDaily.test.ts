// @vitest-environment happy-dom
/**
 * The chat as a daily driver (issue #45), in the view's script: markdown through markdown-it and
 * highlight.js, code blocks with Copy / Insert / Apply, following the conversation (and "Jump to
 * latest"), queued messages, Escape, Retry, the editor context chip, progress before the first
 * token, the approval card, Accept all / Reject all with each diff drawn once, Rewind asking
 * first, the model picker.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { HunkView, ToExtension } from "../src/chatProtocol";
import { renderMarkdown } from "../src/chatMarkdown";
import { ChatView } from "../src/webview/chat";
import { ScrollFollower } from "../src/webview/chatScroll";
import type { LichEvent } from "../src/transcript";

let posted: ToExtension[];
let view: ChatView;

function ev(type: string, data: Record<string, unknown> = {}, task = "t1"): LichEvent {
  return { type, task_id: task, thread: "th1", data };
}

function key(target: HTMLElement, name: string, init: KeyboardEventInit = {}): KeyboardEvent {
  const event = new KeyboardEvent("keydown", { key: name, bubbles: true, cancelable: true, ...init });
  target.dispatchEvent(event);
  return event;
}

function type(text: string): void {
  view.input.value = text;
  view.input.selectionStart = view.input.selectionEnd = text.length;
  view.input.dispatchEvent(new Event("input", { bubbles: true }));
}

function dom(html: string): HTMLElement {
  const el = document.createElement("div");
  el.innerHTML = html;
  return el;
}

/** Give an element a scroll geometry (happy-dom lays nothing out): content height, viewport. */
function geometry(el: HTMLElement, scrollHeight: number, clientHeight: number): { setHeight(h: number): void } {
  let height = scrollHeight;
  Object.defineProperty(el, "scrollHeight", { configurable: true, get: () => height });
  Object.defineProperty(el, "clientHeight", { configurable: true, get: () => clientHeight });
  return { setHeight: (h) => (height = h) };
}

function userScrolls(el: HTMLElement, top: number): void {
  el.scrollTop = top;
  el.dispatchEvent(new Event("scroll"));
}

beforeEach(() => {
  document.body.innerHTML = '<div id="app"></div>';
  posted = [];
  view = new ChatView(document, { post: (message) => posted.push(message) });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("markdown with markdown-it and highlight.js", () => {
  it("renders tables, italics, strikethrough, blockquotes, rules and nested ordered lists", () => {
    const el = dom(renderMarkdown("| a | b |\n|---|---|\n| 1 | *x* |\n\n~~old~~ _new_\n\n> quoted\n\n---\n\n1. one\n   1. inner\n   2. inner two\n2. two"));
    expect([...el.querySelectorAll("th")].map((th) => th.textContent)).toEqual(["a", "b"]);
    expect(el.querySelector("td em")!.textContent).toBe("x");
    expect(el.querySelector("s")!.textContent).toBe("old");
    expect(el.querySelector("p em")!.textContent).toBe("new");
    expect(el.querySelector("blockquote")!.textContent!.trim()).toBe("quoted");
    expect(el.querySelector("hr")).not.toBeNull();
    // The nested list is its own <ol> inside the first item: numbering does not restart outside.
    const outer = el.querySelector(":scope > ol")!;
    expect(outer.children).toHaveLength(2);
    expect([...outer.querySelectorAll(":scope > li > ol > li")].map((li) => li.textContent)).toEqual(["inner", "inner two"]);
  });

  it("aligns table columns with classes: no inline style for the CSP to refuse", () => {
    const html = renderMarkdown("| n | name |\n|--:|:-:|\n| 1 | a |");
    expect(html).not.toContain("style=");
    const el = dom(html);
    expect([...el.querySelectorAll("td")].map((td) => td.className)).toEqual(["align-right", "align-center"]);
  });

  it("highlights code in a known language and keeps its text exact; unknown languages stay plain", () => {
    const el = dom(renderMarkdown('```python\ndef greet(name):\n    return f"Hello, {name}!"  # <b>\n```'));
    const code = el.querySelector("pre code")!;
    expect(code.classList.contains("language-python")).toBe(true);
    expect(code.querySelector(".hljs-keyword")!.textContent).toBe("def");
    expect(code.querySelector(".hljs-comment")!.textContent).toBe("# <b>");
    expect(code.textContent).toBe('def greet(name):\n    return f"Hello, {name}!"  # <b>');
    expect(el.querySelector("b")).toBeNull();
    const plain = dom(renderMarkdown("```klingon\nqapla' <i>\n```")).querySelector("pre code")!;
    expect(plain.children).toHaveLength(0);
    expect(plain.textContent).toBe("qapla' <i>");
  });

  it("gives every code block Copy, Insert at cursor and Apply to file, with no inline script", () => {
    const html = renderMarkdown("```ts\nconst x = 1;\n```");
    expect(html).not.toMatch(/\son\w+=|javascript:|<script|style=/i);
    const el = dom(html);
    expect([...el.querySelectorAll(".code-toolbar button")].map((b) => b.textContent)).toEqual(["Copy", "Insert at cursor", "Apply to file"]);
    expect(el.querySelector(".code-lang")!.textContent).toBe("ts");
  });
});

describe("code block buttons", () => {
  it("post the block's exact text (and language) for the extension to copy, insert or apply", () => {
    vi.useFakeTimers();
    view.handle({ type: "turnStart", prompt: "show me" });
    view.handle({ type: "event", event: ev("run_start") });
    view.handle({ type: "event", event: ev("final", { text: "Here:\n\n```python\nprint('<hi>')\nx = 1\n```" }) });
    const block = view.log.querySelector<HTMLElement>(".code-block")!;
    const copy = block.querySelector<HTMLButtonElement>("button.code-copy")!;
    copy.click();
    expect(copy.textContent).toBe("Copied");
    vi.runAllTimers();
    expect(copy.textContent).toBe("Copy");
    block.querySelector<HTMLButtonElement>("button.code-insert")!.click();
    block.querySelector<HTMLButtonElement>("button.code-apply")!.click();
    const code = "print('<hi>')\nx = 1";
    expect(posted).toEqual([
      { type: "copyCode", code },
      { type: "insertCode", code },
      { type: "applyCode", code, language: "python" },
    ]);
  });
});

describe("following the conversation", () => {
  it("ScrollFollower: follows while at the bottom, stops when the user scrolls up, jumps back on request", () => {
    const el = document.createElement("div");
    const box = geometry(el, 1000, 200);
    const away: boolean[] = [];
    const follower = new ScrollFollower(el, (value) => away.push(value));
    follower.jump();
    expect(el.scrollTop).toBe(1000);
    // A long chunk arrives (taller than any "near the bottom" slack): still followed.
    box.setHeight(1600);
    follower.contentAdded();
    expect(el.scrollTop).toBe(1600);
    userScrolls(el, 300);
    expect(follower.isFollowing).toBe(false);
    box.setHeight(2000);
    follower.contentAdded();
    expect(el.scrollTop).toBe(300); // left where the user reads
    expect(away[away.length - 1]).toBe(true);
    userScrolls(el, 2000 - 200); // back at the bottom by hand: follows again
    expect(follower.isFollowing).toBe(true);
    expect(away[away.length - 1]).toBe(false);
  });

  it("sending always shows the new message; streaming after scrolling up shows Jump to latest, which jumps", () => {
    const box = geometry(view.log, 5000, 300);
    view.handle({ type: "thread", thread: "th1", turns: [{ turn: 1, prompt: "old", final: "long answer" }], running: false, history: [] });
    // A thread opens at its latest turn.
    expect(view.log.scrollTop).toBe(5000);
    userScrolls(view.log, 100);
    box.setHeight(5400);
    view.handle({ type: "turnStart", prompt: "new question" });
    expect(view.log.scrollTop).toBe(5400);
    expect(view.jumpButton.hidden).toBe(true);
    view.handle({ type: "event", event: ev("run_start") });
    userScrolls(view.log, 1000);
    expect(view.jumpButton.hidden).toBe(false);
    box.setHeight(6000);
    view.handle({ type: "event", event: ev("text_delta", { text: "more and more" }) });
    expect(view.log.scrollTop).toBe(1000);
    view.jumpButton.click();
    expect(view.log.scrollTop).toBe(6000);
    expect(view.jumpButton.hidden).toBe(true);
    box.setHeight(6500);
    view.handle({ type: "event", event: ev("text_delta", { text: " and more" }) });
    expect(view.log.scrollTop).toBe(6500);
  });
});

describe("queued messages, Escape, Retry", () => {
  it("queues messages sent while a turn runs, shows them removable, and sends the next when the turn ends", () => {
    view.handle({ type: "turnStart", prompt: "first" });
    expect(view.sendButton.textContent).toBe("Queue");
    type("second");
    key(view.input, "Enter");
    type("third");
    view.sendButton.click();
    type("fourth");
    key(view.input, "Enter");
    expect(posted).toEqual([]);
    expect(view.queueEl.hidden).toBe(false);
    const items = [...view.queueEl.querySelectorAll("li")];
    expect(items.map((li) => li.querySelector(".queued-text")!.textContent)).toEqual(["second", "third", "fourth"]);
    // Removed before it went out.
    items[1].querySelector<HTMLButtonElement>("button.unqueue")!.click();
    expect(view.queued).toEqual(["second", "fourth"]);
    view.handle({ type: "turnEnd", outcome: { final: "done", stopped_reason: "final" } });
    expect(posted).toEqual([{ type: "send", prompt: "second" }]);
    expect(view.queued).toEqual(["fourth"]);
    // "second" runs now; "fourth" waits for it.
    view.handle({ type: "turnStart", prompt: "second" });
    view.handle({ type: "turnEnd", outcome: { final: "ok", stopped_reason: "final" } });
    expect(posted).toEqual([
      { type: "send", prompt: "second" },
      { type: "send", prompt: "fourth" },
    ]);
    expect(view.queueEl.hidden).toBe(true);
  });

  it("Escape in the input stops the running turn, and does nothing when none runs", () => {
    const idle = key(view.input, "Escape");
    expect(idle.defaultPrevented).toBe(false);
    view.handle({ type: "turnStart", prompt: "slow" });
    type("keep this draft");
    const pressed = key(view.input, "Escape");
    expect(pressed.defaultPrevented).toBe(true);
    expect(posted).toEqual([{ type: "stop" }]);
    expect(view.input.value).toBe("keep this draft");
  });

  it("a provider failure reads in plain words, the provider's own folded under Details", () => {
    view.handle({ type: "turnStart", prompt: "explain greet()" });
    view.handle({ type: "event", event: ev("run_start") });
    const message = "provider 'vscode' at http://127.0.0.1:9/v1: network: cannot connect (set providers[].base_url)";
    const summary = "Could not reach the model server at http://127.0.0.1:9/v1. Is it running, and is the address right?";
    view.handle({ type: "event", event: ev("error", { kind: "network", message, summary }) });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "error", error: message } });
    const section = view.log.querySelector("section.turn")!;
    expect([...section.querySelectorAll("p.error")].map((p) => p.textContent)).toEqual([`The turn failed: ${summary}`]);
    const details = section.querySelector("details.error-details")!;
    expect(details.hasAttribute("open")).toBe(false);
    expect(details.querySelector("pre")!.textContent).toBe(message);
    expect(section.querySelector("button.retry")).not.toBeNull();
  });

  it("a failed turn shows its error once, with Retry sending the same message again", () => {
    view.handle({ type: "turnStart", prompt: "explain greet()" });
    view.handle({ type: "event", event: ev("run_start") });
    view.handle({ type: "event", event: ev("error", { kind: "provider", message: "The model's server answered 503 twice." }) });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "error" } });
    const section = view.log.querySelector("section.turn")!;
    expect([...section.querySelectorAll("p.error")].map((p) => p.textContent)).toEqual(["The turn failed: The model's server answered 503 twice.."]);
    section.querySelector<HTMLButtonElement>("button.retry")!.click();
    expect(posted).toEqual([{ type: "send", prompt: "explain greet()" }]);
    // A failed turn of a reloaded thread offers Retry too (not a rewound one).
    view.handle({
      type: "thread",
      thread: "th1",
      running: false,
      history: [],
      turns: [
        { turn: 1, prompt: "gone", stopped_reason: "error", error: "HTTP 500", discarded: true },
        { turn: 2, prompt: "try me", stopped_reason: "error", error: "HTTP 500" },
      ],
    });
    expect([...view.log.querySelectorAll<HTMLButtonElement>("button.retry")].map((b) => b.dataset.prompt)).toEqual(["try me"]);
  });
});

describe("editor context, progress, model picker, keyboard", () => {
  it("shows the editor context as a removable chip", () => {
    view.handle({ type: "context", label: "greet.py:2-3" });
    expect(view.contextEl.hidden).toBe(false);
    expect(view.contextEl.querySelector(".context-label")!.textContent).toBe("greet.py:2-3");
    view.contextEl.querySelector<HTMLButtonElement>("button.drop-context")!.click();
    expect(view.contextEl.hidden).toBe(true);
    expect(posted).toEqual([{ type: "dropContext" }]);
    expect(document.activeElement).toBe(view.input);
    view.handle({ type: "context" });
    expect(view.contextEl.hidden).toBe(true);
  });

  it("a composed message (Apply to file) is sent with its file, or queued behind a running turn", () => {
    view.handle({ type: "submit", prompt: "Apply this code to greet.py", uri: "file:///ws/greet.py" });
    expect(posted).toEqual([{ type: "send", prompt: "Apply this code to greet.py", uri: "file:///ws/greet.py" }]);
    view.handle({ type: "turnStart", prompt: "Apply this code to greet.py" });
    view.handle({ type: "submit", prompt: "Apply again", uri: "file:///ws/b.py" });
    expect(view.queued).toEqual(["Apply again"]);
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "final" } });
    expect(posted[1]).toEqual({ type: "send", prompt: "Apply again", uri: "file:///ws/b.py" });
  });

  it("counts the seconds before the first token, then gives way to the answer", () => {
    vi.useFakeTimers();
    view.handle({ type: "turnStart", prompt: "think" });
    const progress = (): string | null | undefined => view.log.querySelector("section.turn .progress")?.textContent;
    expect(progress()).toBe("Working… 0 s");
    vi.advanceTimersByTime(3000);
    expect(progress()).toBe("Working… 3 s");
    view.handle({ type: "event", event: ev("run_start") });
    view.handle({ type: "event", event: ev("text_delta", { text: "Hi" }) });
    expect(progress()).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("lists the configured models in the header, picks one for the next turns; Configure models… asks the extension", () => {
    const models = [
      { name: "fast", label: "fast (ollama/qwen)" },
      { name: "smart", label: "smart (anthropic/claude)" },
    ];
    view.handle({ type: "models", current: "fast", models, configured: true });
    expect([...view.modelSelect.options].map((o) => o.textContent)).toEqual(["fast (ollama/qwen)", "smart (anthropic/claude)", "Configure models…"]);
    expect(view.modelSelect.value).toBe("fast");
    view.modelSelect.value = "smart";
    view.modelSelect.dispatchEvent(new Event("change"));
    expect(posted).toEqual([{ type: "pickModel", name: "smart" }]);
    view.modelSelect.value = "__configure__";
    view.modelSelect.dispatchEvent(new Event("change"));
    expect(posted.at(-1)).toEqual({ type: "configureModels" });
    expect(view.modelSelect.value).toBe("smart"); // the picked model stays picked
    view.handle({ type: "models", models: [], configured: false });
    expect([...view.modelSelect.options].map((o) => o.textContent)).toEqual(["No model configured", "Set up a model…"]);
  });

  it("New thread puts the cursor in the input; Rewind to here is a real button Tab reaches, and Cancel keeps the turn", () => {
    view.newButton.click();
    expect(posted).toEqual([{ type: "newThread" }]);
    expect(document.activeElement).toBe(view.input);
    view.handle({ type: "thread", thread: "th1", running: false, history: [], turns: [{ turn: 1, prompt: "Use an f-string", final: "ok" }] });
    const rewind = view.log.querySelector<HTMLButtonElement>("button.rewind")!;
    expect(rewind.tabIndex).toBe(0);
    expect(rewind.hidden).toBe(false);
    rewind.click();
    view.log.querySelector<HTMLButtonElement>("button.rewind-cancel")!.click();
    expect(view.log.querySelector(".rewind-question")).toBeNull();
    expect(document.activeElement).toBe(rewind);
    expect(posted).toEqual([{ type: "newThread" }]);
  });
});

describe("approval card and review", () => {
  it("sets Allow always apart, naming what it keeps allowing", () => {
    view.handle({ type: "turnStart", prompt: "fetch" });
    view.handle({ type: "event", event: ev("run_start") });
    const details = { id: "approval-1", tool: "fetch_url", host: "docs.python.org", target: { url: "https://docs.python.org/3/" }, question: "q" };
    view.handle({ type: "approval", approval: { id: 1, message: "q", actions: ["Allow once", "Allow always", "Deny"], inTurn: true, details } });
    const box = view.log.querySelector<HTMLElement>(".approval")!;
    const always = box.querySelector<HTMLElement>(".approval-always")!;
    expect(always.querySelector("button")!.textContent).toBe("Allow always");
    expect(always.querySelector(".approval-scope")!.textContent).toBe("for fetch_url on docs.python.org, in this workspace");
    // The progress line gave way to the question.
    expect(view.log.querySelector(".progress")).toBeNull();
    always.querySelector<HTMLButtonElement>("button")!.click();
    expect(posted).toEqual([{ type: "answerApproval", id: 1, answer: "Allow always" }]);
    expect([...box.querySelectorAll<HTMLButtonElement>("button")].every((b) => b.disabled)).toBe(true);
    // A command's card: the command in a code block.
    view.handle({
      type: "approval",
      approval: { id: 2, message: "r", actions: ["Allow once", "Allow always", "Deny"], inTurn: true, details: { id: "approval-2", tool: "terminal", command: "pytest -q", question: "r" } },
    });
    const second = view.log.querySelectorAll<HTMLElement>(".approval")[1];
    expect(second.querySelector("pre.approval-command > code")!.textContent).toBe("pytest -q");
    expect(second.querySelector(".approval-scope")!.textContent).toBe("for every terminal call, in this workspace");
  });

  it("draws each change once and offers Accept all / Reject all while changes are pending", () => {
    view.handle({ type: "turnStart", prompt: "edit" });
    view.handle({ type: "event", event: ev("run_start") });
    view.handle({ type: "event", event: ev("tool_call_start", { call_id: "c1", name: "edit_file", arguments: { path: "greet.py", old_string: "a", new_string: "b" } }) });
    view.handle({ type: "event", event: ev("tool_call_end", { call_id: "c1", name: "edit_file", ok: true }) });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "final" } });
    const hunk = (id: string, line: number): HunkView => ({ hunk_id: id, task_id: "t1", uri: "file:///ws/greet.py", path: "greet.py", start_line: line, old_text: "a\n", new_text: "b\n", summary: "greet.py" });
    view.handle({ type: "hunks", hunks: [hunk("h1", 0), hunk("h2", 5)] });
    const visibleDiffs = [...view.log.querySelectorAll<HTMLElement>(".diff")].filter((d) => !d.hidden);
    expect(visibleDiffs).toHaveLength(2); // the two hunks' diffs; the call's own diff gave way
    expect(visibleDiffs.every((d) => d.closest(".hunk"))).toBe(true);
    const bar = view.log.querySelector<HTMLElement>(".review-all")!;
    expect(bar.querySelector(".review-count")!.textContent).toBe("2 changes pending");
    bar.querySelector<HTMLButtonElement>("button.review-accept-all")!.click();
    expect(posted).toEqual([{ type: "reviewAll", accept: true }]);
    view.handle({ type: "hunks", hunks: [hunk("h2", 5)] });
    expect(view.log.querySelector(".review-count")!.textContent).toBe("1 change pending");
    expect(view.log.querySelector<HTMLButtonElement>("button.review-accept-all")!.disabled).toBe(false);
    view.handle({ type: "hunks", hunks: [] });
    expect(view.log.querySelector(".review-all")).toBeNull();
  });

  it("shows Accept all / Reject all once, in the latest turn with pending changes, counting every pending change", () => {
    const hunk = (id: string, task: string): HunkView => ({ hunk_id: id, task_id: task, uri: "file:///ws/a.py", path: "a.py", start_line: 0, old_text: "a\n", new_text: "b\n", summary: "a.py" });
    view.handle({ type: "thread", thread: "th1", running: false, history: [], turns: [{ turn: 1, prompt: "one", task_id: "t1" }, { turn: 2, prompt: "two", task_id: "t2" }] });
    // t9 is another thread's task: not drawn here, but Accept all decides it too, so it counts.
    view.handle({ type: "hunks", hunks: [hunk("h1", "t1"), hunk("h2", "t2"), hunk("h9", "t9")] });
    const bars = [...view.log.querySelectorAll<HTMLElement>(".review-all")];
    expect(bars).toHaveLength(1);
    expect(bars[0].closest("section.turn")!.querySelector(".prompt-text")!.textContent).toBe("two");
    expect(bars[0].querySelector(".review-count")!.textContent).toBe("3 changes pending");
    // The latest turn's changes are decided: the bar moves to the turn that still has some.
    view.handle({ type: "hunkDecided", hunk_id: "h2", decision: "accepted" });
    const moved = [...view.log.querySelectorAll<HTMLElement>(".review-all")];
    expect(moved).toHaveLength(1);
    expect(moved[0].closest("section.turn")!.querySelector(".prompt-text")!.textContent).toBe("one");
    expect(moved[0].querySelector(".review-count")!.textContent).toBe("2 changes pending");
  });
});
