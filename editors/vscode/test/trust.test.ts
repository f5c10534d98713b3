import { beforeEach, describe, expect, it, vi } from "vitest";
import { activate } from "../src/extension";
import { RESTRICTED_MODE_MESSAGE, TRUST_COMMAND, trustMessage } from "../src/trust";
import { clients } from "./mocks/languageclient";
import { mock, window } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

const TRUST = "lichClient.trustWorkspaceConfig";
const REVOKE = "lichClient.revokeWorkspaceConfigTrust";
const CONFIG = "/ws/.lich/config.json";

function context() {
  const state = new Map<string, unknown>();
  return {
    subscriptions: [] as { dispose(): void }[],
    workspaceState: { get: (k: string, d: unknown) => (state.has(k) ? state.get(k) : d), update: async (k: string, v: unknown) => void state.set(k, v) },
  };
}

async function started() {
  mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
  mock.files.set("/opt/py/bin/python", "");
  const ctx = context();
  await activate(ctx as never);
  expect(clients).toHaveLength(1);
  return { ctx, client: clients[0] };
}

function trustRequests() {
  return clients[0].sent.filter((s) => s.command === TRUST_COMMAND);
}

beforeEach(() => {
  mock.reset();
  clients.length = 0;
  (window as { activeTextEditor: unknown }).activeTextEditor = undefined;
});

describe("Lich: Trust Workspace Config", () => {
  it("sends lich.trustWorkspace {} and shows the server's message", async () => {
    const { ctx, client } = await started();
    client.responses[TRUST_COMMAND] = {
      state: "trusted",
      config: CONFIG,
      keys: [{ key: "plugins", what: "load plugin .lich/plugins/evil.py" }],
      message: "lich: trusted /ws/.lich/config.json (plugins now load)",
    };
    const result = await mock.commands.get(TRUST)!();
    expect(trustRequests()).toEqual([{ command: TRUST_COMMAND, arguments: [{}] }]);
    expect(result).toMatchObject({ state: "trusted", config: CONFIG });
    expect(mock.infos).toContain("lich: trusted /ws/.lich/config.json (plugins now load)");
    expect(mock.errors).toEqual([]);
    // The status bar asks the server again: trusted keys may change the provider.
    await vi.waitFor(() => expect(client.sent.filter((s) => s.command === "lich.status").length).toBeGreaterThanOrEqual(2));
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("in Restricted Mode shows an error and never asks the server", async () => {
    mock.isTrusted = false;
    mock.errorChoice = "Manage Workspace Trust";
    const { ctx, client } = await started();
    client.responses[TRUST_COMMAND] = { state: "trusted", config: CONFIG, keys: [], message: "must not be shown" };
    const result = await mock.commands.get(TRUST)!();
    expect(result).toBeUndefined();
    expect(trustRequests()).toEqual([]);
    expect(mock.errors).toEqual([{ message: RESTRICTED_MODE_MESSAGE, actions: ["Manage Workspace Trust"] }]);
    expect(mock.infos).toEqual([]);
    // The error's action opens VS Code's own trust editor.
    await vi.waitFor(() => expect(mock.executed).toContainEqual({ command: "workbench.trust.manage", args: [] }));
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("warns when the server refuses (workspace_trust: never)", async () => {
    const { ctx, client } = await started();
    client.responses[TRUST_COMMAND] = { state: "refused", config: CONFIG, keys: [], message: "trust is turned off by the editor" };
    await mock.commands.get(TRUST)!();
    expect(mock.warnings).toEqual(["Lich: trust is turned off by the editor"]);
    expect(mock.infos).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("reports a failed request as an error", async () => {
    const { ctx, client } = await started();
    client.sendRequest = async (_type: unknown, params: { command: string; arguments: unknown[] }) => {
      client.sent.push(params);
      throw new Error("Unknown command lich.trustWorkspace");
    };
    expect(await mock.commands.get(TRUST)!()).toBeUndefined();
    expect(mock.errors.map((e) => e.message)).toEqual(["Lich: recording workspace config trust failed: Unknown command lich.trustWorkspace"]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("tells the user the server is not running instead of sending", async () => {
    mock.config["lich.server.command"] = { global: "/does/not/exist/lich-lsp" };
    const ctx = context();
    await activate(ctx as never);
    mock.errors = [];
    expect(await mock.commands.get(TRUST)!()).toBeUndefined();
    expect(mock.errors).toHaveLength(1);
    expect(mock.errors[0].message).toContain("pip install lich-lsp");
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

describe("Lich: Revoke Workspace Config Trust", () => {
  it("sends lich.trustWorkspace {revoke: true} and shows the message", async () => {
    const { ctx, client } = await started();
    client.responses[TRUST_COMMAND] = { state: "untrusted", config: CONFIG, keys: [{ key: "plugins" }], message: "revoked trust of /ws/.lich/config.json" };
    await mock.commands.get(REVOKE)!();
    expect(trustRequests()).toEqual([{ command: TRUST_COMMAND, arguments: [{ revoke: true }] }]);
    expect(mock.infos).toEqual(["Lich: revoked trust of /ws/.lich/config.json"]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });

  it("is allowed in Restricted Mode: revoking only narrows", async () => {
    mock.isTrusted = false;
    const { ctx, client } = await started();
    client.responses[TRUST_COMMAND] = { state: "untrusted", config: CONFIG, keys: [], message: "lich: not trusted" };
    await mock.commands.get(REVOKE)!();
    expect(trustRequests()).toEqual([{ command: TRUST_COMMAND, arguments: [{ revoke: true }] }]);
    expect(mock.errors).toEqual([]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});

describe("trustMessage", () => {
  it("uses the server's line, adding the Lich prefix only when missing", () => {
    expect(trustMessage({ state: "trusted", message: "lich: trusted" }, false)).toBe("lich: trusted");
    expect(trustMessage({ state: "trusted", message: " trusted it " }, false)).toBe("Lich: trusted it");
  });

  it("builds a line from the state when the server sent none", () => {
    expect(trustMessage({ state: "trusted", config: CONFIG }, false)).toBe(`Lich: ${CONFIG} is trusted.`);
    expect(trustMessage({ state: "untrusted", config: CONFIG }, true)).toBe(`Lich: trust of ${CONFIG} revoked.`);
    expect(trustMessage({ state: "untrusted", config: CONFIG }, false)).toBe(`Lich: ${CONFIG} is not trusted.`);
    expect(trustMessage({ state: "no_config" }, false)).toMatch(/no \.lich\/config\.json/);
    expect(trustMessage({ state: "refused" }, false)).toMatch(/never/);
  });
});
