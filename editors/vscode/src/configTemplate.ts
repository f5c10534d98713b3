/**
 * The `.lich/config.json` written by "Lich: Open Config" when the workspace has none. Every key is
 * commented out: as written, the file changes, narrows and hides nothing of the user's own
 * settings (an active `"max_turns": 25` would narrow a user's 50; see docs/configuration.md).
 */
export const CONFIG_TEMPLATE = `{
  // lich-lsp workspace configuration. Lines starting with // are comments; remove the // of a
  // line to use it (JSON: every entry but the last ends with a comma).
  // Settings made in VS Code (lich.*) override the values in this file. This file belongs to the
  // repository: until you trust it ("Lich: Trust Workspace Config") it may only narrow settings.
  // Run lich config in a terminal to see each key's value and where it comes from.

  // Model providers, tried in order (retry and failover); needs trust here:
  // "providers": [{"name": "local", "kind": "ollama", "base_url": "http://localhost:11434", "model": "qwen2.5-coder"}]

  // Model calls per task (this file may only lower it until trusted):
  // "max_turns": 25

  // apply: each edit lands in the editor as it is made; review: one reviewed edit at the end:
  // "edit_mode": "review"

  // Per capability or tool: allow | ask | deny (this file may only move towards ask or deny):
  // "approval": {"process/exec": "ask", "net/fetch": "ask"}

  // Extra code actions:
  // "code_actions": [{"title": "Add docstrings", "prompt": "Add docstrings to the selection", "kind": "refactor.rewrite.lich"}]
}
`;

/**
 * First-run setup ("Lich: Set Up a Model", the welcome view's button): one provider entry written
 * to the user config file, the file the server reads for every project
 * (`$XDG_CONFIG_HOME/lich/config.json`, else `~/.config/lich/config.json`; lich_core/config/sources.py).
 */

/** The provider kinds the setup offers (lich_core/settings.py PROVIDER_KINDS, without `replay`). */
export type SetupKind = "openai_compat" | "anthropic" | "ollama";

export interface SetupKindInfo {
  kind: SetupKind;
  label: string;
  detail: string;
  /** The server's default base URL and model for the kind (lich_core/providers/factory.py). */
  baseUrl: string;
  model: string;
  /** The environment variable the server reads the key from by default; none: no key needed. */
  keyEnv?: string;
}

export const SETUP_KINDS: readonly SetupKindInfo[] = [
  {
    kind: "openai_compat",
    label: "OpenAI-compatible",
    detail: "OpenAI, or any server with an OpenAI-style /v1/chat/completions (vLLM, llama.cpp, LM Studio, OpenRouter, ...)",
    baseUrl: "https://api.openai.com/v1",
    model: "gpt-4o-mini",
    keyEnv: "OPENAI_API_KEY",
  },
  {
    kind: "anthropic",
    label: "Anthropic",
    detail: "Claude through the Anthropic messages API",
    baseUrl: "https://api.anthropic.com",
    model: "claude-sonnet-4-0",
    keyEnv: "ANTHROPIC_API_KEY",
  },
  {
    kind: "ollama",
    label: "Ollama",
    detail: "A local Ollama server; no key",
    baseUrl: "http://localhost:11434",
    model: "llama3.1",
  },
];

/** The name the setup gives its provider entry (replaced when the setup runs again). */
export const SETUP_PROVIDER_NAME = "main";

export interface SetupProvider {
  name: string;
  kind: SetupKind;
  base_url: string;
  model: string;
  api_key_env?: string;
}

/** The user config path the server reads, for this environment (mirrors user_config_path). */
export function userConfigPath(env: Record<string, string | undefined>, homedir: string): string {
  const home = env.HOME || homedir;
  const base = env.XDG_CONFIG_HOME || `${home.replace(/\/+$/, "")}/.config`;
  return `${base.replace(/\/+$/, "")}/lich/config.json`;
}

/** `//` line comments out (outside strings), as the server's reader allows them. */
export function stripJsonComments(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      let inString = false;
      let escaped = false;
      for (let i = 0; i < line.length; i++) {
        const char = line[i];
        if (escaped) {
          escaped = false;
        } else if (char === "\\") {
          escaped = inString;
        } else if (char === '"') {
          inString = !inString;
        } else if (char === "/" && !inString && line[i + 1] === "/") {
          return line.slice(0, i);
        }
      }
      return line;
    })
    .join("\n");
}

/** Why an existing user config cannot be merged into (so the setup leaves it alone). */
export class UserConfigError extends Error {}

/**
 * The user config with `provider` as its first provider and the chat model: the existing keys are
 * kept (its comments are not: the file is written back as plain JSON), an earlier setup entry of the
 * same name is replaced, and `models.chat` starts with it when the file names chat models.
 */
export function userConfigWithProvider(existing: string | undefined, provider: SetupProvider): string {
  let data: Record<string, unknown> = {};
  if (existing !== undefined && existing.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(stripJsonComments(existing));
    } catch (err) {
      throw new UserConfigError(`it is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new UserConfigError("its top level is not an object");
    }
    data = parsed as Record<string, unknown>;
  }
  const others = Array.isArray(data.providers)
    ? data.providers.filter((entry) => !(entry && typeof entry === "object" && (entry as { name?: unknown }).name === provider.name))
    : [];
  const out: Record<string, unknown> = { ...data, providers: [{ ...provider }, ...others] };
  const models = data.models;
  if (models && typeof models === "object" && !Array.isArray(models)) {
    const chat = (models as Record<string, unknown>).chat;
    if (Array.isArray(chat)) {
      out.models = { ...models, chat: [provider.name, ...chat.filter((name) => name !== provider.name)] };
    }
  }
  return `${JSON.stringify(out, null, 2)}\n`;
}
