/**
 * The ghost-text status item (src/status.ts completionView, src/completions.ts): the completion
 * model while it works; its last failure (when, what) from lich.status while it fails; lich.status
 * is read again after an empty or failed answer (throttled) and once after a success that clears it.
 */
import { describe, expect, it, vi } from "vitest";
import { emptyAnswer, FAILURE_RECHECK_MS, inlineCompletionMiddleware, type CompletionGate } from "../src/completions";
import { clockTime, completionInfo, completionView } from "../src/status";

const DOCUMENT = {} as never;
const POSITION = {} as never;
const CONTEXT = {} as never;
const LIVE = { isCancellationRequested: false } as never;

describe("the ghost-text status item", () => {
  it("reads the model and the last failure from lich.status", () => {
    expect(
      completionInfo({ completion: { model: "openai_compat fim @ http://127.0.0.1:9/v1 (completions)", last_error: "the completion server did not answer", last_error_at: "2026-12-07T10:03:07+00:00" } }),
    ).toEqual({ model: "openai_compat fim @ http://127.0.0.1:9/v1 (completions)", lastError: "the completion server did not answer", lastErrorAt: "2026-12-07T10:03:07+00:00" });
    expect(completionInfo({ completion: { model: "m", last_error: null, last_error_at: null } })).toEqual({ model: "m" });
    expect(completionInfo({ completion: null })).toEqual({ model: null });
    expect(completionInfo({})).toEqual({ model: undefined });
  });

  it("shows the model while completions work, the failure while they fail, nothing while they are off", () => {
    expect(completionView({ model: "ollama qwen2.5-coder (generate)" }, true)).toEqual({
      text: "$(sparkle) Ghost text",
      tooltip: "Ghost text from ollama qwen2.5-coder (generate). Click for the server log.",
      command: "lichClient.showServerLog",
    });
    const failing = completionView({ model: "ollama qwen2.5-coder (generate)", lastError: "the completion server did not answer\n(connection refused)", lastErrorAt: "2026-12-07T10:03:07Z" }, true, "UTC");
    expect(failing?.text).toBe("$(warning) Ghost text: failing");
    expect(failing?.tooltip).toBe(
      "Ghost text from ollama qwen2.5-coder (generate) failed at 10:03:07: the completion server did not answer (connection refused)\nClick for the server log.",
    );
    expect(completionView({ model: null }, true)).toBeUndefined();
    // Configured but broken: off, and why.
    const broken = completionInfo({ completion: { model: null, error: "completion.format: must be one of completions, generate, chat" } });
    expect(broken).toEqual({ model: null, configError: "completion.format: must be one of completions, generate, chat" });
    expect(completionView(broken, true)).toEqual({
      text: "$(warning) Ghost text: off",
      tooltip: "Ghost text is off: completion.format: must be one of completions, generate, chat\nClick for the server log.",
      command: "lichClient.showServerLog",
    });
    expect(completionView({ model: "m" }, false)).toBeUndefined();
  });

  it("prints a time it cannot read as it is", () => {
    expect(clockTime("soon")).toBe("soon");
    expect(clockTime(undefined)).toBe("");
  });
});

describe("reading the failure again", () => {
  function gate(failing = false) {
    const state = { rechecks: 0, now: 0, failing };
    const g: CompletionGate = { enabled: () => true, model: () => "m", recheck: () => void state.rechecks++, failing: () => state.failing, now: () => state.now };
    return { state, g };
  }

  it("after an empty or failed answer, at most every FAILURE_RECHECK_MS", async () => {
    const { state, g } = gate();
    const provide = inlineCompletionMiddleware(g);
    await provide(DOCUMENT, POSITION, CONTEXT, LIVE, () => ({ items: [] }));
    await expect(Promise.resolve(provide(DOCUMENT, POSITION, CONTEXT, LIVE, () => Promise.reject(new Error("boom"))))).rejects.toThrow("boom");
    expect(state.rechecks).toBe(1);
    state.now = FAILURE_RECHECK_MS;
    await provide(DOCUMENT, POSITION, CONTEXT, LIVE, () => null);
    expect(state.rechecks).toBe(2);
  });

  it("not after an answer with text, unless a failure is shown (a success clears it)", async () => {
    const { state, g } = gate();
    const provide = inlineCompletionMiddleware(g);
    await provide(DOCUMENT, POSITION, CONTEXT, LIVE, () => [{ insertText: "a + b" }]);
    expect(state.rechecks).toBe(0);
    state.failing = true;
    await provide(DOCUMENT, POSITION, CONTEXT, LIVE, () => ({ items: [{ insertText: { value: "a + b" } }] }) as never);
    expect(state.rechecks).toBe(1);
  });

  it("not for an answer VS Code no longer wanted (the user typed on)", async () => {
    const { state, g } = gate();
    const next = vi.fn(() => ({ items: [] }));
    await inlineCompletionMiddleware(g)(DOCUMENT, POSITION, CONTEXT, { isCancellationRequested: true } as never, next);
    expect(next).toHaveBeenCalledTimes(1);
    expect(state.rechecks).toBe(0);
  });

  it("an answer whose items are all blank is empty", () => {
    expect(emptyAnswer({ items: [{ insertText: "  " }] })).toBe(true);
    expect(emptyAnswer([{ insertText: "x" }])).toBe(false);
    expect(emptyAnswer(undefined)).toBe(true);
  });
});
