-- Partial accept: the word key inserts the suggestion's next word and the line key the rest of its
-- line; the rest stays on screen as ghost text at once (kept while the plugin asks again, which
-- the server answers from the same suggestion), and the accept key inserts what is left.
return function(H)
  local type_in_insert = dofile(vim.fn.fnamemodify(H.env.scenario, ":h") .. "/insert_steps.lua")
  vim.cmd("edit " .. H.env.workspace .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  local client = H.wait_client(buf)
  local ghost = require("lich.ghost")
  H.wait("the plugin read the server's completion model", 30000, function()
    return ghost.model(client.id).known
  end)

  -- The word and line rules on their own (the same code the keys use).
  local rules = {
    { "add(a, b):", "add", "add(a, b):" },
    { "(a, b):", "(", "(a, b):" },
    { " b):", " b", " b):" },
    { "):\n    x", "):", "):" },
    { "\n    return a + b", "\n    return", "\n    return a + b" },
    { "\n\n  foo\nbar", "\n\n  foo", "\n\n  foo" },
    { "naïve_x2(", "naïve_x2", "naïve_x2(" },
    { "  привет мир", "  привет", "  привет мир" },
    { "→ x", "→", "→ x" },
    { "日本語。次", "日本語", "日本語。次" },
    { "  ", "  ", "  " },
  }
  for _, case in ipairs(rules) do
    local text = case[1]
    local word, line = text:sub(1, ghost.next_word(text)), text:sub(1, ghost.next_line(text))
    H.check("word and line of " .. vim.inspect(text), word == case[2] and line == case[3], { word, line })
  end

  local function marks()
    return vim.api.nvim_buf_get_extmarks(buf, ghost.ns, 0, -1, { details = true })
  end
  local function showing(lines)
    local current = ghost.current()
    return current ~= nil and vim.deep_equal(current.lines, lines)
  end
  -- What was on screen the moment the plugin asked again after a change: with the rest of the
  -- suggestion cleared there, it would blink off until the answer came back.
  local asked = {}
  local original_request = ghost.request
  ghost.request = function(...)
    original_request(...)
    local current = ghost.current()
    table.insert(asked, { text = H.buf_text(buf), marks = #marks(), lines = current and current.lines })
  end
  H.values.kept = {}
  local answers = 0
  -- After a partial key: the buffer holds `text`, the rest is shown at once (the extmark at the
  -- cursor, drawn before the plugin asked again) and, once answered, still shown.
  local function partial(what, text, cursor_pos, rest, feed)
    return {
      {
        what = what,
        wait = function()
          return H.buf_text(buf) == text
        end,
        run = function()
          local pos = vim.api.nvim_win_get_cursor(0)
          H.check(what .. ": the cursor is after it", pos[1] == cursor_pos[1] and pos[2] == cursor_pos[2], pos)
          H.check(what .. ": the rest is shown at once", showing(rest), ghost.current())
          local found = marks()
          local details = found[1] and found[1][4] or {}
          H.check(
            what .. ": one extmark at the cursor",
            #found == 1 and found[1][2] == cursor_pos[1] - 1 and found[1][3] == cursor_pos[2],
            found
          )
          H.check(what .. ": its first line", details.virt_text and details.virt_text[1][1] == rest[1], details)
          local last = asked[#asked]
          table.insert(H.values.kept, last)
          H.check(what .. ": still shown when the plugin asked again", last and last.text == text and last.marks == 1 and vim.deep_equal(last.lines, rest), last)
        end,
      },
      {
        what = what .. ": answered, the rest still shown",
        wait = function()
          return ghost.stats.answers > answers and not ghost.pending()
        end,
        run = function()
          H.check(what .. ": the answer shows the same rest", showing(rest) and #marks() == 1, ghost.current())
          answers = ghost.stats.answers
        end,
        feed = feed,
      },
    }
  end

  local steps = {
    {
      what = "the ghost text of the suggestion",
      wait = function()
        return showing({ "add(a, b):", "    return a + b" })
      end,
      run = function()
        answers = ghost.stats.answers
      end,
      feed = "<M-Right>",
    },
  }
  local function add(list)
    for _, step in ipairs(list) do
      table.insert(steps, step)
    end
  end
  add(partial("the word key", "def add", { 1, 7 }, { "(a, b):", "    return a + b" }, "<M-C-Right>"))
  add(partial("the line key", "def add(a, b):", { 1, 14 }, { "", "    return a + b" }, "<M-Right>"))
  add(partial("the word key on a new line", "def add(a, b):\n    return", { 2, 10 }, { " a + b" }, "<C-l>"))
  add({
    {
      what = "the accept key inserted the rest",
      wait = function()
        return H.buf_text(buf) == "def add(a, b):\n    return a + b"
      end,
      run = function()
        local pos = vim.api.nvim_win_get_cursor(0)
        H.check("the cursor is after the insertion", pos[1] == 2 and pos[2] == #"    return a + b", pos)
      end,
    },
    {
      what = "the question after the whole suggestion answered",
      wait = function()
        return ghost.stats.answers > answers and not ghost.pending()
      end,
      feed = "<Esc>",
    },
  })
  type_in_insert(H, "idef ", steps)
  ghost.request = original_request
  H.check("nothing shown after Insert mode", #marks() == 0, marks())
end
