-- The chat as a daily driver (issue #45), headless, against the real server and the fake provider
-- (tests/editors/test_nvim_chat.py scripts it: an edit_file call, "Answer one.", "Answer two."):
--   1. Empty settings go out as JSON objects ({}), not lists ([]).
--   2. Messages sent while a turn runs (from the input, and :LichAsk from the file while the
--      chat is shown) are queued: shown at the end of the conversation, `dd` on a queued line
--      and :LichUnqueue take one back, the rest go out when the turn ends; every ask from the
--      chat says origin = "chat" and nothing is notified.
--   3. The edit's diff shows only the changed lines; the tool call is a closed (manual) fold that
--      zR opens and zM closes again.
--   4. :LichChat toggles the chat, `q` closes it from either window, and a chat opened again has
--      its folds.
--   5. LichGhostText has a colour of its own in the terminal's mode, and a user's colour stays.
return function(H)
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/hello.py")
  local file_buf = vim.api.nvim_get_current_buf()
  local lich = require("lich")
  local chat = require("lich.chat")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  local client = H.wait_client(file_buf)

  -- 1. The settings section and the initialization options as JSON.
  H.values.settings = vim.fn.json_encode(client.config.settings)
  H.values.init_options = vim.fn.json_encode(client.config.init_options)
  H.check("the lich settings section is an empty object", H.values.settings == '{"lich": {}}', H.values.settings)
  H.check("the initialization options are an empty object", H.values.init_options == "{}", H.values.init_options)

  local asks = {}
  local execute = lich.execute
  lich.execute = function(command, args, callback, opts)
    if command == "lich.ask" then
      table.insert(asks, vim.deepcopy(args))
    end
    return execute(command, args, callback, opts)
  end
  local function text()
    return table.concat(chat.lines(), "\n")
  end
  local function has(needle)
    return text():find(needle, 1, true) ~= nil
  end
  local function window_of(buf)
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if vim.api.nvim_win_get_buf(win) == buf then
        return win
      end
    end
  end
  local function line_of(prefix)
    for index, line in ipairs(chat.lines()) do
      if line:sub(1, #prefix) == prefix then
        return index
      end
    end
  end
  local function queued_lines()
    local found = {}
    for _, line in ipairs(chat.lines()) do
      if line:find("^⋯ queued ") then
        table.insert(found, line)
      end
    end
    return found
  end
  local function queued()
    return vim.tbl_map(function(entry)
      return entry.prompt
    end, chat.queue)
  end
  local function feed(keys)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "mx", false)
  end

  -- 2. The queue. The first send starts the turn at once (it is running when send returns), so
  -- the next three are queued before anything of the turn arrives.
  local notified = #H.messages
  chat.open()
  chat.send("first")
  H.check("the first message started a turn", chat.running ~= nil and chat.running.prompt == "first", chat.running)
  -- :LichAsk from the file's window, with the chat shown: the chat's next turn, queued.
  vim.api.nvim_set_current_win(vim.fn.bufwinid(file_buf))
  vim.cmd("LichAsk second")
  chat.send("third")
  chat.send("fourth")
  H.check("three messages are queued", vim.deep_equal(queued(), { "second", "third", "fourth" }), queued())
  H.values.queued_shown = queued_lines()
  H.check(
    "the queue is shown at the end of the conversation",
    vim.deep_equal(queued_lines(), { "⋯ queued 1: second", "⋯ queued 2: third", "⋯ queued 3: fourth" }),
    chat.lines()
  )
  -- dd on "third"'s line, in the conversation window.
  vim.api.nvim_set_current_win(window_of(chat.conv))
  vim.api.nvim_win_set_cursor(0, { line_of("⋯ queued 2:"), 0 })
  feed("dd")
  H.check("dd took the queued message under the cursor back", vim.deep_equal(queued(), { "second", "fourth" }), queued())
  vim.cmd("LichUnqueue")
  H.check(":LichUnqueue took the last one back", vim.deep_equal(queued(), { "second" }), queued())
  H.check("the conversation shows what is left of the queue", vim.deep_equal(queued_lines(), { "⋯ queued 1: second" }), chat.lines())
  H.check("nothing of the turn was refused", #vim.tbl_filter(function(m)
    return m.msg:find("is running", 1, true) ~= nil
  end, H.messages) == 0, H.messages)

  H.wait("both turns answered and the queue empty", 60000, function()
    return #lich.finished >= 2 and chat.running == nil and #chat.queue == 0
  end)
  H.values.lines = chat.lines()
  H.check(
    "the queued :LichAsk was sent as turn 2 after turn 1's answer, about the file",
    has("Answer one.") and has("## You · turn 2\n_about hello.py_\nsecond") and has("Answer two."),
    text()
  )
  local answer_one, turn_two = line_of("Answer one."), line_of("## You · turn 2")
  H.check("turn 2 comes after turn 1's answer", answer_one and turn_two and answer_one < turn_two, { answer_one, turn_two })
  H.check("no queued line is left", #queued_lines() == 0 and not has("Sent when the turn ends"), text())
  H.check("two asks, in order", #asks == 2 and asks[1].prompt == "first" and asks[2].prompt == "second", asks)
  H.check("every ask from the chat says origin = chat", asks[1] and asks[1].origin == "chat" and asks[2] and asks[2].origin == "chat", asks)
  H.check("turn 2 continued the thread", asks[2] and asks[2].thread == chat.thread, { asks, chat.thread })
  H.check("turn 2 is about the file", asks[2] and asks[2].uri == vim.uri_from_bufnr(file_buf), asks)
  local repeated = false
  for index = notified + 1, #H.messages do
    repeated = repeated or H.messages[index].msg:find("Answer", 1, true) ~= nil
  end
  H.check("no answer was repeated with vim.notify", not repeated, H.messages)

  -- 3. The edit's diff and its fold.
  local lines = chat.lines()
  local diff_at = line_of("```diff")
  local diff = {}
  for index = diff_at or 1, #lines do
    table.insert(diff, lines[index])
    if index > diff_at and lines[index] == "```" then
      break
    end
  end
  H.values.diff = diff
  H.check(
    "the diff shows the changed lines only",
    vim.deep_equal(diff, { "```diff", "--- hello.py", "+++ hello.py", "-    return 1", "+    return 2", "```" }),
    diff
  )
  H.check("two hunks are set apart", vim.deep_equal(chat.changed_lines("a\nb\nc\nd\ne\n", "a\nB\nc\nd\nE\n"), { "-b", "+B", "@@", "-e", "+E" }))
  local heading = line_of("▸ edit_file hello.py · ok")
  local conv_win = window_of(chat.conv)
  local function closed_at(win, lnum)
    return vim.api.nvim_win_call(win, function()
      return { vim.fn.foldclosed(lnum), vim.fn.foldclosedend(lnum) }
    end)
  end
  local fold = heading and closed_at(conv_win, heading)
  H.values.fold = fold
  H.check("the tool call is a closed fold up to its diff's end", fold and fold[1] == heading and lines[fold[2]] == "```", { heading, fold })
  vim.api.nvim_win_call(conv_win, function()
    vim.cmd("normal! zR")
  end)
  H.check("zR opens it", heading and closed_at(conv_win, heading)[1] == -1)
  vim.api.nvim_win_call(conv_win, function()
    vim.cmd("normal! zM")
  end)
  H.check("zM closes it again", heading and closed_at(conv_win, heading)[1] == heading)

  -- 4. Toggle and q.
  vim.cmd("LichChat")
  H.check(":LichChat closed the shown chat", not chat.is_open() and window_of(chat.input) == nil)
  vim.cmd("LichChat")
  H.check(":LichChat opened it again, the cursor in the input", chat.is_open() and vim.api.nvim_get_current_win() == window_of(chat.input))
  conv_win = window_of(chat.conv)
  H.check("the reopened chat has its fold", heading and closed_at(conv_win, heading)[1] == heading)
  H.check("the reopened chat shows the same thread", has("Answer two."), text())
  vim.api.nvim_set_current_win(conv_win)
  feed("q")
  H.check("q in the conversation closes the chat", not chat.is_open() and window_of(chat.input) == nil)
  vim.cmd("LichChat")
  feed("q")
  H.check("q in the input closes the chat", not chat.is_open() and window_of(chat.input) == nil)
  H.check("the file's window is left", vim.api.nvim_get_current_buf() == file_buf)

  -- 5. The ghost text's colour.
  local ghost = require("lich.ghost")
  local function colour(mode)
    return vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.hlID(ghost.hl_group)), "fg", mode)
  end
  H.values.ghost_cterm = colour("cterm")
  H.check("ghost text has a terminal colour without termguicolors", not vim.o.termguicolors and colour("cterm") ~= "", vim.fn.execute("highlight " .. ghost.hl_group))
  vim.o.termguicolors = true
  H.check("and a GUI colour with termguicolors", colour("gui") ~= "", vim.fn.execute("highlight " .. ghost.hl_group))
  vim.o.termguicolors = false
  vim.cmd("highlight LichGhostText ctermfg=99")
  ghost.define_highlight()
  H.check("a colour the user set stays", colour("cterm") == "99", vim.fn.execute("highlight " .. ghost.hl_group))
  vim.cmd("colorscheme default")
  H.check("a colour scheme loaded gives it a colour again", colour("cterm") ~= "", vim.fn.execute("highlight " .. ghost.hl_group))
end
