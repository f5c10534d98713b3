-- The chat (:LichChat) against the real server and the fake provider, whose script the pytest
-- side wrote (tests/editors/test_nvim_chat.py):
--   1. :LichChat first, :LichChat follow-up: both answers in the chat buffer, one thread; the
--      follow-up's read_file call is a closed fold with its heading line.
--   2. The cursor put on line 1 of the conversation stays there while an answer streams in.
--   3. Text typed into the input and <CR> in normal mode sends it; <C-s> in insert mode too.
--   4. :LichAsk from the file, with the chat shown, continues the chat's thread.
--   5. A provider error and a cancelled turn read in plain words in the chat.
--   6. `@` completion in the input through lich.mentions.
--   7. :LichNewThread, then :LichThreads picks the thread back: drawn from lich.thread.
--   8. :LichRewind on the turn under the cursor (answering its question Yes); the server
--      restarts and the chat reloads.
return function(H)
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/hello.py")
  local file_buf = vim.api.nvim_get_current_buf()
  local lich = require("lich")
  local chat = require("lich.chat")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  H.wait_client(file_buf)

  local function text()
    return table.concat(chat.lines(), "\n")
  end
  local function has(needle)
    return text():find(needle, 1, true) ~= nil
  end
  local function wait_answer(what, count, allow_errors)
    H.wait(what, 60000, function()
      return #lich.finished >= count and chat.running == nil
    end, allow_errors)
    return lich.finished[count]
  end
  local function conv_win()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(win) == chat.conv then
        return win
      end
    end
  end
  local function input_win()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(win) == chat.input then
        return win
      end
    end
  end
  local function feed(keys)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "mx", false)
  end

  -- 1. Two turns of one thread.
  vim.cmd("LichChat first")
  H.check("the chat buffer is markdown", vim.api.nvim_buf_get_option(chat.conv, "filetype") == "markdown")
  H.check("the input window has the cursor", vim.api.nvim_get_current_win() == input_win())
  local notified = #H.messages
  local first = wait_answer("the first answer", 1)
  local repeated = false
  for index = notified + 1, #H.messages do
    repeated = repeated or H.messages[index].msg:find("Answer one.", 1, true) ~= nil
  end
  H.check("the answer in the chat is not repeated by vim.notify", not repeated, H.messages)
  H.check("first ask answered", first.err == nil and first.result.stopped_reason == "final", first)
  H.check("the first answer is in the chat", has("Answer one."), text())
  H.check("the first prompt is in the chat", has("## You · turn 1\nfirst"), text())
  local thread = chat.thread
  H.values.thread = thread
  H.check("the chat took the new thread", type(thread) == "string" and thread == first.result.thread, { chat.thread, first.result })
  H.check("the chat named the new thread itself (new_thread)", type(thread) == "string" and thread:find("^nvim%-") ~= nil, thread)
  H.check(
    "a window at the end followed the answer",
    vim.api.nvim_win_get_cursor(conv_win())[1] == vim.api.nvim_buf_line_count(chat.conv),
    { vim.api.nvim_win_get_cursor(conv_win()), vim.api.nvim_buf_line_count(chat.conv) }
  )

  H.check("lich.ask's result says the turn", first.result.turn == 1, first.result)
  -- The turn number is the server's (lich.ask's `turn`), not the plugin's count plus one: a count
  -- gone stale (turns another client added) is drawn first, then corrected by the answer.
  chat.turns = 40
  vim.cmd("LichChat follow-up")
  local second = wait_answer("the follow-up's answer", 2)
  H.check("the follow-up's result says turn 2", second.result.turn == 2, second.result)
  H.check("the chat counts the server's turns", chat.turns == 2, chat.turns)
  H.check("no heading keeps the guessed number", not has("## You · turn 41"), text())
  H.check("follow-up answered on the same thread", second.err == nil and second.result.thread == thread, second)
  H.check("both answers are in the chat", has("Answer one.") and has("Answer two."), text())
  H.check("the follow-up is turn 2", has("## You · turn 2\nfollow-up"), text())
  local heading = nil
  for index, line in ipairs(chat.lines()) do
    if line:find("^▸ read_file hello%.py · ok") then
      heading = index
    end
  end
  H.check("the tool call has a heading line", heading ~= nil, text())
  if heading then
    local closed = vim.api.nvim_win_call(conv_win(), function()
      return vim.fn.foldclosed(heading)
    end)
    H.check("the tool call is folded", closed == heading, closed)
  end

  -- 2. The user reads the top while an answer streams in.
  vim.api.nvim_win_set_cursor(conv_win(), { 1, 0 })
  local lines_before = vim.api.nvim_buf_line_count(chat.conv)
  local cursor_moved = false
  local original_on_event = chat.on_event
  chat.on_event = function(event)
    original_on_event(event)
    if event.type == "text_delta" and vim.api.nvim_win_get_cursor(conv_win())[1] ~= 1 then
      cursor_moved = true
    end
  end
  vim.cmd("LichChat third")
  wait_answer("the streamed third answer", 3)
  chat.on_event = original_on_event
  H.check("the third answer streamed in", has("Answer three, streamed in pieces."), text())
  H.check("the buffer grew", vim.api.nvim_buf_line_count(chat.conv) > lines_before)
  H.check("the cursor stayed on line 1 while it streamed", not cursor_moved)
  H.check("the cursor is still on line 1", vim.api.nvim_win_get_cursor(conv_win())[1] == 1, vim.api.nvim_win_get_cursor(conv_win()))

  -- 3. Typing into the input: <CR> in normal mode sends, <C-s> in insert mode sends.
  vim.api.nvim_set_current_win(input_win())
  feed("ityped in the input<Esc>")
  H.check("the input holds the typed text", vim.api.nvim_buf_get_lines(chat.input, 0, -1, false)[1] == "typed in the input")
  feed("<CR>")
  local fourth = wait_answer("the answer to the typed message", 4)
  H.check("<CR> sent the input", fourth.prompt == "typed in the input" and fourth.result.thread == thread, fourth)
  H.check("the input was emptied", table.concat(vim.api.nvim_buf_get_lines(chat.input, 0, -1, false), "") == "")
  H.check("the fourth answer is in the chat", has("Answer four."), text())
  vim.api.nvim_set_current_win(input_win())
  feed("isent with ctrl-s<C-s>")
  local fifth = wait_answer("the answer to the <C-s> message", 5)
  H.check("<C-s> sent the input", fifth.prompt == "sent with ctrl-s" and fifth.result.thread == thread, fifth)

  -- 4. :LichAsk in the file while the chat is shown continues its thread.
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == file_buf then
      vim.api.nvim_set_current_win(win)
    end
  end
  vim.cmd("LichAsk asked with LichAsk")
  local sixth = wait_answer("the :LichAsk answer", 6)
  H.check(":LichAsk continued the chat's thread", sixth.result and sixth.result.thread == thread, sixth)
  H.check(":LichAsk's turn is in the chat", has("## You · turn 6\n_about hello.py_\nasked with LichAsk") and has("Answer six."), text())

  -- 5. A provider error, then a cancelled turn, in plain words.
  vim.cmd("LichChat this one fails")
  wait_answer("the failing turn", 7, true)
  H.check("the provider error reads in plain words", has("**The turn failed:**"), text())
  H.check("no traceback in the chat", not has("Traceback"), text())
  vim.cmd("LichChat this one is cancelled")
  H.wait("the slow turn started", 30000, function()
    return chat.running and chat.running.thread == thread and has("## You · turn 8")
      and next(lich.running) ~= nil
  end)
  H.wait("the slow turn's first event", 30000, function()
    return require("lich.progress").active()[1] ~= nil
  end)
  vim.cmd("LichCancel")
  local cancelled = wait_answer("the cancelled turn", 8, true)
  H.check("the turn was aborted", cancelled.result and cancelled.result.stopped_reason == "aborted", cancelled)
  H.check("the cancel reads in plain words", has("**Cancelled.**"), text())

  -- 6. `@` completion of paths.
  vim.api.nvim_set_current_win(input_win())
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, { "look at @hel" })
  vim.api.nvim_win_set_cursor(0, { 1, #"look at @hel" })
  local start = chat.omnifunc(1, "")
  H.check("completion starts after the @", start == #"look at @", start)
  local items = chat.omnifunc(0, "hel")
  local words = {}
  for _, item in ipairs(items) do
    table.insert(words, item.word)
  end
  H.check("lich.mentions offered hello.py", vim.tbl_contains(words, "hello.py"), words)
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, { "mail@hel" })
  vim.api.nvim_win_set_cursor(0, { 1, #"mail@hel" })
  H.check("no completion for an @ inside a word", chat.omnifunc(1, "") == -3)
  -- Typed: `@` opens the menu without putting a path into the text; <C-n> picks the first.
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, { "" })
  local completeopt = vim.o.completeopt
  feed("ilook at @hel<Esc>")
  H.check("typing after @ inserts nothing on its own", vim.api.nvim_buf_get_lines(chat.input, 0, -1, false)[1] == "look at @hel", vim.api.nvim_buf_get_lines(chat.input, 0, -1, false))
  H.check("'completeopt' is restored", vim.o.completeopt == completeopt, vim.o.completeopt)
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, { "" })
  feed("ilook at @hel<C-n><Esc>")
  H.check("<C-n> after @hel completes hello.py", vim.api.nvim_buf_get_lines(chat.input, 0, -1, false)[1] == "look at @hello.py", vim.api.nvim_buf_get_lines(chat.input, 0, -1, false))
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, { "" })

  -- 7. A new thread, then the old one picked back from lich.threads.
  vim.cmd("LichNewThread")
  H.check("a new thread starts empty", chat.thread == nil and not has("Answer one.") and has("# lich · new thread"), text())
  local offered = nil
  vim.ui.select = function(choices, opts, on_choice)
    offered = {}
    for _, choice in ipairs(choices) do
      table.insert(offered, opts.format_item(choice))
      if choice.thread == thread then
        return on_choice(choice)
      end
    end
    on_choice(nil)
  end
  local reloads = chat.reloads
  vim.cmd("LichThreads")
  H.wait("the picked thread drawn", 30000, function()
    return chat.reloads > reloads
  end)
  H.values.offered = offered
  H.check("the picker offered the thread", offered and offered[1] and offered[1]:find("8 turns", 1, true) ~= nil, offered)
  H.check("the picked thread is the chat's", chat.thread == thread and chat.turns == 8, { chat.thread, chat.turns })
  H.check("the history is drawn from lich.thread", has("## You · turn 1\nfirst") and has("Answer one.") and has("Answer six."), text())
  H.check("the drawn thread folds its tool call", has("▸ read_file hello.py · ok"), text())
  H.check("the drawn thread shows the failure", has("**The turn failed:**") and has("**Cancelled.**"), text())

  -- 8. :LichRewind with the cursor in turn 7: turns 7 and 8 are rewound.
  local win = conv_win()
  vim.api.nvim_set_current_win(win)
  local turn7 = nil
  for index, line in ipairs(chat.lines()) do
    if line == "## You · turn 7" then
      turn7 = index
    end
  end
  vim.api.nvim_win_set_cursor(win, { turn7 + 1, 0 })
  reloads = chat.reloads
  -- The rewind asks first (tests/editors/nvim/chat_model_text.lua covers No and the question).
  local asked = nil
  vim.ui.select = function(items, opts, on_choice)
    asked = opts.prompt
    on_choice(items[1], 1)
  end
  vim.cmd("LichRewind")
  H.check("the rewind asked about turn 7", asked and asked:find("Rewind turn 7 of this thread?", 1, true) ~= nil, asked)
  H.wait("the rewound thread drawn", 30000, function()
    return chat.reloads > reloads
  end)
  H.check("turns 7 and 8 are marked rewound", has("## You · turn 7 (rewound)") and has("## You · turn 8 (rewound)") and has("## You · turn 6\n"), text())

  -- The server stops and starts again: the chat draws the thread from it again.
  local client = lich.get_client(file_buf)
  require("lich.compat").stop(client)
  H.wait("the server stopped", 30000, function()
    return require("lich.compat").is_stopped(client)
  end)
  reloads = chat.reloads
  lich.attach(file_buf)
  H.wait("the chat reloaded after the restart", 60000, function()
    return chat.reloads > reloads
  end)
  H.check("the thread survived the restart", chat.thread == thread and has("Answer one.") and has("turn 7 (rewound)"), text())

  -- The server dies in the middle of a turn: the chat says so, and draws the thread again from
  -- the restarted server.
  local calling = false
  chat.on_event = function(event)
    original_on_event(event)
    calling = calling or (event.type == "llm_start" and event.thread == thread)
  end
  vim.cmd("LichChat interrupted by a crash")
  H.wait("the cut-short turn calls the model", 30000, function()
    return calling
  end)
  chat.on_event = original_on_event
  client = lich.get_client(file_buf)
  require("lich.compat").stop(client, true)
  H.wait("the chat told the server stopped", 30000, function()
    return has("**The language server stopped** while this turn ran")
  end, true)
  H.check("no turn is running after the crash", chat.running == nil)
  reloads = chat.reloads
  lich.attach(file_buf)
  H.wait("the chat reloaded after the crash", 60000, function()
    return chat.reloads > reloads
  end, true)
  H.check("the cut-short turn is drawn", has("## You · turn 9\ninterrupted by a crash"), text())
  H.check("it did not finish, in plain words", has("**This turn did not finish**"), text())
  H.check("no stale error from the dead request", not has("**Not sent:**"), text())
  H.values.chat = chat.lines()
end
