/**
 * End-of-task notifications (src/tasks.ts, src/extension.ts): the extension declares
 * taskNotifications, so the server sends none; a task from the palette or a code action ends in
 * ONE short notification with "Open chat" (which shows its thread in the chat); a chat turn ends
 * in the chat only.
 */
import { beforeEach, describe, expect, it, vi } from "vitest";
import { activate } from "../src/extension";
import { OPEN_CHAT_ACTION, TaskNotificationsCapability, taskNotice } from "../src/tasks";
import { clients } from "./mocks/languageclient";
import { mock, window } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

describe("the notice for a finished task", () => {
  it("is one line: the task and the answer's first line, clipped, with the thread to open", () => {
    const long = "x".repeat(300);
    expect(taskNotice({ task_id: "t1", thread: "th1", stopped_reason: "final", final: `\n\nIt adds two numbers.\nMore detail here.` }, "Explain add()")).toEqual({
      level: "info",
      message: "Lich: Explain add(): It adds two numbers.",
      thread: "th1",
    });
    const clipped = taskNotice({ stopped_reason: "final", final: long }, "Explain")!.message;
    expect(clipped.length).toBeLessThan(140);
    expect(clipped.endsWith("…")).toBe(true);
    expect(clipped.includes("\n")).toBe(false);
  });

  it("says a failure, a cancel and a turn limit in plain words", () => {
    expect(taskNotice({ stopped_reason: "error", error: "the model server did not answer (connection refused)\ntrace", thread: "th" }, "Fix it")).toEqual({
      level: "error",
      message: "Lich: Fix it failed: the model server did not answer (connection refused)",
      thread: "th",
    });
    expect(taskNotice({ stopped_reason: "aborted" }, "Fix it")).toEqual({ level: "warning", message: "Lich: Fix it: cancelled." });
    expect(taskNotice({ stopped_reason: "budget" }, "Fix it")?.message).toBe("Lich: Fix it: stopped after its turn limit (lich.maxTurns).");
    // Review mode without a text answer: what waits for review.
    expect(taskNotice({ stopped_reason: "final", final: "", review_message: "2 changes wait for your review" }, "Fix it")?.message).toBe("Lich: Fix it: 2 changes wait for your review");
    expect(taskNotice(undefined, "x")).toBeUndefined();
  });

  it("the capability the server reads", () => {
    const caps: { experimental?: unknown } = { experimental: { lich: { saveDocuments: true } } };
    new TaskNotificationsCapability().fillClientCapabilities(caps);
    expect(caps).toEqual({ experimental: { lich: { saveDocuments: true, taskNotifications: true } } });
  });
});

function context() {
  const state = new Map<string, unknown>();
  return {
    subscriptions: [] as { dispose(): void }[],
    extensionUri: { scheme: "file", path: "/ext" },
    workspaceState: { get: (k: string, d: unknown) => (state.has(k) ? state.get(k) : d), update: async (k: string, v: unknown) => void state.set(k, v) },
  };
}

function fakeWebviewView() {
  const listeners: ((message: unknown) => void)[] = [];
  const view = {
    visible: true,
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
    show: () => undefined,
    onDidDispose: () => ({ dispose: () => undefined }),
    send: (message: unknown) => listeners.forEach((listener) => listener(message)),
  };
  return view;
}

describe("in the extension", () => {
  beforeEach(() => {
    mock.reset();
    clients.length = 0;
    (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
  });

  it("a code action's task ends in one notification whose Open chat shows its thread", async () => {
    const ctx = context();
    await activate(ctx as never);
    mock.infoChoice = OPEN_CHAT_ACTION;
    const middleware = clients[0].clientOptions.middleware as { executeCommand(c: string, a: unknown[], n: unknown): Promise<unknown> };
    await middleware.executeCommand("lich.ask", [{ prompt: "Explain this code" }], async () => ({ task_id: "t3", thread: "th-9", stopped_reason: "final", final: "It greets.\nDetails." }));
    expect(mock.infoPrompts).toEqual([{ message: "Lich: Explain this code: It greets.", actions: [OPEN_CHAT_ACTION] }]);
    // Open chat: the chat's thread becomes th-9 (kept for the view) and the view is focused.
    await vi.waitFor(() => expect(mock.executed.map((e) => e.command)).toContain("lichClient.chat.focus"));
    expect(ctx.workspaceState.get("lich.chatThread", undefined)).toBe("th-9");
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("a palette task (chat closed) ends in one notification too", async () => {
    const ctx = context();
    await activate(ctx as never);
    mock.onQuickPickShown = (pick) => {
      pick.type("Add a docstring");
      pick.accept();
    };
    clients[0].responses["lich.ask"] = { task_id: "t1", thread: "th-1", stopped_reason: "final", final: "Added a docstring to greet()." };
    await mock.commands.get("lichClient.askAgent")!();
    expect(mock.infoPrompts).toEqual([{ message: "Lich: Add a docstring: Added a docstring to greet().", actions: [OPEN_CHAT_ACTION] }]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("a chat turn ends in the chat only", async () => {
    const ctx = context();
    await activate(ctx as never);
    const view = fakeWebviewView();
    (mock.webviewViewProviders.get("lichClient.chat")!.provider as { resolveWebviewView(v: unknown): void }).resolveWebviewView(view);
    clients[0].responses["lich.threads"] = { threads: [] };
    view.send({ type: "ready" });
    clients[0].responses["lich.ask"] = { task_id: "t1", thread: "th1", turn: 1, stopped_reason: "final", final: "It adds." };
    view.send({ type: "send", prompt: "what does add do?" });
    await vi.waitFor(() => expect(view.posted.map((m) => m.type)).toContain("turnEnd"));
    expect(clients[0].sent.some((s) => s.command === "lich.ask")).toBe(true);
    expect(mock.infoPrompts).toEqual([]);
    expect(mock.errors).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

describe("errors in notifications", () => {
  it("lose the JSON-RPC wrapping and the command id; a lost server is said in plain words", async () => {
    const { toastError } = await import("../src/tasks");
    expect(toastError(new Error("Request lich.ask failed with message: lich.ask: the thread th1 is busy"))).toBe("the thread th1 is busy");
    expect(toastError(new Error("Connection got disposed."))).toBe("the language server stopped (it restarts by itself)");
    expect(taskNotice({ stopped_reason: "error", error: "Request lich.ask failed with message: the model server did not answer" }, "Fix")?.message).toBe(
      "Lich: Fix failed: the model server did not answer",
    );
  });
});
