import { describe, expect, it } from "vitest";
import { patchSourceCases } from "./fixtures";
import { choosePatch, looksLikePatch } from "../src/patchSource";
import { providerInfo, statusView } from "../src/status";
import { TaskTracker } from "../src/tasks";
import { eventTaskId, retryNotice, summarise, TranscriptRenderer } from "../src/transcript";

describe("TranscriptRenderer", () => {
  it("renders a task's events as readable lines, streaming text inline", () => {
    const r = new TranscriptRenderer();
    const out = [
      r.render({ type: "run_start", task_id: "t1", data: { prompt: "fix the bug" } }),
      r.render({ type: "turn_start", data: {} }),
      r.render({ type: "text_delta", data: { text: "Let me " } }),
      r.render({ type: "text_delta", data: { text: "look." } }),
      r.render({ type: "llm_end", data: {} }),
      r.render({ type: "tool_call_start", data: { name: "read_file", arguments: { path: "a.py" } } }),
      r.render({ type: "tool_call_end", data: { name: "read_file", ok: true, output: "1:ab|x = 1\n2:cd|y = 2" } }),
      r.render({ type: "tool_call_end", data: { name: "apply_patch", ok: false, error: "edit_rejected: stale_document" } }),
      r.render({ type: "final", data: { text: "Done." } }),
      r.render({ type: "run_end", data: { stopped_reason: "final" } }),
    ].join("");
    expect(out).toBe(
      [
        "▶ task t1: fix the bug",
        "Let me look.",
        '  → read_file {"path":"a.py"}',
        "  ← read_file: 1:ab|x = 1 ⏎ 2:cd|y = 2",
        "  ✖ apply_patch: edit_rejected: stale_document",
        "✔ Done.",
        "■ task ended: final",
        "",
      ].join("\n"),
    );
  });

  it("starts a new line when a tool call follows unterminated text", () => {
    const r = new TranscriptRenderer();
    expect(r.render({ type: "text_delta", data: { text: "thinking" } }) + r.render({ type: "error", data: { message: "boom" } })).toBe("thinking\n✖ error: boom\n");
  });

  it("renders a run_start without a prompt (the core sends prompt_chars only) and tool summaries", () => {
    const r = new TranscriptRenderer();
    expect(r.render({ type: "run_start", task_id: "t2", data: { prompt_chars: 12, model: "vscode" } })).toBe("▶ task t2\n");
    expect(r.render({ type: "tool_call_end", data: { name: "edit_file", ok: true, summary: "Edited a.py" } })).toBe("  ← edit_file: Edited a.py\n");
  });

  it("tolerates unknown and malformed events", () => {
    const r = new TranscriptRenderer();
    expect(r.render({ type: "something_new" })).toBe("");
    expect(r.render({})).toBe("");
    expect(r.render({ type: "run_end" })).toBe("■ task ended: done\n");
  });

  it("marks the void partial answer of a failed attempt and shows the restarted one", () => {
    const r = new TranscriptRenderer();
    const retry = {
      turn: 1,
      provider: "primary",
      attempt: 1,
      max_attempts: 3,
      kind: "timeout",
      message: "read timed out",
      action: "retry",
      delay_s: 1.5,
      next_provider: "primary",
      discarded_chars: 9,
    };
    const out = [
      r.render({ type: "llm_start", task_id: "t1", data: { turn: 1 } }),
      r.render({ type: "text_delta", task_id: "t1", data: { turn: 1, text: "The answ" } }),
      r.render({ type: "text_delta", task_id: "t1", data: { turn: 1, text: "e" } }),
      r.render({ type: "llm_retry", task_id: "t1", data: retry }),
      r.render({ type: "text_delta", task_id: "t1", data: { turn: 1, text: "The answer is 42." } }),
      r.render({ type: "llm_end", task_id: "t1", data: { turn: 1 } }),
    ].join("");
    expect(out).toBe(
      [
        "The answe",
        "… provider primary failed (timeout): retrying in 1.5 s (attempt 2 of 3); the answer restarts below",
        "The answer is 42.",
        "",
      ].join("\n"),
    );
  });

  it("names the next provider on failover and stays quiet about restarts when nothing streamed", () => {
    const r = new TranscriptRenderer();
    const failover = { provider: "a", attempt: 2, max_attempts: 2, kind: "server", action: "failover", delay_s: 0, next_provider: "b", discarded_chars: 0 };
    expect(r.render({ type: "llm_retry", data: failover })).toBe("… provider a failed (server): failing over to b\n");
    expect(retryNotice({ ...failover, discarded_chars: 3 }, true)).toBe("… provider a failed (server): failing over to b; the answer restarts below");
    expect(retryNotice({ action: "retry", delay_s: 0 }, false)).toBe("… provider ? failed (error): retrying");
  });

  it("summarises long values and finds the task id", () => {
    expect(summarise("x".repeat(500)).length).toBe(200);
    expect(eventTaskId({ run_id: "r" })).toBe("r");
    expect(eventTaskId({ run_id: "r", task_id: "t" })).toBe("t");
  });
});

describe("status bar", () => {
  it("shows running tasks and cancels on click, else the model", () => {
    const tasks = new TaskTracker();
    const provider = { kind: "ollama", model: "qwen3", describe: "ollama qwen3 @ http://localhost:11434" };
    expect(statusView("running", tasks.list(), provider)).toMatchObject({ text: "$(hubot) Lich: ollama/qwen3", command: "lichClient.showTranscript" });
    const key = tasks.begin("patch the file");
    const view = statusView("running", tasks.list(), provider);
    expect(view.text).toBe("$(sync~spin) Lich: 1 task");
    expect(view.command).toBe("lichClient.cancelTask");
    expect(view.tooltip).toContain("patch the file");
    expect(view.tooltip).toContain("ollama qwen3 @ http://localhost:11434");
    tasks.begin("second");
    expect(statusView("running", tasks.list()).text).toBe("$(sync~spin) Lich: 2 tasks");
    tasks.end(key);
    expect(tasks.size).toBe(1);
    expect(statusView("missing", []).text).toContain("no server");
  });

  it("adopts the server's id for its own request instead of counting it twice", () => {
    const tasks = new TaskTracker();
    tasks.begin("mine");
    tasks.serverStarted("t9", "mine");
    expect(tasks.list()).toHaveLength(1);
    expect(tasks.list()[0].taskId).toBe("t9");
    tasks.serverStarted("t10", "from a code action elsewhere");
    expect(tasks.size).toBe(2);
    tasks.serverEnded("t10");
    expect(tasks.size).toBe(1);
  });

  it("reads the provider from lich.status and flags a misconfigured one", () => {
    const status = { provider: { name: "vscode", kind: "openai_compat", model: "m2", describe: "openai_compat m2 @ http://x/v1" }, tasks: [] };
    expect(providerInfo(status)).toEqual({ kind: "openai_compat", model: "m2", describe: "openai_compat m2 @ http://x/v1" });
    expect(providerInfo(null)).toEqual({});
    expect(providerInfo({ tasks: [] })).toEqual({});
    const bad = providerInfo({ provider: { name: "", kind: "", model: "", describe: "misconfigured: models: names providers but no providers are configured" } });
    expect(bad.problem).toContain("models: names providers");
    const view = statusView("running", [], bad);
    expect(view.text).toBe("$(warning) Lich: misconfigured");
    expect(view.tooltip).toContain("models: names providers");
    expect(view.command).toBe("lichClient.openConfig");
  });
});

describe("patch source", () => {
  it.each(patchSourceCases)("%s", async (_name, c, origin) => {
    let clipboardReads = 0;
    const chosen = await choosePatch({
      selectionText: c.selectionText,
      documentText: c.documentText,
      readClipboard: async () => {
        clipboardReads += 1;
        return c.clipboardText ?? "";
      },
    });
    expect(chosen?.origin).toBe(origin);
    // The clipboard is only read when nothing in the editor is a patch.
    expect(clipboardReads).toBe(origin === "selection" || origin === "editor" ? 0 : 1);
  });

  it("survives a clipboard that cannot be read", async () => {
    const chosen = await choosePatch({
      documentText: "x",
      readClipboard: async () => {
        throw new Error("permission denied");
      },
    });
    expect(chosen).toBeUndefined();
  });

  it("recognises a patch by its section header", () => {
    expect(looksLikePatch("@@ src/a.py\n= 1:ab..1:ab\n~x")).toBe(true);
    expect(looksLikePatch("def f():\n    return '@@ not a header'")).toBe(false);
  });
});
