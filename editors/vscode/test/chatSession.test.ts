/**
 * The extension's side of the chat (src/chatView.ts ChatSession): which server commands a view
 * message sends, which `lich/event`s reach the view, and what the view is told when things fail.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { chatHtml, makeNonce } from "../src/chatHtml";
import { isToExtension, type ToView } from "../src/chatProtocol";
import { askOutcome, ChatSession, ChatViewProvider, newThreadId, plainError, THREAD_STATE_KEY } from "../src/chatView";
import { PromptHistory } from "../src/prompt";
import { TaskTracker } from "../src/tasks";
import type { LichEvent } from "../src/transcript";
import { mock, Uri } from "./mocks/vscode";

interface Sent {
  command: string;
  args: Record<string, unknown>;
}

/** A scripted server: per command a value, a function of the args, or an Error to reject with. */
class FakeServer {
  sent: Sent[] = [];
  answers: Record<string, unknown> = {};
  /** lich.ask waits for the test to `finishAsk` (events arrive while it runs). */
  private pendingAsk: ((value: unknown) => void) | undefined;
  private pendingAskFail: ((err: Error) => void) | undefined;

  request = async <T>(command: string, args: Record<string, unknown>): Promise<T> => {
    this.sent.push({ command, args });
    if (command === "lich.ask") {
      return new Promise<T>((resolve, reject) => {
        this.pendingAsk = resolve as (value: unknown) => void;
        this.pendingAskFail = reject;
      });
    }
    const answer = this.answers[command];
    if (answer instanceof Error) {
      throw answer;
    }
    return (typeof answer === "function" ? answer(args) : answer) as T;
  };

  finishAsk(result: unknown): void {
    this.pendingAsk?.(result);
  }

  failAsk(err: Error): void {
    this.pendingAskFail?.(err);
  }

  commands(): string[] {
    return this.sent.map((s) => s.command);
  }
}

function memento() {
  const values = new Map<string, unknown>();
  return {
    values,
    get: <T>(key: string, fallback?: T) => (values.has(key) ? (values.get(key) as T) : fallback) as T,
    update: async (key: string, value: unknown) => void values.set(key, value),
  };
}

let server: FakeServer;
let posted: ToView[];
let state: ReturnType<typeof memento>;
let session: ChatSession;
let opened: unknown[][];
let external: string[];
let informed: string[];
let transcripts: string[];

function event(type: string, task: string, thread: string, data: Record<string, unknown> = {}): LichEvent {
  return { type, task_id: task, thread, data };
}

function postedOf<K extends ToView["type"]>(kind: K): Extract<ToView, { type: K }>[] {
  return posted.filter((m): m is Extract<ToView, { type: K }> => m.type === kind);
}

beforeEach(() => {
  mock.reset();
  server = new FakeServer();
  server.answers["lich.threads"] = { threads: [{ thread: "th1", title: "Use an f-string", turns: 1 }] };
  server.answers["lich.thread"] = { thread: "th1", title: "Use an f-string", running: false, turns: [{ turn: 1, prompt: "Use an f-string", final: "Done." }] };
  server.answers["lich.mentions"] = { candidates: ["hello.py", "help.md"] };
  posted = [];
  opened = [];
  external = [];
  informed = [];
  transcripts = [];
  state = memento();
  session = new ChatSession({
    request: server.request,
    history: new PromptHistory(state),
    tasks: new TaskTracker(),
    state,
    openFile: (uri, line) => opened.push(line === undefined ? [uri] : [uri, line]),
    openExternal: (url) => external.push(url),
    inform: (text) => informed.push(text),
    openTranscript: (uri) => transcripts.push(uri),
  });
  session.attach((m) => posted.push(m));
});

describe("ChatSession: a conversation", () => {
  it("starts a thread, follows only its own task's events, then continues that thread", async () => {
    const first = session.send("Use an f-string");
    // A new thread: the view names it, so it knows its task's events before the answer.
    const chosen = server.sent[0].args.new_thread as string;
    expect(chosen).toMatch(/^\d{8}-\d{6}-vs[0-9a-f]{6}$/);
    expect(server.sent[0]).toEqual({ command: "lich.ask", args: { prompt: "Use an f-string", origin: "chat", new_thread: chosen } });
    expect(posted[0]).toEqual({ type: "turnStart", prompt: "Use an f-string", attachment: undefined });
    // Before the run starts nothing is forwarded; a palette task starting meanwhile is not
    // adopted; the first run_start of the named thread is the view's task.
    session.onEvent(event("text_delta", "other", "thX", { text: "not ours" }));
    session.onEvent(event("run_start", "t9", "th9"));
    session.onEvent(event("run_start", "t1", chosen));
    session.onEvent(event("text_delta", "t1", chosen, { text: "Done." }));
    session.onEvent(event("text_delta", "t9", "th9", { text: "a palette task" }));
    expect(postedOf("event").map((m) => [m.event.type, m.event.task_id])).toEqual([
      ["run_start", "t1"],
      ["text_delta", "t1"],
    ]);
    server.finishAsk({ task_id: "t1", thread: "th1", turn: 1, stopped_reason: "final", final: "Done.", edited: ["file:///ws/hello.py"] });
    await first;
    // The turn number is the result's: no lich.thread request only to learn it.
    expect(server.sent.filter((s) => s.command === "lich.thread")).toEqual([]);
    expect(postedOf("turnEnd")).toEqual([{ type: "turnEnd", outcome: expect.objectContaining({ stopped_reason: "final", final: "Done.", edited: [{ path: "hello.py", uri: "file:///ws/hello.py" }], turn: 1 }) }]);
    // The result's thread is the one to continue (the server's word over the view's guess).
    expect(state.values.get(THREAD_STATE_KEY)).toBe("th1");

    const second = session.send("Now add a test");
    expect(server.sent.filter((s) => s.command === "lich.ask")[1].args).toEqual({ prompt: "Now add a test", origin: "chat", thread: "th1" });
    // Events of another thread's run are not adopted for a follow-up.
    session.onEvent(event("run_start", "t5", "th5"));
    session.onEvent(event("run_start", "t2", "th1"));
    expect(postedOf("event").slice(2).map((m) => m.event.task_id)).toEqual(["t2"]);
    server.finishAsk({ task_id: "t2", thread: "th1", stopped_reason: "final", final: "Added." });
    await second;
    expect(new PromptHistory(state).list()).toEqual(["Now add a test", "Use an f-string"]);
  });

  it("refuses a second message while a turn runs, in words", async () => {
    void session.send("one");
    await session.send("two");
    expect(server.commands().filter((c) => c === "lich.ask")).toHaveLength(1);
    expect(postedOf("notice")[0].notice.text).toMatch(/still running/);
  });

  it("Stop cancels the view's task, also when pressed before the server named it", async () => {
    const asked = session.send("slow");
    await session.onMessage({ type: "stop" });
    expect(server.commands()).not.toContain("lich.cancel");
    session.onEvent(event("run_start", "t7", server.sent[0].args.new_thread as string));
    await vi.waitFor(() => expect(server.sent.find((s) => s.command === "lich.cancel")?.args).toEqual({ task_id: "t7" }));
    server.finishAsk({ task_id: "t7", thread: "th7", stopped_reason: "aborted" });
    await asked;
    expect(postedOf("turnEnd")[0].outcome.stopped_reason).toBe("aborted");
  });

  it("a refused or failed lich.ask ends the turn with the reason, never a stack", async () => {
    const asked = session.send("again");
    server.failAsk(new Error("Request workspace/executeCommand failed with message: lich.ask: thread_busy: thread th1 is running a task"));
    await asked;
    expect(postedOf("turnEnd")[0].outcome).toEqual({ error: "lich.ask: thread_busy: thread th1 is running a task" });
    expect(plainError(new Error("Connection got disposed."))).toMatch(/language server stopped/);
    expect(askOutcome(undefined).error).toMatch(/no answer/);
  });

  it("sends the attached selection with the next message only", async () => {
    session.setAttachment({ label: "hello.py:1-2", uri: "file:///ws/hello.py", range: { start: { line: 0, character: 0 }, end: { line: 1, character: 3 } } });
    expect(postedOf("attachment")).toEqual([{ type: "attachment", label: "hello.py:1-2" }]);
    const asked = session.send("Explain");
    expect(server.sent[0].args).toMatchObject({ prompt: "Explain", uri: "file:///ws/hello.py", range: { start: { line: 0 } } });
    expect(postedOf("turnStart")[0].attachment).toBe("hello.py:1-2");
    server.finishAsk({ task_id: "t1", thread: "th1", stopped_reason: "final" });
    await asked;
    void session.send("More");
    expect(server.sent.filter((s) => s.command === "lich.ask")[1].args).toEqual({ prompt: "More", origin: "chat", thread: "th1" });
  });

  it("chooses thread ids the server accepts (letters, digits, '-'), different each time", () => {
    const id = newThreadId(new Date(2026, 0, 2, 3, 4, 5), () => 0.5);
    expect(id).toBe("20260102-030405-vs7fffff");
    expect(id).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
    expect(newThreadId()).not.toBe(newThreadId());
  });
});

describe("ChatSession: threads", () => {
  it("loads the remembered thread when the view is ready, and lists the threads", async () => {
    state.values.set(THREAD_STATE_KEY, "th1");
    session = new ChatSession({ request: server.request, history: new PromptHistory(state), tasks: new TaskTracker(), state, openFile: () => undefined, openExternal: () => undefined, inform: () => undefined });
    session.attach((m) => posted.push(m));
    await session.onMessage({ type: "ready" });
    await vi.waitFor(() => expect(postedOf("threads")).toHaveLength(1));
    expect(server.sent.find((s) => s.command === "lich.thread")?.args).toEqual({ thread: "th1" });
    expect(postedOf("thread")[0]).toMatchObject({ thread: "th1", title: "Use an f-string", turns: [{ turn: 1 }], running: false });
    expect(postedOf("threads")[0]).toEqual({ type: "threads", threads: [{ thread: "th1", title: "Use an f-string", turns: 1 }], current: "th1" });
  });

  it("Rewind to here sends lich.rewind and shows the thread as the server has it, with its message", async () => {
    session.thread = "th1";
    // The thread's turns as loaded: the notice names the rewound turn by its prompt.
    server.answers["lich.thread"] = { thread: "th1", turns: [{ turn: 1, prompt: "Explain" }, { turn: 2, prompt: "Use an f-string" }] };
    await session.reload();
    server.answers["lich.rewind"] = {
      thread: "th1",
      turn: 2,
      ok: true,
      rewound: [2],
      files: [{ uri: "file:///ws/hello.py", path: "hello.py", outcome: "undone" }],
      not_restored: [],
      message: "lich: thread th1 rewound to before turn 2 (1 turn); restored hello.py",
    };
    await session.onMessage({ type: "rewind", turn: 2 });
    expect(server.sent.find((s) => s.command === "lich.rewind")?.args).toEqual({ thread: "th1", turn: 2 });
    // In words, without the thread's id (the server's message has it).
    expect(postedOf("thread")[1].notice).toEqual({ level: "info", text: 'Rewound to before "Use an f-string"; restored hello.py.' });
    server.answers["lich.rewind"] = {
      thread: "th1",
      turn: 1,
      ok: true,
      rewound: [1, 2],
      files: [{ uri: "file:///ws/a.py", path: "a.py", outcome: "refused", reason: "undo_conflict: you changed lines 3-4 since" }],
      not_restored: [{ turn: 1, files: ["b.py"], reason: "written outside the editor" }],
      message: "lich: thread th1 rewound ...",
    };
    await session.onMessage({ type: "rewind", turn: 1 });
    expect(postedOf("thread")[2].notice).toEqual({
      level: "error",
      text: 'Rewound to before "Explain" (2 turns taken back); not restored: a.py (you changed lines 3-4 since); not restored: b.py (written outside the editor).',
    });
    expect(JSON.stringify(postedOf("thread").map((t) => t.notice))).not.toContain("th1");
    server.answers["lich.rewind"] = new Error("lich.rewind: thread_busy: a turn is running");
    await session.onMessage({ type: "rewind", turn: 1 });
    expect(postedOf("thread")[3].notice).toEqual({ level: "error", text: "Rewind failed: lich.rewind: thread_busy: a turn is running" });
  });

  it("a pruned thread is dropped with a plain notice; New thread and the picker switch", async () => {
    session.thread = "gone";
    server.answers["lich.thread"] = new Error("lich.thread: unknown_thread: gone");
    await session.reload();
    expect(session.thread).toBeUndefined();
    expect(postedOf("thread")[0].notice?.text).toBe("Thread gone is gone (pruned or deleted); your next message starts a new one.");
    server.answers["lich.thread"] = { thread: "th2", turns: [{ turn: 1, prompt: "p" }] };
    await session.onMessage({ type: "pickThread", thread: "th2" });
    expect(session.thread).toBe("th2");
    expect(state.values.get(THREAD_STATE_KEY)).toBe("th2");
    await session.onMessage({ type: "newThread" });
    expect(session.thread).toBeUndefined();
    const fresh = postedOf("thread").at(-1)!;
    expect([fresh.thread, fresh.turns]).toEqual([undefined, []]);
  });

  it("a server that is down shows as a notice in the view", async () => {
    session.thread = "th1";
    server.answers["lich.thread"] = new Error("the language server is not running (Lich: Restart Server starts it)");
    await session.reload();
    expect(postedOf("thread")[0].notice).toEqual({ level: "error", text: "Could not load the thread: the language server is not running (Lich: Restart Server starts it)" });
  });
});

describe("ChatSession: @ completion and links", () => {
  it("answers a mentions request with the server's candidates (and @problems) under the same id", async () => {
    await session.onMessage({ type: "mentions", id: 7, prefix: "" });
    expect(server.sent.at(-1)).toEqual({ command: "lich.mentions", args: { prefix: "" } });
    expect(postedOf("mentionsResult")).toEqual([{ type: "mentionsResult", id: 7, candidates: ["hello.py", "help.md", "problems"] }]);
    server.answers["lich.mentions"] = new Error("boom");
    await session.onMessage({ type: "mentions", id: 8, prefix: "x" });
    expect(postedOf("mentionsResult")[1]).toEqual({ type: "mentionsResult", id: 8, candidates: [] });
  });

  it("opens web links outside, and ignores malformed messages", async () => {
    await session.onMessage({ type: "openLink", href: "https://example.com" });
    await session.onMessage({ type: "send" });
    await session.onMessage({ type: "rewind", turn: "1" });
    await session.onMessage({ type: "openLink", href: 3 });
    await session.onMessage({ type: "openEdited" });
    await session.onMessage({ type: "openEdited", uri: "file:///ws/a.py", line: -1 });
    await session.onMessage("ready");
    expect(external).toEqual(["https://example.com/"]);
    expect(opened).toEqual([]);
    expect(server.sent).toEqual([]);
    // The view can no longer ask for a path to be opened as such.
    expect(isToExtension({ type: "openFile", path: "hello.py" })).toBe(false);
    expect(isToExtension({ type: "mentions", id: 1, prefix: "a" })).toBe(true);
    expect(isToExtension({ type: "nope" })).toBe(false);
  });

  it("gives the turn its transcript file and opens only transcripts its turns named", async () => {
    const turn = session.send("hi");
    server.finishAsk({ task_id: "t1", thread: "th1", stopped_reason: "final", final: "Hello.", transcript: "file:///state/transcripts/t1.md" });
    await turn;
    expect(postedOf("turnEnd")[0].outcome.transcript).toBe("file:///state/transcripts/t1.md");
    expect(isToExtension({ type: "openTranscript", uri: 3 })).toBe(false);
    await session.onMessage({ type: "openTranscript", uri: "file:///etc/passwd" });
    await session.onMessage({ type: "openTranscript", uri: "file:///state/transcripts/t1.md" });
    expect(transcripts).toEqual(["file:///state/transcripts/t1.md"]);
    expect(askOutcome({ stopped_reason: "final", transcript: "https://example.com/t.md" }).transcript).toBeUndefined();
  });
});

describe("ChatSession: review hunks", () => {
  const listed = (ids: string[]) => ({
    hunks: ids.map((id) => ({ hunk_id: id, task_id: "t1", uri: "file:///ws/greet.py", range: {}, start_line: 1, end_line: 2, old_text: "a\n", new_text: "b\n", summary: "replace line 2 with 1 line" })),
  });

  it("after a turn, sends the view the pending hunks with workspace paths", async () => {
    server.answers["lich.reviewList"] = listed(["t1-1"]);
    const asked = session.send("use an f-string");
    server.finishAsk({ task_id: "t1", thread: "th1", stopped_reason: "final", review_message: "1 change waits for review" });
    await asked;
    expect(server.sent.find((s) => s.command === "lich.reviewList")?.args).toEqual({});
    expect(postedOf("hunks")).toEqual([
      { type: "hunks", hunks: [{ hunk_id: "t1-1", task_id: "t1", uri: "file:///ws/greet.py", path: "greet.py", start_line: 1, old_text: "a\n", new_text: "b\n", summary: "replace line 2 with 1 line" }] },
    ]);
  });

  it("Accept / Reject from the view run lich.acceptHunk / lich.rejectHunk and refresh the listing", async () => {
    server.answers["lich.reviewList"] = listed(["t1-1", "t1-2"]);
    await session.refreshHunks();
    server.answers["lich.acceptHunk"] = { ok: true, accepted: ["t1-1"], pending: 1 };
    server.answers["lich.reviewList"] = listed(["t1-2"]);
    await session.onMessage({ type: "reviewHunk", hunk_id: "t1-1", accept: true });
    expect(server.sent.find((s) => s.command === "lich.acceptHunk")?.args).toEqual({ hunk_id: "t1-1" });
    expect(postedOf("hunkDecided")).toEqual([{ type: "hunkDecided", hunk_id: "t1-1", decision: "accepted" }]);
    expect(postedOf("hunks").map((m) => m.hunks.map((h) => h.hunk_id))).toEqual([["t1-1", "t1-2"], ["t1-2"]]);
    // A failed reject says why and leaves the hunk pending.
    server.answers["lich.rejectHunk"] = { ok: false, error: "lich.rejectHunk: unknown_hunk: t1-2" };
    await session.onMessage({ type: "reviewHunk", hunk_id: "t1-2", accept: false });
    expect(server.sent.find((s) => s.command === "lich.rejectHunk")?.args).toEqual({ hunk_id: "t1-2" });
    expect(postedOf("hunkDecided")).toHaveLength(1);
    expect(postedOf("notice").at(-1)!.notice).toEqual({ level: "error", text: "lich.rejectHunk: unknown_hunk: t1-2" });
    // Everything decided elsewhere: one empty listing greys the rest out, then nothing more.
    server.answers["lich.reviewList"] = { hunks: [] };
    await session.refreshHunks();
    await session.refreshHunks();
    expect(postedOf("hunks").map((m) => m.hunks.length)).toEqual([2, 1, 1, 0]);
  });

  it("opens a hunk's file (the server's URI) at its line", async () => {
    server.answers["lich.reviewList"] = listed(["t1-1"]);
    await session.refreshHunks();
    await session.onMessage({ type: "openEdited", uri: "file:///ws/greet.py", line: 4 });
    await session.onMessage({ type: "openEdited", uri: "file:///ws/greet.py", line: 1.5 });
    expect(opened).toEqual([["file:///ws/greet.py", 4]]);
  });
});

describe("ChatSession: links in the model's text (the view posts openLink, the extension decides)", () => {
  let scratch: string;
  let ws: string;

  beforeAll(() => {
    scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lich-chat-links-")));
    ws = path.join(scratch, "ws");
    fs.mkdirSync(path.join(ws, "docs"), { recursive: true });
    fs.writeFileSync(path.join(ws, "docs", "notes.md"), "# notes\n");
    fs.writeFileSync(path.join(scratch, "secret.txt"), "secret\n");
    fs.symlinkSync(path.join(scratch, "secret.txt"), path.join(ws, "docs", "leak.md"));
  });

  afterAll(() => {
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  beforeEach(() => {
    mock.workspaceFolders = [{ uri: Uri.file(ws), name: "ws", index: 0 }];
  });

  const click = (href: string) => session.onMessage({ type: "openLink", href });

  it("opens a workspace file from a relative link, at its #L line", async () => {
    await click("docs/notes.md");
    await click("./docs/notes.md#L4");
    expect(opened).toEqual([[`file://${ws}/docs/notes.md`], [`file://${ws}/docs/notes.md`, 3]]);
    expect(informed).toEqual([]);
  });

  it("opens http(s) links through openExternal only", async () => {
    await click("https://example.com/docs");
    await click("http://localhost:3000");
    expect(external).toEqual(["https://example.com/docs", "http://localhost:3000/"]);
    expect(opened).toEqual([]);
  });

  it.each([
    ["../../etc/passwd", "it leads out of the workspace folder"],
    ["../secret.txt", "it leads out of the workspace folder"],
    ["docs/leak.md", "it goes through a symbolic link that leads out of the workspace"],
    ["/etc/passwd", "it is outside the workspace folders"],
    ["file:///etc/passwd", "it is outside the workspace folders"],
    ["command:workbench.action.quit", 'links with the scheme "command:" are never opened from the chat (only web pages and workspace files)'],
    ["vscode://settings/x", 'links with the scheme "vscode:" are never opened from the chat (only web pages and workspace files)'],
    ["javascript:alert(1", 'links with the scheme "javascript:" are never opened from the chat (only web pages and workspace files)'],
    ["data:text/html,x", 'links with the scheme "data:" are never opened from the chat (only web pages and workspace files)'],
    ["docs/missing.md", "there is no such file in the workspace"],
  ])("refuses %s in words and opens nothing", async (href, reason) => {
    await click(href);
    expect(opened).toEqual([]);
    expect(external).toEqual([]);
    expect(mock.executed).toEqual([]);
    expect(server.sent).toEqual([]);
    expect(informed).toEqual([`Lich: the link "${href}" in the chat was not opened: ${reason}.`]);
  });

  it("the webview gets no command URIs, and a link it reports reaches the extension's decision", async () => {
    const provider = new ChatViewProvider(Uri.file("/ext") as never, session);
    let receive: (message: unknown) => void = () => undefined;
    const webview = {
      options: {} as Record<string, unknown>,
      html: "",
      cspSource: "vscode-webview://x",
      asWebviewUri: (uri: unknown) => uri,
      onDidReceiveMessage: (listener: (message: unknown) => void) => {
        receive = listener;
        return { dispose: () => undefined };
      },
      postMessage: async () => true,
    };
    provider.resolveWebviewView({ webview, onDidDispose: () => ({ dispose: () => undefined }), visible: true, show: () => undefined } as never);
    expect(webview.options.enableCommandUris).toBeUndefined();
    expect(webview.options).toEqual({ enableScripts: true, localResourceRoots: [Uri.joinPath(Uri.file("/ext"), "dist")] });
    receive({ type: "openLink", href: "command:workbench.action.quit" });
    receive({ type: "openLink", href: "docs/notes.md" });
    await vi.waitFor(() => expect(informed).toHaveLength(1));
    await vi.waitFor(() => expect(opened).toEqual([[`file://${ws}/docs/notes.md`]]));
    expect(mock.executed).toEqual([]);
    expect(informed[0]).toMatch(/^Lich: the link "command:workbench.action.quit" in the chat was not opened/);
    provider.dispose();
  });
});

describe("ChatSession: Open file opens what the server reported edited", () => {
  it("an edit whose path the model chose opens the file the server wrote, not that path", async () => {
    // write_file {path: "file:///etc/passwd"}: the tool resolves it against the root, as a
    // relative path, and the server reports what it wrote.
    const asked = session.send("write it");
    session.onEvent(event("run_start", "t1", server.sent[0].args.new_thread as string));
    server.finishAsk({ task_id: "t1", thread: "th1", turn: 1, stopped_reason: "final", edited: ["file:///ws/file%3A/etc/passwd"] });
    await asked;
    await session.onMessage({ type: "openEdited", task_id: "t1", path: "file:///etc/passwd" });
    expect(opened).toEqual([["file:///ws/file%3A/etc/passwd"]]);
    // A path naming another file entirely: the turn's one reported file opens all the same.
    await session.onMessage({ type: "openEdited", task_id: "t1", path: "../../etc/passwd" });
    expect(opened.at(-1)).toEqual(["file:///ws/file%3A/etc/passwd"]);
    // By the turn number (a reloaded turn without a task id).
    await session.onMessage({ type: "openEdited", turn: 1, path: "whatever" });
    expect(opened).toHaveLength(3);
    expect(informed).toEqual([]);
  });

  it("with several files reported, the call's path picks one; a path naming none opens nothing", async () => {
    const asked = session.send("two files");
    session.onEvent(event("run_start", "t2", server.sent[0].args.new_thread as string));
    server.finishAsk({ task_id: "t2", thread: "th1", stopped_reason: "final", edited: ["file:///ws/a.py", "file:///ws/src/b.py"] });
    await asked;
    await session.onMessage({ type: "openEdited", task_id: "t2", path: "./src/b.py" });
    await session.onMessage({ type: "openEdited", task_id: "t2", path: "/ws/a.py" });
    expect(opened).toEqual([["file:///ws/src/b.py"], ["file:///ws/a.py"]]);
    await session.onMessage({ type: "openEdited", task_id: "t2", path: "/etc/passwd" });
    expect(opened).toHaveLength(2);
    expect(informed).toEqual(['Lich: the edit names "/etc/passwd", which is not one of the files the server reported for this turn (a.py, src/b.py); nothing was opened.']);
  });

  it("a URI the server never reported is not opened", async () => {
    await session.onMessage({ type: "openEdited", uri: "file:///etc/passwd" });
    await session.onMessage({ type: "openEdited", task_id: "t404", path: "file:///etc/passwd" });
    expect(opened).toEqual([]);
    expect(informed[0]).toBe('Lich: "file:///etc/passwd" was not opened: the server did not report it as a file the agent edited.');
    expect(informed[1]).toBe("Lich: the server has not reported a file written by this turn (yet), so nothing was opened.");
  });

  it("while the turn runs, asks the server what the task wrote so far (its undo journal, its hunks)", async () => {
    void session.send("edit");
    session.onEvent(event("run_start", "t3", server.sent[0].args.new_thread as string));
    server.answers["lich.status"] = { undoable_tasks: [{ task_id: "t1", files: ["other.py"] }, { task_id: "t3", files: ["greet.py"], running: true }] };
    server.answers["lich.reviewList"] = { hunks: [] };
    await session.onMessage({ type: "openEdited", task_id: "t3", path: "file:///etc/passwd" });
    expect(opened).toEqual([["file:///ws/greet.py"]]);
  });

  it("a reloaded thread's turns carry their files as the server's URIs, and Changed: opens only those", async () => {
    server.answers["lich.thread"] = { thread: "th1", turns: [{ turn: 1, prompt: "p", files: ["greet.py"], task_id: "t7" }, { turn: 2, prompt: "q", files: [] }] };
    session.thread = "th1";
    await session.reload();
    const turns = postedOf("thread")[0].turns;
    expect(turns[0].edited).toEqual([{ path: "greet.py", uri: "file:///ws/greet.py" }]);
    expect(turns[1].edited).toBeUndefined();
    await session.onMessage({ type: "openEdited", uri: "file:///ws/greet.py", line: 2 });
    await session.onMessage({ type: "openEdited", task_id: "t7", path: "greet.py" });
    await session.onMessage({ type: "openEdited", uri: "file:///ws/not-edited.py" });
    expect(opened).toEqual([["file:///ws/greet.py", 2], ["file:///ws/greet.py"]]);
    expect(informed).toHaveLength(1);
  });
});

describe("chatHtml", () => {
  it("has a strict content security policy: nothing remote, scripts only by nonce", () => {
    const nonce = makeNonce();
    expect(nonce).toMatch(/^[A-Za-z0-9]{32}$/);
    const html = chatHtml({ cspSource: "https://file+.vscode-resource.vscode-cdn.net", scriptUri: "https://file+.vscode-resource.vscode-cdn.net/ext/dist/chat.js", nonce });
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)![1];
    expect(csp).toContain("default-src &#39;none&#39;");
    expect(csp).toContain(`script-src &#39;nonce-${nonce}&#39;`);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(html).toContain(`<script nonce="${nonce}" src="https://file+.vscode-resource.vscode-cdn.net/ext/dist/chat.js">`);
    // Colours come from the theme only.
    expect(html).toMatch(/var\(--vscode-foreground\)/);
    expect(html).not.toMatch(/#[0-9a-f]{6}\b|rgb\(/i);
  });
});
