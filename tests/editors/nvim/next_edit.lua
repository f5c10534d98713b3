-- Next edit suggestions (issue #47): renaming `count` at its definition in Insert mode asks
-- textDocument/copilotInlineEdit; the uses below show as suggestions away from the cursor (the
-- replaced text highlighted, the new text as virtual text, a sign); <Tab> jumps to the first,
-- <Tab> again accepts it, and so on for the next; <Esc> in Insert mode leaves the suggestion up,
-- <Esc> in Normal mode dismisses it. H.data.terminal: Neovim draws on a real terminal (tmux),
-- and the screen is checked from the pytest side while the scenario waits on `H.values.stage`.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  local ws = H.env.workspace
  if H.data.builtin then
    -- 0.11 without setup(): the built-in config, next edits wired as :help lich-next-edit says.
    vim.lsp.config("lich", { cmd = { H.env.python, "-m", "lich_lsp" } })
    vim.lsp.enable("lich")
    require("lich.next_edit").setup(require("lich").config)
  end
  vim.cmd("edit " .. ws .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  if not H.data.builtin then
    require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" }, next_edit = H.data.next_edit })
  end
  local client = H.wait_client(buf)
  local next_edit = require("lich.next_edit")
  H.wait("the plugin read the server's next-edit model", 30000, function()
    return next_edit.model(client.id).known
  end)
  H.values.model = next_edit.model(client.id).model
  H.check("the server has a next-edit model", type(H.values.model) == "string", H.values.model)

  local function rows()
    local current = next_edit.current()
    local found = {}
    for _, edit in ipairs(current and current.edits or {}) do
      table.insert(found, edit.start_row)
    end
    return found
  end
  local function cursor()
    local pos = vim.api.nvim_win_get_cursor(0)
    return { pos[1] - 1, pos[2] }
  end
  -- The terminal test reads the screen at each stage; headless goes straight on.
  local function stage(name)
    H.values.stage = name
    if H.data.terminal then
      vim.cmd("redraw!")
      -- Longer than the test's own wait for a screen (tests/support/tmux.py), so it gives up first.
      H.wait("the test read the screen at " .. name, 150000, function()
        return vim.fn.filereadable(H.env.workspace .. "/seen-" .. name) == 1
      end)
    end
  end
  local requests_before = next_edit.stats.requests

  type_in_insert(H, "2G^cwtotal", {
    {
      what = "suggestions on the two lines that use count",
      wait = function()
        return vim.deep_equal(rows(), { 3, 4 })
      end,
      run = function()
        local marks = vim.api.nvim_buf_get_extmarks(buf, next_edit.ns, 0, -1, { details = true })
        H.values.marks = marks
        local deleted, inserted, signs = 0, {}, 0
        -- The sign as drawn (0.7's extmark details do not report signs): the sign column's
        -- cells on each suggestion's screen row.
        vim.cmd("redraw")
        for _, row in ipairs({ 4, 5 }) do
          local screen_row = vim.fn.screenpos(0, row, 1).row
          if screen_row > 0 and (vim.fn.screenstring(screen_row, 1) .. vim.fn.screenstring(screen_row, 2)):find("»", 1, true) then
            signs = signs + 1
          end
        end
        for _, mark in ipairs(marks) do
          local details = mark[4] or {}
          if details.hl_group == next_edit.hl.delete then
            deleted = deleted + 1
          end
          for _, chunk in ipairs(details.virt_text or {}) do
            table.insert(inserted, chunk[1])
          end
        end
        H.check("the replaced text is highlighted on both lines", deleted == 2, marks)
        H.check("a gutter sign on both lines", signs == 2, marks)
        H.check("the new text shows as virtual text", #inserted == 2 and inserted[1]:find("total", 1, true) ~= nil, inserted)
        H.check("the cursor is still where the user typed", vim.deep_equal(cursor(), { 1, #"    total" }), cursor())
        H.check("nothing was changed yet", H.buf_text(buf):find("count += item", 1, true) ~= nil, H.buf_text(buf))
        stage("shown")
      end,
      feed = "<Tab>",
    },
    {
      what = "<Tab> jumped to the first suggestion",
      wait = function()
        return cursor()[1] == 3
      end,
      run = function()
        H.check("the buffer is unchanged by the jump", H.buf_text(buf):find("count += item", 1, true) ~= nil, H.buf_text(buf))
      end,
      feed = "<Tab>",
    },
    {
      what = "<Tab> again accepted it",
      wait = function()
        return vim.api.nvim_buf_get_lines(buf, 3, 4, false)[1] == "        total += item"
      end,
      run = function()
        H.values.after_first_accept = H.buf_text(buf)
        stage("accepted")
      end,
    },
    {
      what = "the suggestion on the last line",
      wait = function()
        return vim.deep_equal(rows(), { 4 })
      end,
      feed = "<Tab>",
    },
    {
      what = "<Tab> jumped to it",
      wait = function()
        return cursor()[1] == 4
      end,
      feed = "<Tab>",
    },
    {
      what = "<Tab> accepted it",
      wait = function()
        return vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1] == "    return total"
      end,
      feed = "<Esc>",
    },
  })
  H.values.renamed = H.buf_text(buf)

  -- A new use of the old name: its suggestion survives leaving Insert mode; Normal mode's <Esc>
  -- dismisses it.
  type_in_insert(H, "Goprint(count)", {
    {
      what = "a suggestion for the new line",
      wait = function()
        return vim.deep_equal(rows(), { 5 })
      end,
      feed = "<Esc>",
    },
  })
  H.check("<Esc> in Insert mode left the suggestion up", vim.deep_equal(rows(), { 5 }), rows())
  stage("before_dismiss")
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<Esc>", true, false, true), "mx", false)
  H.check("<Esc> in Normal mode dismissed it", next_edit.current() == nil, next_edit.current())
  H.check("no marks are left", #vim.api.nvim_buf_get_extmarks(buf, next_edit.ns, 0, -1, {}) == 0)
  H.values.final = H.buf_text(buf)
  H.values.requests = next_edit.stats.requests - requests_before
  H.values.accepted = next_edit.stats.accepted
  stage("dismissed")
end
