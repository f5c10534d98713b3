"""lich_lsp: the pygls language server that adapts lich_core to LSP."""
