/**
 * Ghost text (src/completions.ts): the client declares inline completions through the language
 * client's feature, and the middleware asks the server only when the setting is on and the
 * server has a completion model, passing VS Code's document, position, context and cancellation
 * token through unchanged (the token cancels the request with $/cancelRequest).
 */
import { beforeEach, describe, expect, it, vi } from "vitest";
import { completionModel, inlineCompletionMiddleware, MODEL_RECHECK_MS, type CompletionGate } from "../src/completions";
import { activate } from "../src/extension";
import { createMiddleware } from "../src/middleware";
import { statusView } from "../src/status";
import { TaskTracker } from "../src/tasks";
import { clients, nextResponses } from "./mocks/languageclient";
import { mock } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

const DOCUMENT = { uri: { toString: () => "file:///ws/calc.py" } } as never;
const POSITION = { line: 1, character: 11 } as never;
const CONTEXT = { triggerKind: 1, selectedCompletionInfo: undefined } as never;

function gate(values: { enabled?: boolean; model?: string | null }) {
  const state = { enabled: values.enabled ?? true, model: "model" in values ? values.model : "openai_compat fim @ http://127.0.0.1:9/v1", rechecks: 0, now: 0 };
  const g: CompletionGate = { enabled: () => state.enabled, model: () => state.model, recheck: () => void state.rechecks++, now: () => state.now };
  return { state, g };
}

describe("inline completion middleware", () => {
  it("passes VS Code's request through with its own cancellation token", async () => {
    const { g } = gate({});
    const token = { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) } as never;
    const items = [{ insertText: "a + b" }];
    const next = vi.fn(() => items);
    const provide = inlineCompletionMiddleware(g);
    expect(await provide(DOCUMENT, POSITION, CONTEXT, token, next)).toBe(items);
    expect(next).toHaveBeenCalledTimes(1);
    const [document, position, context, passed] = next.mock.calls[0] as unknown[];
    expect([document, position, context]).toEqual([DOCUMENT, POSITION, CONTEXT]);
    expect(passed).toBe(token);
  });

  it("asks nothing when lich.completions.enabled is false", () => {
    const { g } = gate({ enabled: false });
    const next = vi.fn();
    expect(inlineCompletionMiddleware(g)(DOCUMENT, POSITION, CONTEXT, {} as never, next)).toBeNull();
    expect(next).not.toHaveBeenCalled();
  });

  it("asks nothing while the server has no completion model, and re-reads lich.status now and then", () => {
    const { state, g } = gate({ model: null });
    const next = vi.fn();
    const provide = inlineCompletionMiddleware(g);
    provide(DOCUMENT, POSITION, CONTEXT, {} as never, next);
    provide(DOCUMENT, POSITION, CONTEXT, {} as never, next);
    expect(next).not.toHaveBeenCalled();
    expect(state.rechecks).toBe(1);
    state.now = MODEL_RECHECK_MS;
    provide(DOCUMENT, POSITION, CONTEXT, {} as never, next);
    expect(state.rechecks).toBe(2);
    // The config gained a model: the next keystroke asks.
    state.model = "ollama qwen2.5-coder @ http://localhost:11434 (generate)";
    provide(DOCUMENT, POSITION, CONTEXT, {} as never, next);
    expect(next).toHaveBeenCalledTimes(1);
  });

  it("reads the model from lich.status (unknown before an answer, so the server decides)", () => {
    expect(completionModel({ completion: { model: "openai_compat fim @ http://x/v1 (completions)", error: null } })).toBe("openai_compat fim @ http://x/v1 (completions)");
    expect(completionModel({ completion: { model: null, error: "completion.model: is required" } })).toBeNull();
    expect(completionModel({ provider: {} })).toBeUndefined();
    expect(completionModel(undefined)).toBeUndefined();
  });

  it("the status bar's tooltip names the model that completes", () => {
    expect(statusView("running", [], { kind: "ollama", model: "qwen3" }, [], "ollama qwen2.5-coder @ http://localhost:11434 (generate)").tooltip).toContain(
      "Completions: ollama qwen2.5-coder @ http://localhost:11434 (generate)",
    );
    expect(statusView("running", [], { kind: "ollama", model: "qwen3" }, [], null).tooltip).not.toContain("Completions");
  });

  it("is part of the client's middleware only with a gate", () => {
    const deps = { askPrompt: async () => undefined, tasks: new TaskTracker(), settings: () => ({}) };
    expect(createMiddleware(deps).provideInlineCompletionItems).toBeUndefined();
    expect(typeof createMiddleware({ ...deps, completions: gate({}).g }).provideInlineCompletionItems).toBe("function");
  });
});

describe("the extension's language client", () => {
  beforeEach(() => {
    mock.reset();
    clients.length = 0;
  });

  it("registers the inline completion feature and gates it on lich.status and the setting", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.files.set("/opt/py/bin/python", "");
    const ctx = { subscriptions: [] as { dispose(): void }[], workspaceState: { get: () => undefined, update: async () => undefined } };
    await activate(ctx as never);
    const client = clients[0];
    expect(client.proposedFeatures).toBe(true);
    const provide = (client.clientOptions.middleware as { provideInlineCompletionItems: (...args: unknown[]) => unknown }).provideInlineCompletionItems;
    const next = vi.fn(() => []);
    // The fake server's lich.status has no `completion` yet (an older server): it is asked.
    provide(DOCUMENT, POSITION, CONTEXT, {}, next);
    expect(next).toHaveBeenCalledTimes(1);
    // A server with completions off: not asked.
    nextResponses["lich.status"] = { provider: {}, completion: { model: null } };
    await mock.commands.get("lichClient.restartServer")!();
    delete nextResponses["lich.status"];
    const restarted = clients[1];
    const provideAgain = (restarted.clientOptions.middleware as { provideInlineCompletionItems: (...args: unknown[]) => unknown }).provideInlineCompletionItems;
    await vi.waitFor(() => {
      const fresh = vi.fn(() => []);
      provideAgain(DOCUMENT, POSITION, CONTEXT, {}, fresh);
      expect(fresh).not.toHaveBeenCalled();
    });
    // The setting off: not asked, whatever the server has.
    mock.config["lich.completions.enabled"] = { global: false };
    restarted.responses["lich.status"] = { provider: {}, completion: { model: "openai_compat fim" } };
    const off = vi.fn(() => []);
    provideAgain(DOCUMENT, POSITION, CONTEXT, {}, off);
    expect(off).not.toHaveBeenCalled();
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});
