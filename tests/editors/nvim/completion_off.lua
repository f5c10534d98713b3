-- No ghost text when the server has no completion model, or when the plugin's completion is
-- turned off: typing asks nothing, and the accept key does what it does without the plugin.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local opts = { cmd = { H.env.python, "-m", "lich_lsp" } }
  opts.completion = H.data.completion
  require("lich").setup(opts)
  local client = H.wait_client(buf)
  local ghost = require("lich.ghost")
  if H.data.expect_model_check then
    H.wait("the plugin read the server's completion model", 30000, function()
      return ghost.model(client.id).known
    end)
    H.check("the server has no completion model", ghost.model(client.id).model == nil, ghost.model(client.id))
  end
  local key = (H.data.completion or {}).accept_key or "<C-l>"
  type_in_insert(H, "idef add", {
    {
      what = "the change was seen",
      wait = function()
        return H.buf_text(buf) == "def add"
      end,
      feed = key,
    },
    {
      what = "the accept key did what it does without a suggestion",
      wait = function()
        return H.buf_text(buf) ~= "def add"
      end,
      feed = "<Esc>",
    },
  })
  H.values.after_key = H.buf_text(buf)
  H.values.changes = ghost.stats.changes
  H.values.requests = ghost.stats.requests
  H.check("no inline completion was requested", ghost.stats.requests == 0, ghost.stats)
  H.check("no ghost text", #vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, {}) == 0)
  if H.data.ask_items then
    -- Ghost text off: the client declares no inline completions, so the server answers
    -- textDocument/completion with the suggestion (what nvim-cmp and omnifunc show).
    local done, items = false, nil
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = 0, character = #"def add" },
    }
    require("lich.compat").request(client, "textDocument/completion", params, function(_, result)
      done, items = true, result
    end, buf)
    H.wait("completion items", 30000, function()
      return done
    end)
    local list = type(items) == "table" and (items.items or items) or {}
    H.values.item = list[1]
    H.check("one item carries the suggestion", list[1] and list[1].textEdit and list[1].textEdit.newText == "add(a, b):\n    return a + b", items)
  end
end
