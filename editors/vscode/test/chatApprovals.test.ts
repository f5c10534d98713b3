/**
 * Approval questions in the chat (src/approvalRequest.ts with ChatSession.askApproval): the
 * server's window/showMessageRequest shows in the notification and in the view; the first answer
 * wins and the other copy greys out; other questions go to the notification only.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { showMessageRequest, type MessageActionItem, type ShowMessageRequestParams } from "../src/approvalRequest";
import type { ToView } from "../src/chatProtocol";
import { ChatSession } from "../src/chatView";
import { PromptHistory } from "../src/prompt";
import { TaskTracker } from "../src/tasks";

const ACTIONS = [{ title: "Allow once" }, { title: "Allow always" }, { title: "Deny" }];
const QUESTION: ShowMessageRequestParams = {
  type: 2,
  message: 'lich wants to run terminal (process/exec): runs `pytest -q`. Arguments: {"command": "pytest -q"}',
  actions: ACTIONS,
};

const DETAILS = {
  id: "approval-1",
  call_id: "c1",
  turn: 1,
  tool: "terminal",
  capability: "process/exec",
  kind: "execute",
  target: { command: "pytest -q" },
  command: "pytest -q",
  cwd: "/ws",
  host: null,
  what_will_run: "runs `pytest -q` with bash -lc in the workspace",
  question: QUESTION.message,
  options: ["Allow once", "Allow always", "Deny"],
};

/** A notification the test answers (or never does). */
class FakeDialog {
  shown: ShowMessageRequestParams[] = [];
  private answer: ((item: MessageActionItem | undefined) => void) | undefined;
  show = (params: ShowMessageRequestParams): Promise<MessageActionItem | undefined> => {
    this.shown.push(params);
    return new Promise((resolve) => (this.answer = resolve));
  };
  click(title: string | undefined): void {
    this.answer?.(title === undefined ? undefined : ACTIONS.find((a) => a.title === title));
  }
}

class FakeToken {
  isCancellationRequested = false;
  private listeners: (() => void)[] = [];
  onCancellationRequested(listener: () => void) {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }
  cancel(): void {
    this.isCancellationRequested = true;
    this.listeners.forEach((l) => l());
  }
}

function memento() {
  const values = new Map<string, unknown>();
  return { get: <T>(key: string) => values.get(key) as T, update: async (key: string, value: unknown) => void values.set(key, value) };
}

let posted: ToView[];
let session: ChatSession;
let dialog: FakeDialog;
let askResolve: ((value: unknown) => void) | undefined;
let askedThread = "";
let hidden = 0;

function approvalsPosted() {
  return posted.filter((m): m is Extract<ToView, { type: "approval" }> => m.type === "approval");
}

function donePosted() {
  return posted.filter((m): m is Extract<ToView, { type: "approvalDone" }> => m.type === "approvalDone");
}

let chatVisible: boolean;

function ask(token?: FakeToken, params: ShowMessageRequestParams = QUESTION) {
  return showMessageRequest(params, token, {
    dialog: dialog.show,
    chat: (message, actions) => session.askApproval(message, actions),
    hideDialog: () => hidden++,
    chatVisible: () => chatVisible,
  });
}

beforeEach(() => {
  posted = [];
  hidden = 0;
  chatVisible = false;
  dialog = new FakeDialog();
  const state = memento();
  session = new ChatSession({
    request: async <T>(command: string, args: Record<string, unknown>): Promise<T> => {
      if (command !== "lich.ask") {
        return undefined as T;
      }
      askedThread = String(args.new_thread ?? args.thread);
      return new Promise<T>((resolve) => (askResolve = resolve as (value: unknown) => void));
    },
    history: new PromptHistory(state),
    tasks: new TaskTracker(),
    state,
    openFile: () => undefined,
    openExternal: () => undefined,
    inform: () => undefined,
  });
  session.attach((m) => posted.push(m));
});

describe("approval questions in the chat", () => {
  it("shows the question in the turn whose tool call waits, and the chat's answer answers the server", async () => {
    const turn = session.send("run the tests");
    session.onEvent({ type: "run_start", task_id: "t1", thread: askedThread, data: {} });
    session.onEvent({ type: "tool_call_start", task_id: "t1", thread: askedThread, data: { call_id: "c1", name: "terminal", arguments: { command: "pytest -q" } } });
    // The server's `approval` event: the question as data, then the request with its text.
    session.onEvent({ type: "approval", task_id: "t1", thread: askedThread, data: DETAILS });
    const answered = ask();
    expect(dialog.shown).toEqual([QUESTION]);
    const [shown] = approvalsPosted();
    // In the turn because its event said this question; the view gets the data, not a regex's guess.
    expect(shown.approval).toEqual({ id: 1, message: QUESTION.message, actions: ["Allow once", "Allow always", "Deny"], inTurn: true, details: DETAILS });
    await session.onMessage({ type: "answerApproval", id: 1, answer: "Allow always" });
    expect(await answered).toEqual({ title: "Allow always" });
    expect(donePosted()).toEqual([{ type: "approvalDone", id: 1, answer: "Allow always", where: "chat" }]);
    expect(hidden).toBe(1); // the notification is taken out of sight
    // The notification answered late changes nothing: the request was answered once.
    dialog.click("Deny");
    await session.onMessage({ type: "answerApproval", id: 1, answer: "Deny" });
    expect(donePosted()).toHaveLength(1);
    askResolve?.({ task_id: "t1", stopped_reason: "final" });
    await turn;
  });

  it("the notification's answer counts too, and greys the chat's copy out", async () => {
    const answered = ask();
    // No running turn of the view: the question goes at the end of the log.
    expect(approvalsPosted()[0].approval.inTurn).toBe(false);
    dialog.click("Deny");
    expect(await answered).toEqual({ title: "Deny" });
    expect(donePosted()).toEqual([{ type: "approvalDone", id: 1, answer: "Deny", where: "dialog" }]);
    expect(hidden).toBe(0);
  });

  it("closing the notification leaves the answer to the chat while the view shows it", async () => {
    const answered = ask();
    dialog.click(undefined);
    await Promise.resolve();
    expect(donePosted()).toEqual([]);
    await session.onMessage({ type: "answerApproval", id: 1, answer: "Allow once" });
    expect(await answered).toEqual({ title: "Allow once" });
  });

  it("without a view, closing the notification is a denial (no answer), as before", async () => {
    session.detach();
    const answered = ask();
    dialog.click(undefined);
    expect(await answered).toBeNull();
  });

  it("a request the server withdraws ($/cancelRequest) is dropped from the chat", async () => {
    const token = new FakeToken();
    const answered = ask(token);
    token.cancel();
    expect(await answered).toBeNull();
    expect(donePosted()).toEqual([{ type: "approvalDone", id: 1, answer: undefined, where: "gone" }]);
  });

  it("other questions (workspace trust) go to the notification only", async () => {
    const trust: ShowMessageRequestParams = { type: 2, message: "lich: this workspace's .lich/config.json has keys…", actions: [{ title: "Trust" }, { title: "Not now" }] };
    const answered = ask(undefined, trust);
    expect(approvalsPosted()).toEqual([]);
    dialog.click(undefined);
    expect(await answered).toBeNull();
    expect(dialog.shown).toEqual([trust]);
  });

  it("while the chat view is visible the question is asked there only: no duplicate toast", async () => {
    chatVisible = true;
    const answered = ask();
    expect(approvalsPosted()).toHaveLength(1);
    expect(dialog.shown).toEqual([]);
    await session.onMessage({ type: "answerApproval", id: 1, answer: "Deny" });
    expect(await answered).toEqual({ title: "Deny" });
    expect(donePosted()).toEqual([{ type: "approvalDone", id: 1, answer: "Deny", where: "chat" }]);
    // Other questions still go to the notification, and without a view the toast is the way.
    const trust: ShowMessageRequestParams = { type: 2, message: "lich: trust?", actions: [{ title: "Trust" }] };
    void ask(undefined, trust);
    expect(dialog.shown).toEqual([trust]);
    session.detach();
    void ask();
    expect(dialog.shown).toEqual([trust, QUESTION]);
  });

  it("re-shows a question still waiting when the view draws its thread again", async () => {
    void ask();
    await session.reload();
    expect(approvalsPosted().map((m) => m.approval.id)).toEqual([1, 1]);
    expect(posted.findIndex((m) => m.type === "thread")).toBeLessThan(posted.lastIndexOf(approvalsPosted()[1]));
  });
});
