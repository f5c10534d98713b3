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
  -- Which of these keys the buffer maps in Insert mode (the mapping's description).
  H.values.maps = {}
  for _, map_key in ipairs(H.data.map_keys or {}) do
    local found = vim.fn.maparg(map_key, "i", false, true)
    H.values.maps[map_key] = (type(found) == "table" and found.buffer == 1 and found.desc) or ""
  end
  -- With no suggestion a key does what it does unmapped: the same mode, line and cursor after it
  -- as in a buffer without the plugin's mappings.
  local function press(fed)
    vim.api.nvim_buf_set_lines(0, 0, -1, false, { "abc def" })
    vim.api.nvim_win_set_cursor(0, { 1, 2 })
    local seen = nil
    _G.lich_test_seen = function()
      seen = { mode = vim.api.nvim_get_mode().mode, line = vim.api.nvim_get_current_line(), cursor = vim.api.nvim_win_get_cursor(0) }
    end
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("i" .. fed .. "<Cmd>lua lich_test_seen()<CR>", true, false, true), "tx", false)
    return seen
  end
  local fallthrough = H.data.fallthrough_keys or {}
  if #fallthrough > 0 then
    H.values.fallthrough, H.values.unmapped = {}, {}
    for _, fed in ipairs(fallthrough) do
      H.values.fallthrough[fed] = press(fed)
    end
    vim.cmd("enew")
    for _, fed in ipairs(fallthrough) do
      H.values.unmapped[fed] = press(fed)
    end
    vim.cmd("buffer " .. buf)
  end
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
