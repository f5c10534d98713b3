-- Neovim 0.11+ without setup(): lsp/lich.lua is picked up by vim.lsp.enable("lich") (overridden
-- with vim.lsp.config), and plugin/lich.lua's user commands work on that client. A file outside
-- any project root gets no client.
return function(H)
  local ws = H.env.workspace
  H.check("no setup() was called", vim.g.loaded_lich and next(require("lich").running) == nil)
  vim.lsp.config("lich", { cmd = { H.env.python, "-m", "lich_lsp" } })
  vim.lsp.enable("lich")
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  local client = H.wait_client(buf)
  H.check("root from lsp/lich.lua's root markers", client.root_dir and vim.fn.resolve(client.root_dir) == vim.fn.resolve(ws), client.root_dir)

  local seen = #H.messages
  vim.cmd("LichStatus")
  H.wait(":LichStatus answered by the enabled client", 20000, function()
    for index = seen + 1, #H.messages do
      if H.messages[index].msg:find("save_documents", 1, true) then
        return true
      end
    end
    return false
  end)

  vim.cmd("edit " .. H.data.outside)
  local outside = vim.api.nvim_get_current_buf()
  -- A negative: give an attach the time it would need, then look.
  vim.wait(1000)
  H.check("no client outside a root", #require("lich.compat").get_clients("lich", outside) == 0)
end
