/** The `.lich/config.json` written by "Lich: Open Config" when the workspace has none. */
export const CONFIG_TEMPLATE = `{
  // lich-lsp workspace configuration. Lines starting with // are comments.
  // Settings made in VS Code (lich.*) override the values in this file.

  // Model providers, tried in order (retry and failover). Uncomment and adapt one:
  // "providers": [
  //   {"name": "local", "kind": "ollama", "base_url": "http://localhost:11434", "model": "qwen2.5-coder"},
  //   {"name": "openai", "kind": "openai_compat", "base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"}
  // ],

  // Model calls per task.
  "max_turns": 25,

  // apply: each edit lands in the editor as it is made; review: one reviewed edit at the end.
  "edit_mode": "apply",

  // Per capability or tool: allow | ask | deny.
  "approval": {
    "process/exec": "ask",
    "net/fetch": "ask"
  },

  // Extra code actions: {"title": "...", "prompt": "...", "kind": "refactor.rewrite.lich"}.
  "code_actions": []
}
`;
