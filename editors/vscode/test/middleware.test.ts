import { describe, expect, it, vi } from "vitest";
import { createMiddleware, type AskArgs } from "../src/middleware";
import { TaskTracker } from "../src/tasks";

function setup(prompt: string | undefined) {
  const tasks = new TaskTracker();
  const askPrompt = vi.fn(async (_args: AskArgs) => prompt);
  const onAskResult = vi.fn();
  const middleware = createMiddleware({ askPrompt, tasks, settings: () => ({ edit_mode: "review" }), onAskResult });
  return { tasks, askPrompt, onAskResult, middleware };
}

describe("executeCommand middleware", () => {
  it("asks for a prompt when lich.ask comes without one, keeping uri and range", async () => {
    const { middleware, askPrompt, onAskResult } = setup("rename x to count");
    const range = { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } };
    const next = vi.fn(async (_command: string, args: unknown[]) => ({ task_id: "t1", echoed: args }));
    const result = await middleware.executeCommand!("lich.ask", [{ uri: "file:///ws/a.py", range }], next);
    expect(askPrompt).toHaveBeenCalledOnce();
    expect(next).toHaveBeenCalledWith("lich.ask", [{ uri: "file:///ws/a.py", range, prompt: "rename x to count" }]);
    expect(result).toEqual({ task_id: "t1", echoed: [{ uri: "file:///ws/a.py", range, prompt: "rename x to count" }] });
    expect(onAskResult).toHaveBeenCalledWith(result, expect.objectContaining({ prompt: "rename x to count" }));
  });

  it("treats a blank prompt as missing", async () => {
    const { middleware, askPrompt } = setup("typed");
    const next = vi.fn(async () => ({}));
    await middleware.executeCommand!("lich.ask", [{ prompt: "   " }], next);
    expect(askPrompt).toHaveBeenCalledOnce();
    expect(next).toHaveBeenCalledWith("lich.ask", [{ prompt: "typed" }]);
  });

  it("asks when lich.ask has no arguments at all", async () => {
    const { middleware } = setup("hello");
    const next = vi.fn(async () => ({}));
    await middleware.executeCommand!("lich.ask", [], next);
    expect(next).toHaveBeenCalledWith("lich.ask", [{ prompt: "hello" }]);
  });

  it("passes a lich.ask that already has a prompt straight through", async () => {
    const { middleware, askPrompt } = setup("unused");
    const next = vi.fn(async () => ({ task_id: "t2" }));
    await middleware.executeCommand!("lich.ask", [{ prompt: "fix it" }], next);
    expect(askPrompt).not.toHaveBeenCalled();
    expect(next).toHaveBeenCalledWith("lich.ask", [{ prompt: "fix it" }]);
  });

  it("sends nothing when the prompt input is dismissed", async () => {
    const { middleware, tasks } = setup(undefined);
    const next = vi.fn();
    const result = await middleware.executeCommand!("lich.ask", [{ uri: "file:///ws/a.py" }], next);
    expect(result).toBeUndefined();
    expect(next).not.toHaveBeenCalled();
    expect(tasks.size).toBe(0);
  });

  it("does not touch other lich commands", async () => {
    const { middleware, askPrompt } = setup("x");
    const next = vi.fn(async () => "ok");
    expect(await middleware.executeCommand!("lich.applyPatch", [{ patch: "@@ a" }], next)).toBe("ok");
    expect(next).toHaveBeenCalledWith("lich.applyPatch", [{ patch: "@@ a" }]);
    expect(askPrompt).not.toHaveBeenCalled();
  });

  it("counts the task as running while the request is in flight, also when it fails", async () => {
    const { middleware, tasks } = setup("go");
    let seenWhileRunning = -1;
    const next = vi.fn(async () => {
      seenWhileRunning = tasks.size;
      throw new Error("server died");
    });
    await expect(middleware.executeCommand!("lich.ask", [{}], next)).rejects.toThrow("server died");
    expect(seenWhileRunning).toBe(1);
    expect(tasks.size).toBe(0);
  });
});

describe("workspace/configuration middleware", () => {
  it("answers the lich section with server keys and leaves other sections alone", async () => {
    const { middleware } = setup("x");
    const next = vi.fn(async () => [{ server: { command: "raw vscode shape" } }, { tabSize: 4 }]);
    const params = { items: [{ section: "lich" }, { section: "editor" }] };
    const result = await middleware.workspace!.configuration!(params, {} as never, next as never);
    expect(result).toEqual([{ edit_mode: "review" }, { tabSize: 4 }]);
  });

  it("does not compute anything for requests without the lich section", async () => {
    const tasks = new TaskTracker();
    const settings = vi.fn(() => ({}));
    const middleware = createMiddleware({ askPrompt: async () => undefined, tasks, settings });
    const next = vi.fn(async () => [{ a: 1 }]);
    expect(await middleware.workspace!.configuration!({ items: [{ section: "python" }] }, {} as never, next as never)).toEqual([{ a: 1 }]);
    expect(settings).not.toHaveBeenCalled();
  });
});
