-- Next edit suggestions turned off (`next_edit = { enabled = false }`): the plugin maps no key
-- and asks nothing, though the server has a next-edit model.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  vim.cmd("edit " .. H.env.workspace .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" }, next_edit = { enabled = false } })
  H.wait_client(buf)
  local next_edit = require("lich.next_edit")
  type_in_insert(H, "2G^cwtotal", {
    { what = "typed", wait = function()
      return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    total = 0"
    end, feed = "<Esc>" },
  })
  -- lich.status answered after the change reached the server: it has the model, and nothing
  -- was asked of it.
  local err, status = H.execute("lich.status", vim.empty_dict())
  H.check("lich.status answered", err == nil, err)
  H.values.server_model = status and status.next_edit and status.next_edit.model
  H.check("the server has a next-edit model", type(H.values.server_model) == "string", status)
  -- Neovim's own <Tab> mapping (0.11: snippets) may be there; lich's is not.
  local map = vim.fn.maparg("<Tab>", "i", false, true)
  H.values.tab_map = type(map) == "table" and map.desc or ""
  H.values.requests = next_edit.stats.requests
end
