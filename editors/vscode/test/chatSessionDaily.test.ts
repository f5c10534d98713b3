/**
 * The extension's side of the chat as a daily driver (issue #45): `origin: "chat"` on every turn,
 * the editor context (active file and selection) sent by default and removable, a code block's
 * Copy / Insert / Apply (a patch through lich.applyPatch, other code as an agent turn on the
 * file), Accept all / Reject all, and the model picker's data.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { ToView } from "../src/chatProtocol";
import { applyPrompt, ChatSession, editorContext, isHashlinePatch, type EditorLike } from "../src/chatView";
import { PromptHistory } from "../src/prompt";
import { TaskTracker } from "../src/tasks";
import { mock, Uri } from "./mocks/vscode";

interface Sent {
  command: string;
  args: Record<string, unknown>;
}

let sent: Sent[];
let answers: Record<string, unknown>;
let posted: ToView[];
let session: ChatSession;
let copied: string[];
let inserted: string[];
let editorOpen: boolean;
let configured: number;
let setUp: number;
let finishAsk: (value: unknown) => void;

function postedOf<K extends ToView["type"]>(kind: K): Extract<ToView, { type: K }>[] {
  return posted.filter((m): m is Extract<ToView, { type: K }> => m.type === kind);
}

function memento() {
  const values = new Map<string, unknown>();
  return {
    get: <T>(key: string) => values.get(key) as T,
    update: async (key: string, value: unknown) => void values.set(key, value),
  };
}

function editor(path: string, selection?: [number, number, number, number]): EditorLike {
  const [sl, sc, el, ec] = selection ?? [0, 0, 0, 0];
  return {
    document: { uri: Uri.file(path), isUntitled: false },
    selection: { isEmpty: selection === undefined, start: { line: sl, character: sc }, end: { line: el, character: ec } },
  };
}

beforeEach(() => {
  mock.reset();
  mock.workspaceFolders = [{ uri: Uri.file("/ws"), name: "ws", index: 0 }];
  sent = [];
  answers = {};
  posted = [];
  copied = [];
  inserted = [];
  editorOpen = true;
  configured = 0;
  setUp = 0;
  const state = memento();
  session = new ChatSession({
    request: async <T>(command: string, args: Record<string, unknown>): Promise<T> => {
      sent.push({ command, args });
      if (command === "lich.ask") {
        return new Promise<T>((resolve) => (finishAsk = resolve as (value: unknown) => void));
      }
      return answers[command] as T;
    },
    history: new PromptHistory(state),
    tasks: new TaskTracker(),
    state,
    openFile: () => undefined,
    openExternal: () => undefined,
    inform: () => undefined,
    copyText: async (text) => void copied.push(text),
    insertText: async (text) => {
      if (editorOpen) {
        inserted.push(text);
      }
      return editorOpen;
    },
    configureModels: () => configured++,
    setUpModel: () => setUp++,
  });
  session.attach((m) => posted.push(m));
});

describe("editor context", () => {
  it("labels the active file and its selection (lines counted from 1; a selection ending at column 0 leaves that line out)", () => {
    expect(editorContext(editor("/ws/src/greet.py"))).toEqual({ uri: "file:///ws/src/greet.py", label: "src/greet.py" });
    expect(editorContext(editor("/ws/greet.py", [1, 0, 3, 0]))).toEqual({
      uri: "file:///ws/greet.py",
      range: { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } },
      label: "greet.py:2-3",
    });
    expect(editorContext(editor("/ws/greet.py", [4, 2, 4, 9]))?.label).toBe("greet.py:5");
    expect(editorContext({ document: { uri: Uri.parse("output:extension-output"), isUntitled: false }, selection: editor("/x").selection })).toBeUndefined();
    expect(editorContext(undefined)).toBeUndefined();
  });

  it("sends the active file and selection with a chat turn (origin: chat) until the chip is removed, and again for another file", async () => {
    session.setEditorContext(editorContext(editor("/ws/greet.py", [1, 0, 2, 5])));
    expect(postedOf("context").pop()).toEqual({ type: "context", label: "greet.py:2-3" });
    // The same chip again (a cursor move that changes nothing shown): not posted again.
    const count = postedOf("context").length;
    session.setEditorContext(editorContext(editor("/ws/greet.py", [1, 0, 2, 5])));
    expect(postedOf("context")).toHaveLength(count);
    const first = session.send("Explain this");
    expect(sent[0]).toEqual({
      command: "lich.ask",
      args: { prompt: "Explain this", origin: "chat", uri: "file:///ws/greet.py", range: { start: { line: 1, character: 0 }, end: { line: 2, character: 5 } }, new_thread: expect.any(String) },
    });
    expect(postedOf("turnStart")[0].attachment).toBe("greet.py:2-3");
    finishAsk({ task_id: "t1", thread: "th1", stopped_reason: "final" });
    await first;
    // The user removes the chip: the next message goes without it, also after the selection moves.
    await session.onMessage({ type: "dropContext" });
    const shown = postedOf("context").length;
    session.setEditorContext(editorContext(editor("/ws/greet.py", [5, 0, 6, 0])));
    // The view hid the chip itself; the moved selection in the same file does not bring it back.
    expect(postedOf("context")).toHaveLength(shown);
    expect(session.currentContext()).toBeUndefined();
    const second = session.send("And in general?");
    expect(sent.filter((s) => s.command === "lich.ask")[1].args).toEqual({ prompt: "And in general?", origin: "chat", thread: "th1" });
    finishAsk({ task_id: "t2", thread: "th1", stopped_reason: "final" });
    await second;
    // Another file is active: it is attached again.
    session.setEditorContext(editorContext(editor("/ws/other.py")));
    expect(postedOf("context").pop()).toEqual({ type: "context", label: "other.py" });
    void session.send("What about this one?");
    expect(sent.filter((s) => s.command === "lich.ask")[2].args).toMatchObject({ uri: "file:///ws/other.py", origin: "chat" });
  });
});

describe("code block buttons", () => {
  it("Copy puts the code on the clipboard; Insert at cursor edits the active editor, or says why not", async () => {
    await session.onMessage({ type: "copyCode", code: "x = 1" });
    expect(copied).toEqual(["x = 1"]);
    await session.onMessage({ type: "insertCode", code: "y = 2" });
    expect(inserted).toEqual(["y = 2"]);
    editorOpen = false;
    await session.onMessage({ type: "insertCode", code: "z = 3" });
    expect(postedOf("notice").pop()?.notice.text).toMatch(/needs an open editor/);
  });

  it("Apply to file: a hashline patch goes to lich.applyPatch (the server's edit path) and says what it edited", async () => {
    const patch = "@@ greet.py\n= 2:9f\n~    return 1\n";
    expect(isHashlinePatch(patch)).toBe(true);
    expect(isHashlinePatch("def f():\n    pass")).toBe(false);
    answers["lich.applyPatch"] = { ok: true, output: "Edited greet.py (+1 -1)", error: null, edited: ["file:///ws/greet.py"] };
    await session.onMessage({ type: "applyCode", code: patch, language: "hashline" });
    expect(sent).toEqual([{ command: "lich.applyPatch", args: { patch, label: "Lich: apply from the chat" } }]);
    expect(postedOf("notice").pop()?.notice).toEqual({ level: "info", text: "Edited greet.py (+1 -1)" });
    answers["lich.applyPatch"] = { ok: false, output: "", error: "stale_anchor: line 2 changed" };
    await session.onMessage({ type: "applyCode", code: patch });
    expect(postedOf("notice").pop()?.notice).toEqual({ level: "error", text: "The patch was not applied: stale_anchor: line 2 changed" });
  });

  it("Apply to file: other code becomes a chat message asking the agent to apply it to the active file", async () => {
    await session.onMessage({ type: "applyCode", code: "def greet(name):\n    return f'Hi {name}'", language: "python" });
    expect(postedOf("notice").pop()?.notice.text).toMatch(/open it in the editor/);
    session.setEditorContext(editorContext(editor("/ws/greet.py", [0, 0, 1, 4])));
    await session.onMessage({ type: "dropContext" }); // the chip is off, but Apply still names the file
    await session.onMessage({ type: "applyCode", code: "def greet(name):\n    return f'Hi {name}'", language: "python" });
    const submit = postedOf("submit").pop()!;
    expect(submit).toEqual({
      type: "submit",
      prompt: applyPrompt("def greet(name):\n    return f'Hi {name}'", "python", "greet.py"),
      uri: "file:///ws/greet.py",
      label: "greet.py",
    });
    expect(submit.prompt).toBe("Apply this code to greet.py, changing only what it covers:\n\n```python\ndef greet(name):\n    return f'Hi {name}'\n```");
    // The view sends it back (now, or when the running turn ends): it is about that file.
    void session.onMessage({ type: "send", prompt: submit.prompt, uri: submit.uri });
    expect(sent.find((s) => s.command === "lich.ask")?.args).toMatchObject({ uri: "file:///ws/greet.py", origin: "chat" });
    expect(sent.find((s) => s.command === "lich.ask")?.args.range).toBeUndefined();
  });
});

describe("review and the header", () => {
  it("Accept all / Reject all run lich.acceptAll / lich.rejectAll and refresh the hunks", async () => {
    answers["lich.acceptAll"] = { ok: true };
    answers["lich.reviewList"] = { hunks: [] };
    await session.onMessage({ type: "reviewAll", accept: true });
    answers["lich.rejectAll"] = { ok: false, error: "nothing is pending" };
    await session.onMessage({ type: "reviewAll", accept: false });
    expect(sent.map((s) => s.command)).toEqual(["lich.acceptAll", "lich.reviewList", "lich.rejectAll", "lich.reviewList"]);
    expect(postedOf("notice").pop()?.notice).toEqual({ level: "error", text: "nothing is pending" });
  });

  it("sends lich.status's configured models to the picker (none when the user configured none); a picked one runs the next turns; Configure opens the config", async () => {
    answers["lich.status"] = {
      provider: { name: "fake", kind: "openai_compat", model: "fake-model", configured: true },
      models: [
        { name: "fake", kind: "openai_compat", model: "fake-model" },
        { name: "big", kind: "anthropic", model: "claude" },
        { kind: "broken" },
      ],
    };
    await session.sendModels();
    const models = [
      { name: "fake", label: "fake (openai_compat/fake-model)" },
      { name: "big", label: "big (anthropic/claude)" },
    ];
    expect(postedOf("models").pop()).toEqual({ type: "models", current: "fake", models, configured: true });
    await session.onMessage({ type: "pickModel", name: "big" });
    expect(postedOf("models").pop()).toEqual({ type: "models", current: "big", models, configured: true });
    const turn = session.send("hello");
    expect(sent.find((s) => s.command === "lich.ask")?.args).toMatchObject({ prompt: "hello", model: "big", origin: "chat" });
    finishAsk({ task_id: "t1", thread: "th1", stopped_reason: "final" });
    await turn;
    answers["lich.status"] = { provider: { kind: "ollama", model: "llama3.1", configured: false }, models: [] };
    await session.sendModels();
    expect(postedOf("models").pop()).toEqual({ type: "models", current: undefined, models: [], configured: false });
    await session.onMessage({ type: "configureModels" }); // "Set up a model…" with none configured
    expect([configured, setUp]).toEqual([0, 1]);
    answers["lich.status"] = { provider: { name: "fake", configured: true }, models: [{ name: "fake" }] };
    await session.sendModels();
    await session.onMessage({ type: "configureModels" });
    expect([configured, setUp]).toEqual([1, 1]);
  });
});
