-- <Tab> and ghost text (issue #45), as copilot.vim: with a suggestion shown and no completion
-- menu open <Tab> accepts it; with none it is a real <Tab>. H.data.case:
--   "tab": the defaults (next edit suggestions map <Tab> too, with no next-edit model here);
--          accept with <Tab>, then a real <Tab> where nothing is suggested.
--   "off": completion.accept_tab = false (next edits off): the plugin does not map <Tab>.
--   "user": the user maps <Tab> in Insert mode first (next edits off): the plugin leaves it.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  local case = H.data.case
  if case == "user" then
    vim.keymap.set("i", "<Tab>", "<C-t>", { desc = "the user's own <Tab>" })
  end
  vim.cmd("edit " .. H.env.workspace .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  local opts = { cmd = { H.env.python, "-m", "lich_lsp" } }
  if case == "off" then
    opts.completion = { accept_tab = false }
  end
  if case ~= "tab" then
    opts.next_edit = { enabled = false }
  end
  require("lich").setup(opts)
  local client = H.wait_client(buf)
  local ghost = require("lich.ghost")
  H.wait("the plugin read the server's completion model", 30000, function()
    return ghost.model(client.id).known
  end)
  local function tab_map()
    local tab = vim.fn.maparg("<Tab>", "i", false, true)
    return { buffer = tab.buffer, desc = tab.desc }
  end
  if case ~= "tab" then
    -- Insert mode entered and left: the plugin maps <Tab> on InsertEnter too.
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("ix<Esc>", true, false, true), "tx", false)
    -- The attach (and its mappings) happens with the client; the model check comes after it.
    H.values.tab_map = tab_map()
    return
  end
  local function showing(lines)
    local current = ghost.current()
    return current ~= nil and vim.deep_equal(current.lines, lines)
  end
  type_in_insert(H, "idef add", {
    {
      what = "the suggestion shown",
      wait = function()
        return showing({ "(a, b):", "    return a + b" })
      end,
      feed = "<Tab>",
    },
    {
      what = "<Tab> accepted it",
      wait = function()
        return H.buf_text(buf) == "def add(a, b):\n    return a + b"
      end,
      run = function()
        H.check("the cursor is after the insertion", vim.deep_equal(vim.api.nvim_win_get_cursor(0), { 2, #"    return a + b" }))
        H.values.tab_map = tab_map()
        H.check("<Tab> is the ghost text's", H.values.tab_map.buffer == 1 and H.values.tab_map.desc == "lich: accept the inline suggestion (else a real <Tab>)", H.values.tab_map)
      end,
    },
    {
      -- The server answers the text after the suggestion with nothing (the script's empty turns).
      what = "nothing suggested after it",
      wait = function()
        return not ghost.pending() and ghost.current() == nil
      end,
      feed = "<Tab>",
    },
    {
      what = "with nothing suggested <Tab> is a real <Tab>",
      wait = function()
        -- A real <Tab>: a tab, or spaces where the filetype says so (Python: 'softtabstop').
        return H.buf_text(buf):match("^def add%(a, b%):\n    return a %+ b[ \t]+$") ~= nil
      end,
      feed = "<Esc>",
    },
  })
  H.values.text = H.buf_text(buf)
end
