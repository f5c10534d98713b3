import { beforeEach, describe, expect, it, vi } from "vitest";
import { activate } from "../src/extension";
import { ago, pickItems, UNDO_COMMAND, UNDO_TITLE, undoableTasks, undoTaskCommand, type UndoDeps, type UndoPickItem, type UndoResult } from "../src/undo";
import { clients } from "./mocks/languageclient";
import { mock, window } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

const NOW_MS = 1_700_000_000_000;
const STATUS = {
  undoable_tasks: [
    { task_id: "t4", title: "add a docstring", started: NOW_MS / 1000 - 30, files: ["hello.py"], running: true },
    { task_id: "t2", title: "rename greet", started: NOW_MS / 1000 - 7200, files: ["a.py", "b.py", "c.py", "d.py", "e.py"], running: false },
    { title: "no id: dropped" },
  ],
};
const RESULT: UndoResult = { task_id: "t2", ok: true, files: [{ path: "a.py", outcome: "undone" }], task_running: false, message: "lich: undo t2 (rename greet): restored a.py" };

function deps(answer: (items: UndoPickItem[]) => UndoPickItem | undefined, status: unknown = STATUS) {
  const sent: { task_id: string }[] = [];
  const picks: { items: UndoPickItem[]; options: Record<string, unknown> }[] = [];
  const infos: string[] = [];
  const errors: string[] = [];
  const d: UndoDeps = {
    status: async () => status,
    send: async (args) => {
      sent.push(args);
      return RESULT;
    },
    ui: {
      showQuickPick: async (items, options) => {
        picks.push({ items, options });
        return answer(items);
      },
      showInformationMessage: async (message) => void infos.push(message),
      showErrorMessage: async (message) => void errors.push(message),
    },
    now: () => NOW_MS,
  };
  return { d, sent, picks, infos, errors };
}

describe("undoable tasks from lich.status", () => {
  it("keeps well-formed entries, newest first as the server lists them", () => {
    expect(undoableTasks(STATUS).map((t) => t.task_id)).toEqual(["t4", "t2"]);
    expect(undoableTasks({})).toEqual([]);
    expect(undoableTasks(undefined)).toEqual([]);
    expect(undoableTasks({ undoable_tasks: "nope" })).toEqual([]);
  });

  it("shows the title, the id, how long ago and the files", () => {
    const items = pickItems(undoableTasks(STATUS), NOW_MS);
    expect(items.map((i) => [i.label, i.description, i.detail])).toEqual([
      ["add a docstring", "t4 · just now · running", "hello.py"],
      ["rename greet", "t2 · 2 h ago", "a.py, b.py, c.py, d.py and 1 more"],
    ]);
    expect(ago(NOW_MS / 1000 - 3 * 86400, NOW_MS)).toBe("3 days ago");
    expect(ago(NOW_MS / 1000 - 600, NOW_MS)).toBe("10 min ago");
  });
});

describe("Lich: Undo Task", () => {
  it("undoes the task picked from the recent ones", async () => {
    const { d, sent, picks } = deps((items) => items[1]);
    const result = await undoTaskCommand(d);
    expect(picks).toHaveLength(1);
    expect(picks[0].options.title).toBe(UNDO_TITLE);
    expect(picks[0].items.map((i) => i.label)).toEqual(["add a docstring", "rename greet"]);
    expect(sent).toEqual([{ task_id: "t2" }]);
    expect(result).toEqual(RESULT);
  });

  it("sends nothing when the pick is dismissed", async () => {
    const { d, sent } = deps(() => undefined);
    expect(await undoTaskCommand(d)).toBeUndefined();
    expect(sent).toEqual([]);
  });

  it("says so when there is nothing to undo", async () => {
    const { d, sent, picks, infos } = deps(() => undefined, { undoable_tasks: [] });
    expect(await undoTaskCommand(d)).toBeUndefined();
    expect(picks).toEqual([]);
    expect(sent).toEqual([]);
    expect(infos).toEqual(["Lich: no task to undo (the server keeps the last 20 tasks that changed files)."]);
  });

  it("with a task id (a code action, a keybinding) skips the pick", async () => {
    const { d, sent, picks } = deps(() => undefined);
    await undoTaskCommand(d, "t4");
    expect(picks).toEqual([]);
    expect(sent).toEqual([{ task_id: "t4" }]);
  });

  it("shows a failed request as an error", async () => {
    const { d, errors } = deps((items) => items[0]);
    d.send = async () => {
      throw new Error("lich.undoTask: no task 't9' in the undo journal");
    };
    expect(await undoTaskCommand(d)).toBeUndefined();
    // Without the command's id in front (the user did not type lich.undoTask).
    expect(errors).toEqual(["Lich: undoing the task failed: no task 't9' in the undo journal"]);
  });
});

describe("the palette command in the extension", () => {
  function context() {
    return { subscriptions: [] as { dispose(): void }[], workspaceState: { get: (_k: string, d: unknown) => d, update: async () => undefined } };
  }

  beforeEach(() => {
    mock.reset();
    clients.length = 0;
    (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
  });

  it("sends lich.undoTask to the server", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = context();
    await activate(ctx as never);
    const client = clients[0];
    client.responses[UNDO_COMMAND] = RESULT;
    const result = await mock.commands.get("lichClient.undoTask")!("t2");
    expect(client.sent.filter((s) => s.command === UNDO_COMMAND)).toEqual([{ command: UNDO_COMMAND, arguments: [{ task_id: "t2" }] }]);
    expect(result).toEqual(RESULT);
    // Without an id it asks lich.status; the default fake status lists nothing to undo.
    expect(await mock.commands.get("lichClient.undoTask")!()).toBeUndefined();
    expect(mock.infos).toContain("Lich: no task to undo (the server keeps the last 20 tasks that changed files).");
    expect(client.sent.filter((s) => s.command === UNDO_COMMAND)).toHaveLength(1);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});
