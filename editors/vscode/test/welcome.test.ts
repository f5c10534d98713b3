/**
 * First-run guidance (src/welcome.ts, src/configTemplate.ts): "Set Up a Model" asks kind, URL,
 * model and key variable and writes them to the user config file the server reads, keeping what
 * the file had; the status item says "no model" while the server says none is configured, and the
 * welcome view's context key follows it; "Try the Demo" runs `lich demo` with the server's Python.
 */
import { beforeEach, describe, expect, it, vi } from "vitest";
import { SETUP_PROVIDER_NAME, userConfigPath, userConfigWithProvider } from "../src/configTemplate";
import { activate } from "../src/extension";
import { statusView } from "../src/status";
import { demoCommand, demoShellLine, providerConfigured, runModelSetup, type KindPickItem, type SetupDeps } from "../src/welcome";
import { clients, nextResponses } from "./mocks/languageclient";
import { mock } from "./mocks/vscode";

vi.mock("vscode-languageclient/node", () => import("./mocks/languageclient"));

const CONFIG = "/home/me/.config/lich/config.json";

/** A setup whose user picks `kind` and answers the input boxes in order (undefined: Escape). */
function setup(kind: string | undefined, answers: (string | undefined)[], existing?: string, env: Record<string, string> = {}) {
  const files = new Map<string, string>();
  if (existing !== undefined) {
    files.set(CONFIG, existing);
  }
  const shown = { boxes: [] as { title: string; value: string; invalid: (v: string) => string | undefined }[], infos: [] as string[], warnings: [] as string[], errors: [] as string[], written: 0, kinds: [] as string[] };
  const deps: SetupDeps = {
    ui: {
      showQuickPick: async (items: KindPickItem[]) => {
        shown.kinds = items.map((item) => item.info.kind);
        return items.find((item) => item.info.kind === kind);
      },
      showInputBox: async (options) => {
        shown.boxes.push({ title: options.title, value: options.value, invalid: (v) => options.validateInput?.(v) });
        return answers.shift();
      },
      showInformationMessage: async (message: string) => void shown.infos.push(message),
      showWarningMessage: async (message: string) => void shown.warnings.push(message),
      showErrorMessage: async (message: string) => void shown.errors.push(message),
    },
    configPath: CONFIG,
    readFile: async (file) => files.get(file),
    writeFile: async (file, text) => void files.set(file, text),
    env,
    openFile: () => undefined,
    written: async () => void shown.written++,
  };
  return { deps, files, shown };
}

describe("Set Up a Model", () => {
  it("writes an OpenAI-compatible provider with its key variable to the user config", async () => {
    const { deps, files, shown } = setup("openai_compat", ["http://127.0.0.1:8080/v1", "qwen2.5-coder", "MY_KEY"], undefined, { MY_KEY: "sk-x" });
    const outcome = await runModelSetup(deps);
    expect(shown.kinds).toEqual(["openai_compat", "anthropic", "ollama"]);
    // Each box starts from the server's defaults for the kind.
    expect(shown.boxes.map((b) => b.value)).toEqual(["https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY"]);
    expect(JSON.parse(files.get(CONFIG)!)).toEqual({
      providers: [{ name: SETUP_PROVIDER_NAME, kind: "openai_compat", base_url: "http://127.0.0.1:8080/v1", model: "qwen2.5-coder", api_key_env: "MY_KEY" }],
    });
    expect(outcome?.path).toBe(CONFIG);
    expect(shown.written).toBe(1);
    expect(shown.infos).toEqual([`Lich: OpenAI-compatible qwen2.5-coder at http://127.0.0.1:8080/v1 is saved in ${CONFIG}.`]);
  });

  it("asks no key for Ollama", async () => {
    const { deps, files, shown } = setup("ollama", ["http://localhost:11434", "qwen3"]);
    await runModelSetup(deps);
    expect(shown.boxes).toHaveLength(2);
    expect(JSON.parse(files.get(CONFIG)!).providers[0]).toEqual({ name: "main", kind: "ollama", base_url: "http://localhost:11434", model: "qwen3" });
  });

  it("warns when the key variable is not set where VS Code runs", async () => {
    const { deps, files, shown } = setup("anthropic", ["https://api.anthropic.com", "claude-sonnet-4-0", "ANTHROPIC_API_KEY"], undefined, {});
    await runModelSetup(deps);
    expect(files.has(CONFIG)).toBe(true);
    expect(shown.infos).toEqual([]);
    expect(shown.warnings[0]).toContain("ANTHROPIC_API_KEY is not set in VS Code's environment");
  });

  it("says when the lich.provider.* settings would still win over the file", async () => {
    const { deps, files, shown } = setup("ollama", ["http://localhost:11434", "qwen3"]);
    deps.settingsProvider = () => true;
    await runModelSetup(deps);
    expect(files.has(CONFIG)).toBe(true);
    expect(shown.infos).toEqual([]);
    expect(shown.warnings[0]).toContain("the lich.provider.kind setting names a provider");
  });

  it("keeps the file's other keys and providers, replaces an earlier setup and leads the chat models", async () => {
    const existing = `{
  // mine
  "max_turns": 40,
  "providers": [{"name": "main", "kind": "ollama", "model": "old"}, {"name": "work", "kind": "anthropic"}],
  "models": {"chat": ["work"], "summary": ["work"]}
}`;
    const { deps, files } = setup("ollama", ["http://gpu:11434", "qwen3"], existing);
    await runModelSetup(deps);
    expect(JSON.parse(files.get(CONFIG)!)).toEqual({
      max_turns: 40,
      providers: [
        { name: "main", kind: "ollama", base_url: "http://gpu:11434", model: "qwen3" },
        { name: "work", kind: "anthropic" },
      ],
      models: { chat: ["main", "work"], summary: ["work"] },
    });
  });

  it("leaves a file it cannot read as JSON alone and says so", async () => {
    const { deps, files, shown } = setup("ollama", ["http://localhost:11434", "qwen3"], "{ broken");
    expect(await runModelSetup(deps)).toBeUndefined();
    expect(files.get(CONFIG)).toBe("{ broken");
    expect(shown.errors[0]).toMatch(new RegExp(`^Lich: ${CONFIG} was left as it is: it is not valid JSON`));
    expect(shown.written).toBe(0);
  });

  it("writes nothing when the user stops at any step", async () => {
    for (const [kind, answers] of [
      [undefined, []],
      ["openai_compat", [undefined]],
      ["openai_compat", ["http://x/v1", undefined]],
      ["openai_compat", ["http://x/v1", "m", undefined]],
    ] as [string | undefined, (string | undefined)[]][]) {
      const { deps, files } = setup(kind, answers);
      expect(await runModelSetup(deps)).toBeUndefined();
      expect(files.size).toBe(0);
    }
  });

  it("refuses a URL without a scheme, an empty model and a key instead of a variable name", async () => {
    const { deps, shown } = setup("openai_compat", ["http://x/v1", "m", "K"]);
    await runModelSetup(deps);
    const [url, model, key] = shown.boxes;
    expect(url.invalid("localhost:8080")).toBeDefined();
    expect(url.invalid("http://localhost:8080/v1")).toBeUndefined();
    expect(model.invalid("  ")).toBeDefined();
    expect(key.invalid("sk-abc123")).toBeDefined();
    expect(key.invalid("OPENAI_API_KEY")).toBeUndefined();
  });
});

describe("the user config path", () => {
  it("is the server's: XDG_CONFIG_HOME, else HOME/.config", () => {
    expect(userConfigPath({ XDG_CONFIG_HOME: "/x/cfg", HOME: "/h" }, "/fallback")).toBe("/x/cfg/lich/config.json");
    expect(userConfigPath({ HOME: "/h/" }, "/fallback")).toBe("/h/.config/lich/config.json");
    expect(userConfigPath({}, "/fallback")).toBe("/fallback/.config/lich/config.json");
  });

  it("an empty file counts as no keys", () => {
    expect(JSON.parse(userConfigWithProvider("  \n", { name: "main", kind: "ollama", base_url: "http://h:1", model: "m" }))).toEqual({
      providers: [{ name: "main", kind: "ollama", base_url: "http://h:1", model: "m" }],
    });
  });
});

describe("Try the Demo", () => {
  it("runs lich demo with the server's own Python, or the lich next to lich-lsp", () => {
    expect(demoCommand({ command: "/venv/bin/python", args: ["-m", "lich_lsp"] })).toEqual({ command: "/venv/bin/python", args: ["-m", "lich_cli", "demo"] });
    expect(demoCommand({ command: "/venv/bin/python", args: ["-X", "utf8", "-m", "lich_lsp"] })).toEqual({ command: "/venv/bin/python", args: ["-X", "utf8", "-m", "lich_cli", "demo"] });
    expect(demoCommand({ command: "/home/me/.local/bin/lich-lsp", args: [] })).toEqual({ command: "/home/me/.local/bin/lich", args: ["demo"] });
    expect(demoCommand({ command: "/opt/wrapper.sh", args: [] })).toBeUndefined();
    expect(demoCommand(undefined)).toBeUndefined();
  });

  it("types it into the terminal's shell with the words quoted where needed", () => {
    expect(demoShellLine({ command: "/home/me/My Envs/py", args: ["-m", "lich_cli", "demo"] })).toBe("'/home/me/My Envs/py' -m lich_cli demo");
    expect(demoShellLine({ command: "/it's/py", args: [] })).toBe("'/it'\\''s/py'");
  });
});

describe("no model", () => {
  it("reads provider.configured from lich.status (undefined from an older server)", () => {
    expect(providerConfigured({ provider: { kind: "ollama", configured: false } })).toBe(false);
    expect(providerConfigured({ provider: { kind: "ollama", configured: true } })).toBe(true);
    expect(providerConfigured({ provider: { kind: "ollama" } })).toBeUndefined();
  });

  it("the status item says no model and clicks through to the setup", () => {
    const view = statusView("running", [], { kind: "ollama", model: "llama3.1", describe: "ollama llama3.1 @ http://localhost:11434", configured: false });
    expect(view.text).toBe("$(hubot) Lich: no model");
    expect(view.command).toBe("lichClient.setUpModel");
    expect(view.tooltip).toContain("No model is set up yet");
    expect(statusView("running", [], { kind: "ollama", model: "llama3.1", configured: true }).text).toBe("$(hubot) Lich: ollama/llama3.1");
  });

  beforeEach(() => {
    mock.reset();
    clients.length = 0;
    for (const key of Object.keys(nextResponses)) {
      delete nextResponses[key];
    }
  });

  it("the extension shows the welcome view while the server has no model, and the demo in a terminal", async () => {
    mock.config["lich.server.command"] = { global: "/opt/py/bin/python" };
    mock.config["lich.server.args"] = { global: ["-m", "lich_lsp"] };
    mock.files.set("/opt/py/bin/python", "");
    nextResponses["lich.status"] = { provider: { name: "default", kind: "ollama", model: "llama3.1", describe: "ollama llama3.1", configured: false }, tasks: [] };
    const state = new Map<string, unknown>();
    const ctx = {
      subscriptions: [] as { dispose(): void }[],
      extensionUri: { scheme: "file", path: "/ext" },
      workspaceState: { get: (k: string, d: unknown) => (state.has(k) ? state.get(k) : d), update: async (k: string, v: unknown) => void state.set(k, v) },
    };
    await activate(ctx as never);
    expect(mock.treeViews).toContain("lichClient.welcome");
    await vi.waitFor(() => expect(mock.statusItems[0].text).toBe("$(hubot) Lich: no model"));
    expect(mock.contextKeys.get("lich.noModel")).toBe(true);
    // The user config gained a provider: the next lich.status says so, and the view goes.
    nextResponses["lich.status"] = { provider: { name: "main", kind: "ollama", model: "qwen3", configured: true }, tasks: [] };
    await mock.commands.get("lichClient.restartServer")!();
    await vi.waitFor(() => expect(mock.statusItems[0].text).toBe("$(hubot) Lich: ollama/qwen3"));
    expect(mock.contextKeys.get("lich.noModel")).toBe(false);
    await mock.commands.get("lichClient.tryDemo")!();
    expect(mock.terminals).toEqual([{ name: "Lich demo", sent: ["/opt/py/bin/python -m lich_cli demo"] }]);
    ctx.subscriptions.forEach((d) => d.dispose());
  });
});
