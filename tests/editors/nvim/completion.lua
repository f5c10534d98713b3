-- Ghost text: typing in Insert mode asks textDocument/inlineCompletion; the suggestion shows as
-- an extmark at the cursor, leaving Insert mode clears it, typing through it is answered from the
-- server's cache (no model request), typing something else drops it, and the accept key inserts all its lines.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  local ws = H.env.workspace
  if H.data.builtin then
    -- 0.11 without setup(), and an on_attach of the user's own: ghost text still comes on.
    vim.lsp.config("lich", { cmd = { H.env.python, "-m", "lich_lsp" }, on_attach = function() end })
    vim.lsp.enable("lich")
  end
  vim.cmd("edit " .. ws .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  if not H.data.builtin then
    require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  end
  local client = H.wait_client(buf)
  local ghost = require("lich.ghost")
  H.wait("the plugin read the server's completion model", 30000, function()
    return ghost.model(client.id).known
  end)
  H.values.model = ghost.model(client.id).model
  H.check("the server has a completion model", type(H.values.model) == "string", H.values.model)

  local function marks()
    return vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
  end
  local function showing(lines)
    local current = ghost.current()
    return current ~= nil and vim.deep_equal(current.lines, lines)
  end

  local first = { "(a, b):", "    return a + b" }
  type_in_insert(H, "idef add", {
    {
      what = "the ghost text of the first suggestion",
      wait = function()
        return showing(first)
      end,
      run = function()
        local found = marks()
        H.values.extmarks = found
        local details = found[1] and found[1][4] or {}
        H.check("one extmark at the cursor", #found == 1 and found[1][2] == 0 and found[1][3] == #"def add", found)
        H.check("its first line is the suggestion's", details.virt_text and details.virt_text[1][1] == "(a, b):", details)
        H.check("the next line is a virtual line", details.virt_lines and details.virt_lines[1][1][1] == "    return a + b", details)
        H.check("highlighted as ghost text", details.virt_text and details.virt_text[1][2] == "LichGhostText", details)
      end,
      feed = "<Esc>",
    },
  })
  H.check("leaving Insert mode cleared the ghost text", #marks() == 0 and ghost.current() == nil, marks())
  H.check("the buffer holds only what was typed", H.buf_text(buf) == "def add", H.buf_text(buf))
  local requests_before = ghost.stats.requests

  type_in_insert(H, "a(", {
    {
      what = "typing through: the rest of the suggestion",
      wait = function()
        return showing({ "a, b):", "    return a + b" })
      end,
      feed = "z",
    },
    {
      what = "typing something else dropped it (a new request in flight)",
      wait = function()
        return ghost.pending()
      end,
      run = function()
        H.check("no ghost text while the new request runs", ghost.current() == nil and #marks() == 0, marks())
      end,
      -- Typed at once, so one change: "def add(a" types through the suggestion again.
      feed = "<BS>a",
    },
    {
      what = "typing through again after <BS>",
      wait = function()
        return showing({ ", b):", "    return a + b" })
      end,
      feed = "<C-l>",
    },
    {
      what = "the accept key inserted the suggestion",
      wait = function()
        return H.buf_text(buf) == "def add(a, b):\n    return a + b"
      end,
      run = function()
        local pos = vim.api.nvim_win_get_cursor(0)
        H.check("the cursor is after the insertion", pos[1] == 2 and pos[2] == #"    return a + b", pos)
      end,
      feed = "<Esc>",
    },
  })
  H.values.requests = ghost.stats.requests - requests_before
  H.check("no request left in flight", not ghost.pending())
  H.check("nothing shown after Insert mode", #marks() == 0, marks())
end
