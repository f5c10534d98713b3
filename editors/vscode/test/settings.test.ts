import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { serverSettings, type SettingsSource } from "../src/settings";

type Values = Record<string, { value?: unknown; set?: boolean }>;

/** Settings as VS Code reports them: `get` sees defaults, `inspect` says what the user set. */
function source(values: Values): SettingsSource {
  const defaults: Record<string, unknown> = {};
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
  for (const [key, spec] of Object.entries(manifest.contributes.configuration.properties as Record<string, { default?: unknown }>)) {
    defaults[key.replace(/^lich\./, "")] = spec.default;
  }
  return {
    get<T>(key: string) {
      return (key in values ? values[key].value : defaults[key]) as T;
    },
    inspect<T>(key: string) {
      const entry = values[key];
      return { globalValue: entry?.set === false ? undefined : (entry?.value as T) };
    },
  };
}

describe("settings → initializationOptions", () => {
  it("sends nothing when nothing is set, so .lich/config.json decides", () => {
    expect(serverSettings(source({}), true)).toEqual({});
  });

  it("maps the set settings to the server's keys", () => {
    const settings = serverSettings(
      source({
        "provider.kind": { value: "openai_compat" },
        model: { value: "gpt-test" },
        baseUrl: { value: "http://127.0.0.1:9999/v1" },
        apiKeyEnv: { value: "MY_KEY" },
        editMode: { value: "review" },
        maxTurns: { value: 7 },
        approval: { value: { "process/exec": "deny" } },
      }),
      true,
    );
    expect(settings).toEqual({
      providers: [{ name: "vscode", kind: "openai_compat", model: "gpt-test", base_url: "http://127.0.0.1:9999/v1", api_key_env: "MY_KEY" }],
      models: { chat: ["vscode"] },
      edit_mode: "review",
      max_turns: 7,
      approval: { "process/exec": "deny" },
    });
  });

  it("never sends an API key, only the variable's name", () => {
    const settings = serverSettings(source({ "provider.kind": { value: "anthropic" }, apiKeyEnv: { value: "ANTHROPIC_API_KEY" } }), true);
    expect(JSON.stringify(settings)).not.toMatch(/"api_key"/);
    expect((settings.providers as { api_key_env: string }[])[0].api_key_env).toBe("ANTHROPIC_API_KEY");
  });

  it("maps the completion model and debounce to completion and completion_debounce_ms; enabled stays in the editor", () => {
    const model = { kind: "openai_compat", format: "completions", base_url: "http://127.0.0.1:8080/v1", model: "fim" };
    expect(serverSettings(source({ "completions.model": { value: model }, "completions.debounceMs": { value: 40 }, "completions.enabled": { value: false } }), true)).toEqual({
      completion: model,
      completion_debounce_ms: 40,
    });
    // The defaults (an empty model, no debounce) leave the config files in charge.
    expect(serverSettings(source({ "completions.model": { value: {} }, "completions.debounceMs": { value: null } }), true)).toEqual({});
  });

  it("ignores model and base URL without a provider kind", () => {
    expect(serverSettings(source({ model: { value: "m" }, baseUrl: { value: "http://x" } }), true)).toEqual({});
  });

  it("drops invalid values instead of sending them", () => {
    const settings = serverSettings(source({ editMode: { value: "yolo" }, maxTurns: { value: 0 }, approval: { value: {} } }), true);
    expect(settings).toEqual({});
  });

  it("limits an untrusted workspace to reading files and never trusts its config", () => {
    expect(serverSettings(source({}), false)).toEqual({ capabilities: ["file/read"], workspace_trust: "never" });
    expect(serverSettings(source({ editMode: { value: "apply" } }), false)).toEqual({
      edit_mode: "apply",
      capabilities: ["file/read"],
      workspace_trust: "never",
    });
  });

  it("leaves workspace_trust to the server (default: ask) in a trusted workspace", () => {
    expect(serverSettings(source({}), true)).not.toHaveProperty("workspace_trust");
    expect(serverSettings(source({ "provider.kind": { value: "ollama" } }), true)).not.toHaveProperty("workspace_trust");
  });
});

describe("package.json contributions", () => {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
  const properties = manifest.contributes.configuration.properties as Record<string, { default?: unknown; markdownDescription?: string; description?: string }>;

  it("contributes every setting with a default and a description", () => {
    const expected = [
      "lich.server.command",
      "lich.server.args",
      "lich.provider.kind",
      "lich.model",
      "lich.baseUrl",
      "lich.apiKeyEnv",
      "lich.editMode",
      "lich.reviewStyle",
      "lich.approval",
      "lich.maxTurns",
      "lich.completions.enabled",
      "lich.completions.model",
      "lich.completions.debounceMs",
      "lich.nextEdit.enabled",
      "lich.nextEdit.debounceMs",
      "lich.trace.server",
    ];
    expect(Object.keys(properties).sort()).toEqual([...expected].sort());
    for (const key of expected) {
      expect(properties[key], key).toHaveProperty("default");
      expect(properties[key].markdownDescription ?? properties[key].description, key).toBeTruthy();
    }
    expect(properties["lich.apiKeyEnv"].markdownDescription).toMatch(/never/i);
  });

  it("declares limited support for untrusted workspaces and accepts VS Code 1.100", () => {
    expect(manifest.capabilities.untrustedWorkspaces.supported).toBe("limited");
    expect(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations).toContain("lich.server.command");
    const minimum = /\^1\.(\d+)\.\d+/.exec(manifest.engines.vscode);
    expect(minimum && Number(minimum[1])).toBeLessThanOrEqual(100);
  });

  it("contributes the Lich chat view in its own side bar container, with its icon packaged", () => {
    expect(manifest.contributes.viewsContainers.activitybar).toEqual([{ id: "lich", title: "Lich", icon: "media/lich.svg" }]);
    expect(manifest.contributes.views.lich).toEqual([
      expect.objectContaining({ type: "webview", id: "lichClient.chat" }),
      // First-run guidance: shown only while the server says no model is set up (src/welcome.ts).
      expect.objectContaining({ id: "lichClient.welcome", when: "lich.noModel" }),
    ]);
    expect(manifest.activationEvents).toContain("onView:lichClient.chat");
    const ignore = readFileSync(path.join(__dirname, "..", ".vscodeignore"), "utf8");
    expect(ignore).toContain("!dist/chat.js");
    expect(ignore).toContain("!media/lich.svg");
  });

  it("puts every command in the Lich category without reusing server command ids", () => {
    const titles = (manifest.contributes.commands as { command: string; title: string; category: string }[]).map((c) => {
      expect(c.category).toBe("Lich");
      expect(c.command.startsWith("lich.")).toBe(false);
      return c.title;
    });
    expect(titles.sort()).toEqual(
      [
        "Open Chat",
        "Ask Agent",
        "Ask Agent About Selection",
        "Cancel Task",
        "Apply Hashline Patch",
        "Show Transcript",
        "Open Task Transcript",
        "Show Tools",
        "Restart Server",
        "Open Config",
        "Trust Workspace Config",
        "Revoke Workspace Config Trust",
        "Run Tests",
        "Run Tests Matching…",
        "Undo Task",
        "Accept All",
        "Reject All",
        "Accept Change",
        "Reject Change",
        "Set Up a Model",
        "Try the Demo",
        "Read the Setup Docs",
        "Show Server Log",
        "Go To or Accept Next Edit Suggestion",
        "Dismiss Next Edit Suggestion",
      ].sort(),
    );
  });
});
