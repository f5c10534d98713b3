import { readFileSync } from "node:fs";
import * as path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { activate } from "../src/extension";
import { TranscriptRenderer } from "../src/transcript";
import { loadFixture } from "./events";
import { clients } from "./mocks/languageclient";
import { mock, window } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

function context() {
  const state = new Map<string, unknown>();
  return {
    subscriptions: [] as { dispose(): void }[],
    workspaceState: { get: (k: string, d: unknown) => (state.has(k) ? state.get(k) : d), update: async (k: string, v: unknown) => void state.set(k, v) },
  };
}

beforeEach(() => {
  mock.reset();
  clients.length = 0;
  (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
});

describe("activate", () => {
  it("starts the configured server with mapped initializationOptions and the save capability", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.config["lich.server.args"] = { global: ["-m", "lich_lsp"] };
    mock.config["lich.editMode"] = { global: "review" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    expect(clients).toHaveLength(1);
    const client = clients[0];
    expect(client.id).toBe("lich"); // so lich.trace.server is the trace setting
    expect(client.serverOptions).toMatchObject({ command: "/opt/py/bin/python", args: ["-m", "lich_lsp"] });
    expect(client.clientOptions.initializationOptions).toEqual({ edit_mode: "review" });
    const caps: Record<string, unknown> = {};
    client.features.forEach((feature) => feature.fillClientCapabilities(caps));
    expect(caps).toEqual({ experimental: { lich: { saveDocuments: true, reviewHunks: true, taskNotifications: true } } });
    expect([...client.requests.keys()]).toContain("lich/saveDocuments");
    expect([...client.notifications.keys()]).toContain("lich/event");
    expect(mock.errors).toEqual([]);
    // Status bar picks up the provider kind and model from lich.status.
    await vi.waitFor(() => expect(mock.statusItems[0].text).toBe("$(hubot) Lich: openai_compat/fake-model"));
    expect(mock.statusItems[0].tooltip).toContain("@ http://127.0.0.1:9/v1");
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("registers exactly the contributed palette commands and none of the server's", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
    const contributed = (manifest.contributes.commands as { command: string }[]).map((c) => c.command).sort();
    expect([...mock.commands.keys()].sort()).toEqual(contributed);
    expect([...mock.commands.keys()].some((id) => id.startsWith("lich."))).toBe(false);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("shows one actionable error when no server can be found", async () => {
    mock.config["lich.server.command"] = { global: "/does/not/exist/lich-lsp" };
    const ctx = context();
    await activate(ctx as never);
    expect(clients).toHaveLength(0);
    expect(mock.errors).toHaveLength(1);
    expect(mock.errors[0].message).toContain("pip install lich-lsp");
    expect(mock.errors[0].actions).toContain("Restart Server");
    expect(mock.statusItems[0].text).toContain("no server");
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("passes only read capability in an untrusted workspace", async () => {
    mock.isTrusted = false;
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    expect(clients[0].clientOptions.initializationOptions).toEqual({ capabilities: ["file/read"], workspace_trust: "never" });
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("Ask Agent sends lich.ask with the typed prompt, the active file and the selection", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    const selection = { isEmpty: false, start: 1, end: 2 };
    (window as { activeTextEditor: unknown }).activeTextEditor = {
      selection,
      document: { isUntitled: false, uri: { toString: () => "file:///ws/a.py" } },
    };
    clients[0].responses["lich.ask"] = { task_id: "t1", stopped_reason: "final" };
    mock.onQuickPickShown = (pick) => {
      pick.type("add a docstring");
      pick.accept();
    };
    const result = await mock.commands.get("lichClient.askAgent")!();
    expect(result).toEqual({ task_id: "t1", stopped_reason: "final" });
    const ask = clients[0].sent.find((s) => s.command === "lich.ask")!;
    expect(ask.arguments).toEqual([{ prompt: "add a docstring", uri: "file:///ws/a.py", range: { converted: selection } }]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("after a task the status bar shows the MCP servers lich.status reports, marking a failed one", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    await vi.waitFor(() => expect(mock.statusItems[0].text).toBe("$(hubot) Lich: openai_compat/fake-model"));
    // The default (older) status has no mcp_servers: no MCP line in the tooltip.
    expect(mock.statusItems[0].tooltip).not.toContain("MCP");
    clients[0].responses["lich.status"] = {
      ...(clients[0].responses["lich.status"] as object),
      mcp_servers: [
        { name: "files", transport: "stdio", state: "connected", tools: 12, last_error: null },
        { name: "web", transport: "http", state: "failed", tools: 0, last_error: "HTTP 502: bad gateway" },
      ],
    };
    clients[0].responses["lich.ask"] = { task_id: "t1", stopped_reason: "final" };
    mock.onQuickPickShown = (pick) => {
      pick.type("use the tools");
      pick.accept();
    };
    await mock.commands.get("lichClient.askAgent")!();
    await vi.waitFor(() => expect(mock.statusItems[0].text).toBe("$(hubot) Lich: openai_compat/fake-model $(warning)"));
    expect(mock.statusItems[0].tooltip).toContain("MCP files: connected, 12 tools\nMCP web: failed: HTTP 502: bad gateway");
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("the saveDocuments handler saves the open dirty document it is asked for", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const save = vi.fn(async () => true);
    const other = vi.fn(async () => true);
    mock.textDocuments = [
      { uri: { toString: () => "file:///ws/a.py" }, isDirty: true, save },
      { uri: { toString: () => "file:///ws/b.py" }, isDirty: true, save: other },
    ];
    const ctx = context();
    await activate(ctx as never);
    const reply = await clients[0].requests.get("lich/saveDocuments")!({ uris: ["file:///ws/a.py"] });
    expect(reply).toEqual({ saved: ["file:///ws/a.py"], failed: [] });
    expect(save).toHaveBeenCalledOnce();
    expect(other).not.toHaveBeenCalled();
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("renders lich/event into the transcript channel", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    const notify = clients[0].notifications.get("lich/event")!;
    // A whole run from the shared fixtures (validated against docs/lich-event.schema.json).
    const events = loadFixture("run_tools_retry");
    const expected = new TranscriptRenderer();
    notify(events[0]);
    expect(mock.statusItems[0].text).toBe("$(sync~spin) Lich: 1 task");
    expect(mock.statusItems[0].tooltip).toContain("t1");
    events.slice(1).forEach((event) => notify(event));
    expect(mock.outputs.get("Lich Transcript")!.join("")).toBe(events.map((event) => expected.render(event)).join(""));
    expect(mock.outputs.get("Lich Transcript")!.join("")).toContain("▶ task t1 (fake-model)\n");
    expect(mock.statusItems[0].text).not.toContain("task");
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("Cancel Task cancels the one running task and ignores finished ones", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    clients[0].responses["lich.status"] = {
      tasks: [
        { task_id: "t1", title: "done already", state: "final" },
        { task_id: "t2", title: "slow one", state: "running" },
      ],
    };
    clients[0].responses["lich.cancel"] = { cancelled: ["t2"] };
    await mock.commands.get("lichClient.cancelTask")!();
    const cancels = clients[0].sent.filter((s) => s.command === "lich.cancel");
    expect(cancels).toEqual([{ command: "lich.cancel", arguments: [{ task_id: "t2" }] }]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("Open Task Transcript says so when no task has finished, then opens the last task's transcript in a preview tab", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    await mock.commands.get("lichClient.openTranscript")!();
    expect(mock.infos).toEqual(["Lich: no task has finished in this session yet, so there is no transcript to open."]);
    expect(mock.shownDocuments).toEqual([]);
    // Two tasks from the palette: the command opens the later one's file.
    (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
    mock.onQuickPickShown = (pick) => {
      pick.type("explain");
      pick.accept();
    };
    clients[0].responses["lich.ask"] = { task_id: "t1", stopped_reason: "final", transcript: "file:///state/transcripts/t1.md" };
    await mock.commands.get("lichClient.askAgent")!();
    clients[0].responses["lich.ask"] = { task_id: "t2", stopped_reason: "final", transcript: "file:///state/transcripts/t2.md" };
    await mock.commands.get("lichClient.askAgent")!();
    await mock.commands.get("lichClient.openTranscript")!();
    expect(mock.shownDocuments).toEqual([{ uri: "file:///state/transcripts/t2.md", options: { preview: true } }]);
    // A code action's lich.ask (through the middleware) counts too.
    const middleware = clients[0].clientOptions.middleware as { executeCommand(c: string, a: unknown[], n: unknown): Promise<unknown> };
    await middleware.executeCommand("lich.ask", [{ prompt: "Fix this" }], async () => ({ task_id: "t3", transcript: "file:///state/transcripts/t3.md" }));
    await mock.commands.get("lichClient.openTranscript")!();
    expect(mock.shownDocuments.at(-1)).toEqual({ uri: "file:///state/transcripts/t3.md", options: { preview: true } });
    expect(mock.infos.filter((m) => m.includes("no task has finished"))).toHaveLength(1);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("Cancel Task with nothing running says so and sends nothing", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    clients[0].responses["lich.status"] = { tasks: [{ task_id: "t1", state: "aborted" }] };
    await mock.commands.get("lichClient.cancelTask")!();
    expect(clients[0].sent.some((s) => s.command === "lich.cancel")).toBe(false);
    expect(mock.infos).toContain("Lich: no task is running.");
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

/** A webview view as VS Code hands it to the provider: records the page and the messages. */
function fakeWebviewView() {
  const listeners: ((message: unknown) => void)[] = [];
  const view = {
    visible: true,
    shown: 0,
    posted: [] as { type: string; [key: string]: unknown }[],
    webview: {
      options: {} as Record<string, unknown>,
      html: "",
      cspSource: "vscode-webview://fake",
      asWebviewUri: (uri: { path: string }) => ({ toString: () => `vscode-webview://fake${uri.path}` }),
      onDidReceiveMessage: (listener: (message: unknown) => void) => {
        listeners.push(listener);
        return { dispose: () => undefined };
      },
      postMessage: async (message: { type: string }) => {
        view.posted.push(message);
        return true;
      },
    },
    show: () => void (view.shown += 1),
    onDidDispose: () => ({ dispose: () => undefined }),
    /** Test helper: the view's script posts a message. */
    send: (message: unknown) => listeners.forEach((listener) => listener(message)),
  };
  return view;
}

describe("the Lich chat view", () => {
  async function openChat() {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = { ...context(), extensionUri: { scheme: "file", path: "/ext" } };
    await activate(ctx as never);
    const registered = mock.webviewViewProviders.get("lichClient.chat")!;
    expect(registered.options).toEqual({ webviewOptions: { retainContextWhenHidden: true } });
    const view = fakeWebviewView();
    (registered.provider as { resolveWebviewView(v: unknown): void }).resolveWebviewView(view);
    clients[0].responses["lich.threads"] = { threads: [] };
    view.send({ type: "ready" });
    await vi.waitFor(() => expect(view.posted.map((m) => m.type)).toContain("threads"));
    return { ctx, view };
  }

  it("serves its page from dist/chat.js under the CSP, and Lich: Open Chat focuses the view's input", async () => {
    const { ctx, view } = await openChat();
    expect(view.webview.options).toEqual({ enableScripts: true, localResourceRoots: [expect.objectContaining({ path: "/ext/dist" })] });
    expect(view.webview.html).toContain('src="vscode-webview://fake/ext/dist/chat.js"');
    expect(view.webview.html).toContain("default-src 'none'".replace(/'/g, "&#39;"));
    await mock.commands.get("lichClient.openChat")!();
    expect(mock.executed.map((e) => e.command)).toContain("lichClient.chat.focus");
    expect(view.posted.at(-1)).toEqual({ type: "focusInput" });
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("with the view open, Ask About Selection attaches the selection there and the next message carries it", async () => {
    const { ctx, view } = await openChat();
    const selection = { isEmpty: false, start: { line: 1, character: 0 }, end: { line: 3, character: 0 } };
    (window as { activeTextEditor: unknown }).activeTextEditor = {
      selection,
      document: { isUntitled: false, uri: { toString: () => "file:///ws/a.py" } },
    };
    clients[0].code2ProtocolConverter.asRange = (r: unknown) => r;
    await mock.commands.get("lichClient.askAboutSelection")!();
    expect(mock.quickPicks).toHaveLength(0); // no input box: the chat takes the question
    expect(view.posted).toContainEqual({ type: "attachment", label: "a.py:2-3" });
    clients[0].responses["lich.ask"] = { task_id: "t1", thread: "th1", stopped_reason: "final", final: "It adds." };
    view.send({ type: "send", prompt: "what does this do?" });
    await vi.waitFor(() => expect(view.posted.map((m) => m.type)).toContain("turnEnd"));
    const ask = clients[0].sent.find((s) => s.command === "lich.ask")!;
    expect(ask.arguments).toEqual([{ prompt: "what does this do?", uri: "file:///ws/a.py", range: selection, origin: "chat", new_thread: expect.any(String) }]);
    // A code action's lich.ask with its own prompt continues the chat's thread.
    const middleware = clients[0].clientOptions.middleware as { executeCommand(c: string, a: unknown[], n: unknown): Promise<unknown> };
    const next = vi.fn();
    await middleware.executeCommand("lich.ask", [{ prompt: "Fix this", uri: "file:///ws/a.py" }], next);
    expect(next).not.toHaveBeenCalled();
    expect(clients[0].sent.filter((s) => s.command === "lich.ask")[1].arguments).toEqual([{ prompt: "Fix this", uri: "file:///ws/a.py", origin: "chat", thread: "th1" }]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("in review mode the end of a chat turn shows the first pending hunk, not a transcript", async () => {
    const { ctx, view } = await openChat();
    const range = { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } };
    mock.setDiagnostics("file:///ws/other.py", [{ source: "lich tests", code: "x", range }]);
    mock.setDiagnostics("file:///ws/greet.py", [{ source: "lich review", code: "h1", range, message: "replace line 2" }]);
    clients[0].responses["lich.ask"] = { task_id: "t4", thread: "th4", stopped_reason: "final", final: "Proposed.", review: "pending" };
    view.send({ type: "send", prompt: "use an f-string" });
    await vi.waitFor(() => expect(mock.shownDocuments).toHaveLength(1));
    expect(mock.shownDocuments[0]).toEqual({ uri: "file:///ws/greet.py", options: { selection: range, preview: false } });
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("a chat turn's Transcript link opens that task's transcript through Lich: Open Task Transcript", async () => {
    const { ctx, view } = await openChat();
    clients[0].responses["lich.ask"] = { task_id: "t5", thread: "th5", stopped_reason: "final", final: "Hi.", transcript: "file:///state/transcripts/t5.md" };
    view.send({ type: "send", prompt: "hello" });
    await vi.waitFor(() => expect(view.posted.map((m) => m.type)).toContain("turnEnd"));
    const end = view.posted.find((m) => m.type === "turnEnd") as unknown as { outcome: { transcript?: string } };
    expect(end.outcome.transcript).toBe("file:///state/transcripts/t5.md");
    expect(mock.shownDocuments).toEqual([]); // nothing opens over the user's file by itself
    view.send({ type: "openTranscript", uri: end.outcome.transcript });
    expect(mock.executed).toContainEqual({ command: "lichClient.openTranscript", args: ["file:///state/transcripts/t5.md"] });
    await mock.commands.get("lichClient.openTranscript")!("file:///state/transcripts/t5.md");
    expect(mock.shownDocuments).toEqual([{ uri: "file:///state/transcripts/t5.md", options: { preview: true } }]);
    // The chat's task is the last one finished: the palette command opens the same file.
    await mock.commands.get("lichClient.openTranscript")!();
    expect(mock.shownDocuments).toHaveLength(2);
    expect(mock.shownDocuments[1].uri).toBe("file:///state/transcripts/t5.md");
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("forwards its task's lich/event to the view and reloads the thread when the server is back", async () => {
    const { ctx, view } = await openChat();
    let finish: (value: unknown) => void = () => undefined;
    const original = clients[0].sendRequest.bind(clients[0]);
    let chosen = "";
    clients[0].sendRequest = async (type: unknown, params: { command: string; arguments: unknown[] }) => {
      if (params.command !== "lich.ask") {
        return original(type, params);
      }
      chosen = (params.arguments[0] as { new_thread: string }).new_thread;
      return new Promise((resolve) => (finish = resolve));
    };
    view.send({ type: "send", prompt: "hi" });
    await vi.waitFor(() => expect(view.posted.map((m) => m.type)).toContain("turnStart"));
    const notify = clients[0].notifications.get("lich/event")!;
    notify({ type: "run_start", task_id: "t3", thread: chosen, data: {} });
    notify({ type: "text_delta", task_id: "t3", thread: chosen, data: { text: "Hello" } });
    expect(view.posted.filter((m) => m.type === "event")).toHaveLength(2);
    finish({ task_id: "t3", thread: "th3", stopped_reason: "final", final: "Hello" });
    await vi.waitFor(() => expect(view.posted.map((m) => m.type)).toContain("turnEnd"));
    clients[0].responses["lich.thread"] = { thread: "th3", turns: [{ turn: 1, prompt: "hi", final: "Hello" }] };
    const before = view.posted.length;
    await clients[0].stop();
    await clients[0].start(); // the client's own restart after a crash fires the same state change
    await vi.waitFor(() => expect(view.posted.slice(before).find((m) => m.type === "thread")).toMatchObject({ thread: "th3", turns: [{ turn: 1 }] }));
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("an approval question shows in the visible view only (no duplicate toast); the view's answer answers the server", async () => {
    const { ctx, view } = await openChat();
    const handler = clients[0].requests.get("window/showMessageRequest")!;
    const actions = [{ title: "Allow once" }, { title: "Allow always" }, { title: "Deny" }];
    const answer = handler({ type: 2, message: "lich wants to run terminal (process/exec): runs `ls`", actions }) as Promise<unknown>;
    expect(mock.warningPrompts).toEqual([]);
    const question = view.posted.find((m) => m.type === "approval") as unknown as { approval: { id: number } };
    view.send({ type: "answerApproval", id: question.approval.id, answer: "Allow once" });
    expect(await answer).toEqual({ title: "Allow once" });
    expect(view.posted.at(-1)).toEqual({ type: "approvalDone", id: question.approval.id, answer: "Allow once", where: "chat" });
    // Any other question is the notification's alone.
    mock.warningChoice = undefined;
    expect(await handler({ type: 2, message: "lich: this workspace's .lich/config.json …", actions: [{ title: "Trust" }, { title: "Not now" }] })).toBeNull();
    expect(view.posted.filter((m) => m.type === "approval")).toHaveLength(1);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("a hunk accepted in the editor greys out in the view: review diagnostics changing re-list the hunks", async () => {
    const { ctx, view } = await openChat();
    const listedBefore = clients[0].sent.filter((s) => s.command === "lich.reviewList").length;
    const hunk = { hunk_id: "t4-1", task_id: "t4", uri: "file:///ws/greet.py", start_line: 1, old_text: "a\n", new_text: "b\n", summary: "replace line 2" };
    clients[0].responses["lich.reviewList"] = { hunks: [hunk] };
    const range = { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } };
    mock.setDiagnostics("file:///ws/greet.py", [{ source: "lich review", code: "t4-1", range }]);
    await vi.waitFor(() => expect(view.posted.filter((m) => m.type === "hunks")).toHaveLength(1));
    // Other diagnostics changing do not ask again.
    mock.setDiagnostics("file:///ws/other.py", [{ source: "pyright", code: "x", range }]);
    clients[0].responses["lich.reviewList"] = { hunks: [] };
    mock.setDiagnostics("file:///ws/greet.py", []);
    await vi.waitFor(() => expect(view.posted.filter((m) => m.type === "hunks")).toHaveLength(2));
    expect(view.posted.filter((m) => m.type === "hunks").map((m) => (m as unknown as { hunks: unknown[] }).hunks.length)).toEqual([1, 0]);
    expect(clients[0].sent.filter((s) => s.command === "lich.reviewList")).toHaveLength(listedBefore + 2);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});
