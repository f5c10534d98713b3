// Zed starts language servers only through extensions; this one just launches lich-lsp.
// `lsp.lich-lsp.binary` in settings.json overrides the command; otherwise `lich-lsp` on PATH.
use zed_extension_api::{self as zed, settings::LspSettings, LanguageServerId, Result};

struct LichExtension;

impl zed::Extension for LichExtension {
    fn new() -> Self {
        LichExtension
    }

    fn language_server_command(
        &mut self,
        _language_server_id: &LanguageServerId,
        worktree: &zed::Worktree,
    ) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree("lich-lsp", worktree)
            .ok()
            .and_then(|settings| settings.binary);
        if let Some(path) = binary.as_ref().and_then(|b| b.path.clone()) {
            let args = binary.and_then(|b| b.arguments).unwrap_or_default();
            return Ok(zed::Command { command: path, args, env: worktree.shell_env() });
        }
        let path = worktree
            .which("lich-lsp")
            .ok_or_else(|| "lich-lsp not found on PATH: install with `pip install lich-lsp`".to_string())?;
        Ok(zed::Command { command: path, args: vec![], env: worktree.shell_env() })
    }

    fn language_server_initialization_options(
        &mut self,
        _language_server_id: &LanguageServerId,
        worktree: &zed::Worktree,
    ) -> Result<Option<zed::serde_json::Value>> {
        Ok(LspSettings::for_worktree("lich-lsp", worktree)
            .ok()
            .and_then(|settings| settings.initialization_options))
    }
}

zed::register_extension!(LichExtension);
