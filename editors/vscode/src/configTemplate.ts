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
