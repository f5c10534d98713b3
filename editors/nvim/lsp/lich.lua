-- Neovim 0.11+ built-in config: with this plugin on 'runtimepath', `vim.lsp.enable("lich")` is
-- enough (override fields with `vim.lsp.config("lich", {...})`). require("lich").setup() does the
-- same and also works on 0.7-0.10.
local client = require("lich.client")
local lich = require("lich")

return client.lsp_config(lich.config)
