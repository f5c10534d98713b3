import { describe, expect, it } from "vitest";
import { patchSourceCases } from "./fixtures";
import { choosePatch, looksLikePatch } from "../src/patchSource";
import { mcpLine, mcpServers, providerInfo, statusView } from "../src/status";
import { TaskTracker } from "../src/tasks";
import { eventTaskId, retryNotice, summarise, TranscriptRenderer } from "../src/transcript";
import { fixtureNames, loadFixture, schemaErrors } from "./events";

/** The transcript text of one shared fixture run (tests/fixtures/events), rendered event by event. */
function rendered(name: string): string {
  const r = new TranscriptRenderer();
  return loadFixture(name)
    .map((event) => r.render(event))
    .join("");
}

describe("shared event fixtures", () => {
  it("are all valid against docs/lich-event.schema.json", () => {
    const names = fixtureNames();
    expect(names.length).toBeGreaterThanOrEqual(5);
    const types = new Set<string>();
    for (const name of names) {
      for (const event of loadFixture(name)) {
        types.add(String(event.type));
      }
    }
    // Every event type the server sends is in some fixture.
    expect(types.size).toBe(18);
  });

  it("reject a renamed field and a field the server never sends", () => {
    const retry = loadFixture("run_tools_retry").find((e) => e.type === "llm_retry")!;
    const { discarded_chars, ...rest } = retry.data!;
    expect(schemaErrors({ ...retry, data: { ...rest, discarded: discarded_chars } }).join("\n")).toContain("discarded_chars");
    const start = loadFixture("run_tools_retry")[0];
    expect(schemaErrors({ ...start, data: { ...start.data, prompt: "fix the bug" } }).join("\n")).toContain("prompt");
  });
});

describe("TranscriptRenderer", () => {
  it("renders a run: streaming text inline, tool calls, compression, a retried stream", () => {
    expect(rendered("run_tools_retry")).toBe(
      [
        "▶ task t1 (fake-model)",
        "  ! plugin warning: plugin .lich/plugins/lint.py: SyntaxError: invalid syntax (lint.py, line 3)",
        "Let me look at the file first.",
        '  → read_file {"path":"src/app.py","end":3}',
        "  ← read_file: 1:a3|def main(): ⏎ 2:9f|    return 1 ⏎ 3:0c|",
        '  → apply_patch {"input":"@@ src/app.py\\n= 2:9f..2:9f\\n~    return 2\\n"}',
        "  ✖ apply_patch: edit_rejected: stale_document: src/app.py changed in the editor; read it again",
        "  … compressing the conversation",
        // An output channel cannot take the void partial answer back: it says where the next one starts.
        "The answe",
        "… provider fake failed (network): retrying in 0.5 s (attempt 2 of 3); the answer restarts below",
        "The answer is 42.",
        "✔ The answer is 42.",
        "■ task ended: final",
        "",
      ].join("\n"),
    );
  });

  it("names the next provider on a failover and shows a hook failure", () => {
    expect(rendered("run_failover")).toBe(
      [
        "▶ task t2 (a-model)",
        "Reading.",
        '  → read_file {"path":"README.md","end":2}',
        "  ← read_file: 1:5e|# proj ⏎ 2:00|",
        "  ! plugin warning: plugin 'audit': before_llm_call raised KeyError: 'turn'",
        "héllo",
        "wor",
        "… provider a failed (bad_request): failing over to b; the answer restarts below",
        "✔ Done.",
        "■ task ended: final",
        "",
      ].join("\n"),
    );
  });

  it("renders budget exhaustion, errors, a retry before any text, and a cut event", () => {
    expect(rendered("run_budget")).toBe("▶ task t3 (fake-model)\n✖ turn budget exhausted (1 turns)\n■ task ended: budget\n");
    expect(rendered("run_error")).toBe(
      [
        "▶ task t4 (fake-model)",
        "… provider fake failed (rate_limit): retrying in 2.0 s (attempt 2 of 3)",
        "✖ error: provider 'fake' at http://127.0.0.1:8765/v1: auth: HTTP 401: invalid API key (check api_key_env)",
        "■ task ended: error",
        "",
      ].join("\n"),
    );
    expect(rendered("run_session_error")).toContain("✖ error: session_not_found: no session 20240101-000000-ffffff");
    expect(rendered("run_cancelled")).toBe(
      [
        "▶ task t6 (fake-model)",
        "  → edit_file (arguments too large to show)",
        "  ← edit_file: Edited src/big.py: 4000 replacements",
        "  … compressing the conversation",
        "■ task ended: aborted",
        "",
      ].join("\n"),
    );
  });

  it("tolerates unknown and malformed events", () => {
    const r = new TranscriptRenderer();
    expect(r.render({ type: "something_new" })).toBe("");
    expect(r.render({})).toBe("");
    expect(r.render({ type: "run_end" })).toBe("■ task ended: done\n");
    expect(retryNotice({ action: "retry", delay_s: 0 }, false)).toBe("… provider ? failed (error): retrying");
  });

  it("summarises long values and finds the task id", () => {
    expect(summarise("x".repeat(500)).length).toBe(200);
    const [start] = loadFixture("run_budget");
    expect(eventTaskId(start)).toBe("t3");
    const { task_id: _taskId, ...core } = start;
    expect(eventTaskId(core)).toBe(start.run_id);
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

  const mcpStatus = {
    provider: { name: "default", kind: "ollama", model: "qwen3", describe: "ollama qwen3 @ http://localhost:11434" },
    tasks: [],
    mcp_servers: [
      { name: "files", transport: "stdio", state: "connected", tools: 12, last_error: null },
      { name: "one", transport: "http", state: "connected", tools: 1, last_error: null },
      { name: "web", transport: "http", state: "failed", tools: 0, last_error: "connect: ECONNREFUSED 127.0.0.1:9\n  at http.request\t(retrying later) " + "x".repeat(300) },
      { name: "lazy", state: "not_started", tools: 0, last_error: null },
      { name: "off", state: "disabled", tools: 0, last_error: null },
    ],
  };

  it("reads the MCP servers from lich.status and lists them in the tooltip", () => {
    const servers = mcpServers(mcpStatus);
    expect(servers.map((s) => [s.name, s.state, s.tools])).toEqual([
      ["files", "connected", 12],
      ["one", "connected", 1],
      ["web", "failed", 0],
      ["lazy", "not_started", 0],
      ["off", "disabled", 0],
    ]);
    expect(servers[0]).toEqual({ name: "files", transport: "stdio", state: "connected", tools: 12 });
    const lines = servers.map(mcpLine);
    expect(lines.slice(0, 2)).toEqual(["MCP files: connected, 12 tools", "MCP one: connected, 1 tool"]);
    // The last error on one line, clipped.
    expect(lines[2].startsWith("MCP web: failed: connect: ECONNREFUSED 127.0.0.1:9 at http.request (retrying later) xxx")).toBe(true);
    expect(lines[2]).not.toContain("\n");
    expect(lines[2].endsWith("x…")).toBe(true);
    expect(lines[2].length).toBe("MCP web: failed: ".length + 120);
    expect(lines.slice(3)).toEqual(["MCP lazy: not started", "MCP off: disabled"]);

    const view = statusView("running", [], providerInfo(mcpStatus), servers);
    // A failed server puts a warning mark on the otherwise unchanged text.
    expect(view.text).toBe("$(hubot) Lich: ollama/qwen3 $(warning)");
    expect(view.command).toBe("lichClient.showTranscript");
    expect(view.tooltip.split("\n")).toEqual([
      "lich-lsp is ready (model ollama qwen3 @ http://localhost:11434). Click for the transcript.",
      ...lines,
    ]);
    const tasks = new TaskTracker();
    tasks.begin("patch the file");
    const busy = statusView("running", tasks.list(), providerInfo(mcpStatus), servers);
    expect(busy.text).toBe("$(sync~spin) Lich: 1 task $(warning)");
    expect(busy.tooltip).toContain("MCP files: connected, 12 tools");
    expect(busy.tooltip).toContain("MCP web: failed: connect: ECONNREFUSED");
  });

  it("marks a refused MCP server, and none when all are fine", () => {
    const refused = mcpServers({ mcp_servers: [{ name: "ws", state: "refused", tools: 0, last_error: "workspace config not trusted" }] });
    expect(refused.map(mcpLine)).toEqual(["MCP ws: refused: workspace config not trusted"]);
    expect(statusView("running", [], { kind: "ollama", model: "qwen3" }, refused).text).toBe("$(hubot) Lich: ollama/qwen3 $(warning)");
    const fine = mcpServers({ mcp_servers: [{ name: "files", state: "connected", tools: 3, last_error: null }, { name: "web", state: "connecting", tools: 0 }] });
    const view = statusView("running", [], { kind: "ollama", model: "qwen3" }, fine);
    expect(view.text).toBe("$(hubot) Lich: ollama/qwen3");
    expect(view.tooltip).toBe("lich-lsp is ready (model ollama/qwen3). Click for the transcript.\nMCP files: connected, 3 tools\nMCP web: connecting");
    // No MCP servers configured: the tooltip is as before.
    expect(statusView("running", [], { kind: "ollama", model: "qwen3" }, []).tooltip).toBe("lich-lsp is ready (model ollama/qwen3). Click for the transcript.");
    // Not running: no MCP lines or mark from a stale status.
    expect(statusView("stopped", [], {}, refused).text).toBe("$(debug-stop) Lich");
  });

  it("tolerates a missing or malformed mcp_servers (older servers)", () => {
    expect(mcpServers(null)).toEqual([]);
    expect(mcpServers({ tasks: [] })).toEqual([]);
    expect(mcpServers({ mcp_servers: null })).toEqual([]);
    expect(mcpServers({ mcp_servers: "files" })).toEqual([]);
    expect(mcpServers({ mcp_servers: { files: { state: "connected" } } })).toEqual([]);
    expect(mcpServers({ mcp_servers: [null, 3, "x", ["a"], {}, { name: "n", state: 7, tools: "many", last_error: 5 }] })).toEqual([
      { name: "?", state: "unknown" },
      { name: "n", state: "unknown" },
    ]);
    expect(mcpLine({ name: "n", state: "connected" })).toBe("MCP n: connected");
    expect(mcpLine({ name: "w", state: "failed" })).toBe("MCP w: failed");
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
