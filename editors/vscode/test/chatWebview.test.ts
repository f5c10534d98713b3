// @vitest-environment happy-dom
/**
 * The chat view's script (src/webview/chat.ts) in a DOM: what it renders for the extension's
 * messages, what it posts for the user's keys and clicks, and the `@` completion.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { ToExtension, TurnView } from "../src/chatProtocol";
import { renderMarkdown } from "../src/chatMarkdown";
import { ChatView, outcomeText, toolTarget } from "../src/webview/chat";
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

const TURNS: TurnView[] = [
  {
    turn: 1,
    prompt: "Use an f-string",
    final: "Done: **greet** uses `f\"...\"` now.",
    stopped_reason: "final",
    files: ["hello.py"],
    tools: [
      // kind and target as lich.thread sends them (the server's, not derived from the arguments).
      { id: "c1", name: "read_file", arguments: { path: "hello.py" }, kind: "read", target: { path: "hello.py" }, ok: true, result: "1:ab|def greet" },
      { id: "c2", name: "apply_patch", arguments: { input: "@@ hello.py\n= 2:9f..2:9f\n~x\n" }, kind: "edit", target: { path: "hello.py" }, ok: false, result: "approval_denied: the user said no" },
    ],
  },
  { turn: 2, prompt: "Undo that", final: "ok", stopped_reason: "final", discarded: true },
  { turn: 3, prompt: "Take your time", final: null, stopped_reason: "aborted" },
];

beforeEach(() => {
  document.body.innerHTML = '<div id="app"></div>';
  posted = [];
  view = new ChatView(document, { post: (message) => posted.push(message) });
});

describe("ChatView: a thread from lich.thread", () => {
  it("renders each turn with its tool calls collapsed, its answer as markdown and Rewind to here", () => {
    view.handle({ type: "thread", thread: "th1", turns: TURNS, running: false, history: [] });
    const sections = [...view.log.querySelectorAll("section.turn")];
    expect(sections).toHaveLength(3);
    const first = sections[0] as HTMLElement;
    expect(first.querySelector(".prompt-text")!.textContent).toBe("Use an f-string");
    const tools = [...first.querySelectorAll("details.tool")] as HTMLDetailsElement[];
    expect(tools.map((t) => t.open)).toEqual([false, false]);
    expect(tools[0].querySelector("summary")!.textContent).toBe("read_filehello.pyok");
    expect(tools[0].querySelector(".tool-args")!.textContent).toContain('"path": "hello.py"');
    expect(tools[0].querySelector(".tool-result")!.textContent).toBe("1:ab|def greet");
    // The patch's target is the file it names; a denied call reads "refused", in plain words.
    expect(tools[1].querySelector(".tool-target")!.textContent).toBe("hello.py");
    // The target and kind are the server's (lich.thread's `target`, `kind`).
    expect(tools[0].dataset.kind).toBe("read");
    expect(tools[1].classList.contains("failed")).toBe(true);
    expect(tools[1].querySelector(".tool-outcome")!.textContent).toBe("refused");
    expect(first.querySelector(".markdown")!.innerHTML).toBe('<p>Done: <strong>greet</strong> uses <code>f"..."</code> now.</p>');
    // Reloaded without the server's URIs the changed files are only named; with them they link.
    expect(first.querySelector(".files")!.textContent).toBe("Changed: hello.py");
    expect(first.querySelector(".files a")).toBeNull();
    expect(first.querySelector<HTMLButtonElement>("button.rewind")!.dataset.turn).toBe("1");
    // A rewound turn stays readable but cannot be rewound again.
    expect(sections[1].classList.contains("discarded")).toBe(true);
    expect(sections[1].querySelector("button.rewind")).toBeNull();
    expect(sections[2].querySelector("p.notice")!.textContent).toBe("Stopped: the turn was cancelled.");
  });

  it("posts rewind, openEdited (the server's URI) and stop for the user's clicks", () => {
    const turns: TurnView[] = [{ ...TURNS[0], edited: [{ path: "hello.py", uri: "file:///ws/hello.py" }] }, ...TURNS.slice(1)];
    view.handle({ type: "thread", thread: "th1", turns, running: false, history: [] });
    view.log.querySelector<HTMLButtonElement>("section.turn button.rewind")!.click();
    // Rewind asks first, naming the turn by its prompt; only the confirmation posts.
    const question = view.log.querySelector<HTMLElement>("section.turn .rewind-question")!;
    expect(question.textContent).toContain("Rewind to before “Use an f-string”?");
    expect(posted).toEqual([]);
    expect(document.activeElement).toBe(question.querySelector("button.rewind-confirm"));
    question.querySelector<HTMLButtonElement>("button.rewind-confirm")!.click();
    expect(view.log.querySelector(".rewind-question")).toBeNull();
    view.log.querySelector<HTMLAnchorElement>(".files a")!.click();
    view.handle({ type: "turnStart", prompt: "more" });
    expect(view.stopButton.hidden).toBe(false);
    view.stopButton.click();
    expect(posted).toEqual([{ type: "rewind", turn: 1 }, { type: "openEdited", uri: "file:///ws/hello.py" }, { type: "stop" }]);
  });

  it("opens a 200-turn thread whole (its time is a bench's, not a test's)", () => {
    const turns: TurnView[] = Array.from({ length: 200 }, (_, i) => ({
      turn: i + 1,
      prompt: `question ${i}`,
      final: `answer ${i} with \`code\` and a list:\n- one\n- two`,
      stopped_reason: "final",
      tools: [{ id: `c${i}`, name: "read_file", arguments: { path: `f${i}.py` }, ok: true, result: "1:ab|x" }],
    }));
    view.handle({ type: "thread", thread: "th1", turns, running: false, history: [] });
    expect(view.log.querySelectorAll("section.turn")).toHaveLength(200);
    expect(view.log.querySelectorAll("section.turn")[199].textContent).toContain("question 199");
  });

  it("lists the threads with the current one selected and posts the pick", () => {
    view.handle({
      type: "threads",
      threads: [
        { thread: "a", title: "Fix the parser", turns: 3 },
        { thread: "b", title: "Add tests", turns: 1, running: true },
      ],
      current: "b",
    });
    const options = [...view.threadSelect.options].map((o) => o.textContent);
    expect(options).toEqual(["Fix the parser (3 turns)", "Add tests (1 turn) · running"]);
    expect(view.threadSelect.value).toBe("b");
    view.threadSelect.value = "a";
    view.threadSelect.dispatchEvent(new Event("change"));
    view.newButton.click();
    expect(posted).toEqual([{ type: "pickThread", thread: "a" }, { type: "newThread" }]);
  });
});

describe("ChatView: a live turn", () => {
  it("streams into its own turn only: earlier turns' nodes are never rebuilt", () => {
    view.handle({ type: "thread", thread: "th1", turns: TURNS.slice(0, 1), running: false, history: [] });
    const earlier = view.log.querySelector("section.turn")!;
    const earlierAnswer = earlier.querySelector(".markdown")!;
    view.handle({ type: "turnStart", prompt: "Now add a test", attachment: "hello.py:1-2" });
    const live = view.log.querySelectorAll("section.turn")[1] as HTMLElement;
    expect(live.querySelector(".prompt-attachment")!.textContent).toBe("Attached: hello.py:1-2");
    view.handle({ type: "event", event: ev("run_start") });
    view.handle({ type: "event", event: ev("text_delta", { text: "Let me **look" }) });
    view.handle({ type: "event", event: ev("text_delta", { text: "** first." }) });
    expect(live.querySelectorAll(".markdown")).toHaveLength(1);
    expect(live.querySelector(".markdown")!.innerHTML).toBe("<p>Let me <strong>look</strong> first.</p>");
    view.handle({ type: "event", event: ev("tool_call_start", { call_id: "k1", name: "write_file", arguments: { path: "test_hello.py", content: "x" }, kind: "edit", target: { path: "test_hello.py" }, title: "write_file test_hello.py" }) });
    const tool = live.querySelector("details.tool")!;
    expect(tool.querySelector(".tool-outcome")!.textContent).toBe("running…");
    view.handle({ type: "event", event: ev("tool_call_end", { call_id: "k1", name: "write_file", ok: true, summary: "wrote test_hello.py", duration_ms: 1500 }) });
    expect(tool.querySelector("summary")!.textContent).toBe("write_filetest_hello.pyok1.5 s");
    view.handle({ type: "event", event: ev("text_delta", { text: "Added." }) });
    view.handle({ type: "event", event: ev("final", { text: "Added `test_greet`." }) });
    // Another task's events (a palette ask) are the extension's to filter; the view shows the
    // ones it is sent in order, into the live turn.
    const segments = [...live.querySelectorAll(".markdown")];
    expect(segments.map((s) => s.textContent)).toEqual(["Let me look first.", "Added test_greet."]);
    expect(view.log.querySelector("section.turn")).toBe(earlier);
    expect(earlier.querySelector(".markdown")).toBe(earlierAnswer);
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "final", final: "Added `test_greet`.", edited: [{ path: "test_hello.py", uri: "file:///ws/test_hello.py" }], turn: 2 } });
    expect(live.dataset.turn).toBe("2");
    expect(live.querySelector<HTMLButtonElement>("button.rewind")!.dataset.turn).toBe("2");
    expect(live.querySelector(".files")!.textContent).toBe("Changed: test_hello.py");
    expect(view.stopButton.hidden).toBe(true);
  });

  it("takes a failed attempt's partial text back on a retry", () => {
    view.handle({ type: "turnStart", prompt: "hi" });
    view.handle({ type: "event", event: ev("text_delta", { text: "The answ" }) });
    view.handle({ type: "event", event: ev("llm_retry", { provider: "fake", kind: "network", action: "retry", discarded_chars: 8 }) });
    view.handle({ type: "event", event: ev("text_delta", { text: "The answer is 42." }) });
    const live = view.log.querySelector("section.turn")!;
    expect([...live.querySelectorAll(".markdown")].map((s) => s.textContent)).toEqual(["The answer is 42."]);
    // In plain words: no provider name from the config.
    expect(live.querySelector("p.notice")!.textContent).toBe("The model did not answer (network): retrying…");
  });

  it("says in plain words why a turn ended without an answer", () => {
    view.handle({ type: "turnStart", prompt: "hi" });
    view.handle({ type: "event", event: ev("error", { kind: "provider", message: "HTTP 401: invalid API key" }) });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "error", error: "provider_error: HTTP 401: invalid API key" } });
    // Shown once (the run's error event and the outcome say the same), with Retry.
    const texts = [...view.log.querySelectorAll("p.error")].map((p) => p.textContent);
    expect(texts).toEqual(["The turn failed: provider_error: HTTP 401: invalid API key."]);
    expect(view.log.querySelectorAll("button.retry")).toHaveLength(1);
    view.handle({ type: "turnStart", prompt: "again" });
    view.handle({ type: "turnEnd", outcome: { error: "lich.ask: thread_busy: thread th1 is running a task" } });
    expect(view.log.querySelectorAll("p.error")[1].textContent).toBe("lich.ask: thread_busy: thread th1 is running a task");
    expect(outcomeText("budget", null)).toBe("Stopped: the turn used all its model calls (max_turns).");
    expect(view.log.textContent).not.toMatch(/Traceback|at Object\./);
  });

  it("ends a turn with a Transcript link that asks the extension to open that task's transcript", () => {
    view.handle({ type: "turnStart", prompt: "hi" });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "final", final: "Hello.", transcript: "file:///state/transcripts/t1.md" } });
    const link = view.log.querySelector<HTMLAnchorElement>("section.turn .turn-footer a.transcript")!;
    expect(link.textContent).toBe("Transcript");
    link.click();
    expect(posted).toEqual([{ type: "openTranscript", uri: "file:///state/transcripts/t1.md" }]);
    // A task without a transcript file (the server could not write it) shows no link.
    view.handle({ type: "turnStart", prompt: "again" });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "final", final: "Hi." } });
    expect(view.log.querySelectorAll("a.transcript")).toHaveLength(1);
  });
});

describe("ChatView: the input", () => {
  it("sends on Enter, keeps Shift+Enter for a new line, and queues what is sent while a turn runs", () => {
    type("first line");
    const shifted = key(view.input, "Enter", { shiftKey: true });
    expect(shifted.defaultPrevented).toBe(false);
    expect(posted).toEqual([]);
    const sent = key(view.input, "Enter");
    expect(sent.defaultPrevented).toBe(true);
    expect(posted).toEqual([{ type: "send", prompt: "first line" }]);
    expect(view.input.value).toBe("");
    view.handle({ type: "turnStart", prompt: "first line" });
    type("second");
    key(view.input, "Enter");
    expect(posted).toHaveLength(1);
    expect(view.queued).toEqual(["second"]);
  });

  it("walks the history with Up and Down and gives back the draft", () => {
    view.handle({ type: "thread", turns: [], running: false, history: ["older", "oldest"] });
    type("draft");
    key(view.input, "ArrowUp");
    expect(view.input.value).toBe("older");
    key(view.input, "ArrowUp");
    expect(view.input.value).toBe("oldest");
    key(view.input, "ArrowUp");
    expect(view.input.value).toBe("oldest");
    key(view.input, "ArrowDown");
    expect(view.input.value).toBe("older");
    key(view.input, "ArrowDown");
    expect(view.input.value).toBe("draft");
  });

  it("completes @ mentions through the extension: newest answer only, arrows pick, Enter inserts", () => {
    type("look at @he");
    type("look at @hel");
    expect(posted).toEqual([
      { type: "mentions", id: 1, prefix: "he" },
      { type: "mentions", id: 2, prefix: "hel" },
    ]);
    // The answer to the older keystroke arrives late: ignored.
    view.handle({ type: "mentionsResult", id: 1, candidates: ["stale.py"] });
    expect(view.mentionList.hidden).toBe(true);
    view.handle({ type: "mentionsResult", id: 2, candidates: ["hello.py", "help/index.md"] });
    expect(view.mentionList.hidden).toBe(false);
    expect([...view.mentionList.querySelectorAll("li")].map((li) => li.textContent)).toEqual(["hello.py", "help/index.md"]);
    key(view.input, "ArrowDown");
    expect(view.mentionList.querySelector("li.active")!.textContent).toBe("help/index.md");
    const enter = key(view.input, "Enter");
    expect(enter.defaultPrevented).toBe(true);
    expect(view.input.value).toBe("look at @help/index.md ");
    expect(view.mentionList.hidden).toBe(true);
    expect(posted.filter((m) => m.type === "send")).toEqual([]);
    // Not after a word character: an e-mail address is not a mention.
    posted = [];
    type("mail me@example");
    expect(posted).toEqual([]);
  });

  it("Escape closes the completion, and a mention in the middle of the text is completed in place", () => {
    type("see @");
    view.handle({ type: "mentionsResult", id: 1, candidates: ["a.py"] });
    key(view.input, "Escape");
    expect(view.mentionList.hidden).toBe(true);
    view.input.value = "see @a and more";
    view.input.selectionStart = view.input.selectionEnd = "see @a".length;
    view.input.dispatchEvent(new Event("input"));
    view.handle({ type: "mentionsResult", id: 2, candidates: ["app/main.py"] });
    key(view.input, "Tab");
    expect(view.input.value).toBe("see @app/main.py and more");
  });

  it("shows the attachment and lets the user drop it", () => {
    view.handle({ type: "attachment", label: "hello.py:2-3" });
    expect(view.attachmentEl.hidden).toBe(false);
    expect(view.attachmentEl.textContent).toContain("Attached: hello.py:2-3");
    view.attachmentEl.querySelector<HTMLButtonElement>("button.drop")!.click();
    expect(view.attachmentEl.hidden).toBe(true);
    expect(posted).toEqual([{ type: "dropAttachment" }]);
  });
});

describe("toolTarget", () => {
  it("renders the server's target, never the arguments", () => {
    expect(toolTarget({ command: "pytest -q" })).toBe("pytest -q");
    expect(toolTarget({ path: "a.py", paths: ["a.py", "b.py"] })).toBe("a.py, b.py");
    expect(toolTarget({ path: "src/app.py", lines: { start: 2, end: 9 } })).toBe("src/app.py (lines 2-9)");
    expect(toolTarget({ url: "https://example.com/x" })).toBe("https://example.com/x");
    expect(toolTarget({ query: "TODO", path: "src" })).toBe("TODO in src");
    expect(toolTarget(null)).toBe("");
    // Arguments are not a target: the view does not guess from them.
    expect(toolTarget(undefined)).toBe("");
  });
});

function dom(html: string): HTMLElement {
  const el = document.createElement("div");
  el.innerHTML = html;
  return el;
}

describe("renderMarkdown", () => {
  it("escapes every piece of HTML in the model's text", () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror="y"> **<b>x</b>**');
    expect(html).not.toMatch(/<script|<img|<b>/);
    expect(html).toContain("&lt;script&gt;");
    const el = document.createElement("div");
    el.innerHTML = html;
    expect(el.querySelectorAll("script, img")).toHaveLength(0);
  });

  it("renders code blocks (also unterminated while streaming), lists, headings and safe links only", () => {
    const block = dom(renderMarkdown("```py\nx = '<a>'\n```\nafter"));
    expect(block.querySelector(".code-block pre code")!.textContent).toBe("x = '<a>'");
    expect(block.querySelector<HTMLElement>(".code-block")!.dataset.lang).toBe("py");
    expect(block.querySelector("p")!.textContent).toBe("after");
    expect(dom(renderMarkdown("```\npartial")).querySelector("pre code")!.textContent).toBe("partial");
    expect(renderMarkdown("- one\n- `two`\n\n1. first")).toBe("<ul>\n<li>one</li>\n<li><code>two</code></li>\n</ul>\n<ol>\n<li>first</li>\n</ol>");
    expect(renderMarkdown("## Plan")).toBe("<h4>Plan</h4>");
    expect(renderMarkdown("[docs](https://example.com/a?b=1&c=2)")).toBe(
      '<p><a href="#" data-link="https://example.com/a?b=1&amp;c=2" title="https://example.com/a?b=1&amp;c=2">docs</a></p>',
    );
    expect(renderMarkdown("[file](src/app.py)")).toBe('<p><a href="#" data-link="src/app.py" title="src/app.py">file</a></p>');
    // An image loads nothing: it is a link (to judge) named by its alt text.
    expect(renderMarkdown("![diagram](https://example.com/x.png)")).toBe(
      '<p><a href="#" data-link="https://example.com/x.png" title="https://example.com/x.png">diagram</a></p>',
    );
    // Every link target stays data for the extension to judge: the page never navigates to it.
    for (const target of ["javascript:alert(1)", "command:workbench.action.quit", "../../etc/passwd", 'x"onclick="y']) {
      const el = document.createElement("div");
      el.innerHTML = renderMarkdown(`[x](${target})`);
      const a = el.querySelector("a")!;
      expect(a.getAttribute("href")).toBe("#");
      expect([...a.attributes].map((attr) => attr.name).sort()).toEqual(["data-link", "href", "title"]);
    }
  });
});

describe("ChatView: approvals, edits as diffs, review hunks", () => {
  it("shows an approval question in the running turn; a click answers once and greys it out", () => {
    view.handle({ type: "turnStart", prompt: "run the tests" });
    view.handle({ type: "event", event: ev("run_start") });
    view.handle({ type: "event", event: ev("tool_call_start", { call_id: "c1", name: "terminal", arguments: { command: "pytest -q" } }) });
    const details = {
      id: "approval-1",
      tool: "terminal",
      capability: "process/exec",
      kind: "execute",
      target: { command: "pytest -q" },
      command: "pytest -q",
      cwd: "/ws",
      what_will_run: "runs `pytest -q` with bash -lc in the workspace",
      question: "the server's question text, not parsed",
    };
    view.handle({ type: "approval", approval: { id: 4, message: details.question, actions: ["Allow once", "Allow always", "Deny"], inTurn: true, details } });
    const live = view.log.querySelector("section.turn")!;
    const box = live.querySelector<HTMLElement>(".approval")!;
    // Rendered from the server's data: the tool, the command, where it runs, what it starts.
    expect(box.querySelector(".approval-question")!.textContent).toBe("Run terminal?");
    expect(box.querySelector(".approval-command")!.textContent).toBe("pytest -q");
    expect(box.querySelector(".approval-cwd")!.textContent).toBe("in /ws");
    expect(box.querySelector(".approval-runs")!.textContent).toBe(details.what_will_run);
    const buttons = [...box.querySelectorAll<HTMLButtonElement>("button")];
    // Allow always comes last, set apart (on screen and for Tab).
    expect(buttons.map((b) => b.textContent)).toEqual(["Allow once", "Deny", "Allow always"]);
    buttons[0].click();
    buttons[1].click(); // already answered: nothing more is sent
    expect(posted).toEqual([{ type: "answerApproval", id: 4, answer: "Allow once" }]);
    expect(buttons.every((b) => b.disabled)).toBe(true);
    view.handle({ type: "approvalDone", id: 4, answer: "Allow once", where: "chat" });
    expect(box.classList.contains("answered")).toBe(true);
    expect(box.querySelector(".approval-answer")!.textContent).toBe("Answered: Allow once.");
    expect(box.querySelector("button.chosen")!.textContent).toBe("Allow once");
  });

  it("a question answered in the notification greys out with that answer; outside a turn it goes at the end", () => {
    view.handle({ type: "approval", approval: { id: 5, message: "lich wants to run fetch_url on example.com (net/fetch): …", actions: ["Allow once", "Allow always", "Deny"], inTurn: false } });
    const box = view.log.lastElementChild as HTMLElement;
    expect(box.classList.contains("approval")).toBe(true);
    view.handle({ type: "approvalDone", id: 5, answer: "Deny", where: "dialog" });
    expect(box.querySelector(".approval-answer")!.textContent).toBe("Answered in the notification: Deny.");
    expect([...box.querySelectorAll<HTMLButtonElement>("button")].every((b) => b.disabled)).toBe(true);
  });

  it("draws a successful edit's change as a diff with Open file; a failed edit has none", () => {
    view.handle({ type: "turnStart", prompt: "use an f-string" });
    view.handle({ type: "event", event: ev("run_start") });
    const patch = "@@ greet.py\n= 2:9f..2:9f\n~    return f\"Hello, {name}!\"\n";
    view.handle({ type: "event", event: ev("tool_call_start", { call_id: "c1", name: "apply_patch", arguments: { input: patch } }) });
    view.handle({ type: "event", event: ev("tool_call_end", { call_id: "c1", name: "apply_patch", ok: true, error: null, summary: "Edited greet.py (+1 -1)", duration_ms: 12 }) });
    view.handle({ type: "event", event: ev("tool_call_start", { call_id: "c2", name: "edit_file", arguments: { path: "b.py", old_string: "x = 1", new_string: "x = 2" } }) });
    view.handle({ type: "event", event: ev("tool_call_end", { call_id: "c2", name: "edit_file", ok: false, error: "not_found: old_string", summary: "", duration_ms: 3 }) });
    view.handle({ type: "event", event: ev("tool_call_start", { call_id: "c3", name: "edit_file", arguments: { path: "b.py", old_string: "x = 1\n", new_string: "x = 3\ny = 4\n" } }) });
    view.handle({ type: "event", event: ev("tool_call_end", { call_id: "c3", name: "edit_file", ok: true, error: null, summary: "Edited b.py", duration_ms: 3 }) });
    const diffs = [...view.log.querySelectorAll<HTMLElement>(".diff")];
    expect(diffs).toHaveLength(2);
    // The diff follows its own call's line, visible without opening it.
    expect(diffs[0].previousElementSibling!.matches("details.tool")).toBe(true);
    expect(diffs[0].querySelector(".diff-path")!.textContent).toBe("greet.py");
    expect([...diffs[0].querySelectorAll(".diff-body span")].map((s) => [s.className, s.textContent])).toEqual([
      ["note", "@@ line 2 replaced by:\n"],
      ["ins", '+     return f"Hello, {name}!"\n'],
    ]);
    expect([...diffs[1].querySelectorAll(".diff-body span")].map((s) => s.textContent)).toEqual(["- x = 1\n", "+ x = 3\n", "+ y = 4\n"]);
    // Open file asks for the file the server reports for this turn's task; the call's own path
    // (model text) goes along only to choose among several.
    diffs[1].querySelector<HTMLAnchorElement>("a.open-file")!.click();
    expect(posted).toEqual([{ type: "openEdited", task_id: "t1", path: "b.py" }]);
  });

  it("a link in the model's text posts its raw target for the extension to judge, and opens nothing itself", () => {
    view.handle({ type: "turnStart", prompt: "where?" });
    view.handle({ type: "event", event: ev("run_start") });
    const links = ["../../etc/passwd", "file:///etc/passwd", "command:workbench.action.quit", "docs/notes.md", "https://example.com"];
    view.handle({ type: "event", event: ev("final", { text: links.map((href, i) => `[l${i}](${href})`).join(" ") }) });
    const anchors = [...view.log.querySelectorAll<HTMLAnchorElement>(".markdown a")];
    expect(anchors.map((a) => a.getAttribute("href"))).toEqual(["#", "#", "#", "#", "#"]);
    const clicks = anchors.map((a) => {
      const click = new MouseEvent("click", { bubbles: true, cancelable: true });
      a.dispatchEvent(click);
      return click.defaultPrevented;
    });
    expect(clicks).toEqual([true, true, true, true, true]);
    expect(posted).toEqual(links.map((href) => ({ type: "openLink", href })));
  });

  it("Open file of a reloaded turn's edit names the turn (and its task) for the extension to look up", () => {
    view.handle({
      type: "thread",
      thread: "th1",
      history: [],
      running: false,
      turns: [
        { turn: 4, prompt: "p", task_id: "t4", tools: [{ id: "c1", name: "write_file", arguments: { path: "file:///etc/passwd", content: "x\n" }, ok: true }] },
        { turn: 5, prompt: "q", tools: [{ id: "c2", name: "write_file", arguments: { path: "b.py", content: "y\n" }, ok: true }] },
      ],
    });
    const opens = [...view.log.querySelectorAll<HTMLAnchorElement>("a.open-file")];
    opens.forEach((a) => a.click());
    expect(posted).toEqual([
      { type: "openEdited", task_id: "t4", turn: 4, path: "file:///etc/passwd" },
      { type: "openEdited", turn: 5, path: "b.py" },
    ]);
  });

  it("reloaded turns show their edits' diffs too (when lich.thread kept the arguments whole)", () => {
    view.handle({
      type: "thread",
      thread: "th1",
      history: [],
      running: false,
      turns: [{ turn: 1, prompt: "p", tools: [{ id: "c1", name: "write_file", arguments: JSON.stringify({ path: "new.py", content: "print(1)\n" }), ok: true, result: "wrote" }, { id: "c2", name: "write_file", arguments: '{"path": "cut.py", "content": "aaaa', ok: true }] }],
    });
    const diffs = [...view.log.querySelectorAll(".diff")];
    expect(diffs.map((d) => d.querySelector(".diff-body")!.textContent)).toEqual(["+ print(1)\n"]);
  });

  it("shows each pending hunk in its task's turn with Accept / Reject, and greys it out once decided", () => {
    view.handle({ type: "thread", thread: "th1", history: [], running: false, turns: [{ turn: 1, prompt: "older", task_id: "t1" }] });
    view.handle({ type: "turnStart", prompt: "use an f-string" });
    view.handle({ type: "event", event: ev("run_start", {}, "t2") });
    view.handle({ type: "turnEnd", outcome: { stopped_reason: "final", review_message: "2 changes wait for review", turn: 2 } });
    const hunk = (id: string, task: string, line: number) => ({ hunk_id: id, task_id: task, uri: "file:///ws/greet.py", path: "greet.py", start_line: line, old_text: "a\n", new_text: "b\n", summary: `replace line ${line + 1} with 1 line` });
    view.handle({ type: "hunks", hunks: [hunk("t2-1", "t2", 1), hunk("t2-2", "t2", 4), hunk("t9-1", "t9", 0)] });
    const sections = view.log.querySelectorAll("section.turn");
    expect(sections[0].querySelectorAll(".hunk")).toHaveLength(0);
    const hunks = [...sections[1].querySelectorAll<HTMLElement>(".hunk")];
    expect(hunks.map((h) => h.querySelector(".hunk-summary")!.textContent)).toEqual(["Pending: replace line 2 with 1 line", "Pending: replace line 5 with 1 line"]);
    expect(view.log.querySelectorAll(".hunk")).toHaveLength(2); // t9 is not in this view
    expect([...hunks[0].querySelectorAll(".diff-body span")].map((s) => s.textContent)).toEqual(["- a\n", "+ b\n"]);
    hunks[0].querySelector<HTMLAnchorElement>("a.open-file")!.click();
    hunks[0].querySelector<HTMLButtonElement>("button.hunk-accept")!.click();
    hunks[1].querySelector<HTMLButtonElement>("button.hunk-reject")!.click();
    expect(posted).toEqual([
      { type: "openEdited", uri: "file:///ws/greet.py", line: 1 },
      { type: "reviewHunk", hunk_id: "t2-1", accept: true },
      { type: "reviewHunk", hunk_id: "t2-2", accept: false },
    ]);
    view.handle({ type: "hunkDecided", hunk_id: "t2-1", decision: "accepted" });
    // t2-2's reject failed on the server: still listed, its buttons work again.
    view.handle({ type: "hunks", hunks: [hunk("t2-2", "t2", 4)] });
    expect(hunks[0].classList.contains("decided")).toBe(true);
    expect(hunks[0].querySelector(".hunk-summary")!.textContent).toBe("Accepted");
    expect(hunks[0].querySelectorAll("button")).toHaveLength(0);
    expect([...hunks[1].querySelectorAll<HTMLButtonElement>("button")].map((b) => b.disabled)).toEqual([false, false]);
    // Accepted in the editor (its lens): the listing no longer has it.
    view.handle({ type: "hunks", hunks: [] });
    expect(hunks[1].querySelector(".hunk-summary")!.textContent).toMatch(/^No longer pending/);
  });
});
