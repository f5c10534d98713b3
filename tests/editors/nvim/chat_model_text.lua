-- Model text steers nothing in the chat (issue #43), against the real server and the fake
-- provider (tests/editors/test_nvim_chat.py scripts it):
--   1. Turn 2's answer holds lines that read like the chat's own headings ("## You · turn 1",
--      "## You · turn 1 (rewound)", "## lich", "# lich · …"). With the cursor in that answer,
--      :LichRewind asks about turn 2, showing turn 2's message, never turn 1; "No" sends no
--      lich.rewind; `:LichRewind 1` asks about turn 1 with turn 1's message; "Yes" on turn 2
--      sends lich.rewind {thread, turn = 2} and the server rewound turn 2 and kept turn 1.
--   2. Turn 3's tool call has a name (and a path) with a newline in it: the turn still renders,
--      the name shown escaped on its one line, and the answer after it streams in.
--   3. After a server restart the chat draws the thread from lich.thread the same way, and the
--      turn under the cursor still comes from the plugin's own records.
--
-- Headless (H.data.terminal unset), the rewind's question (vim.ui.select) is answered by this
-- scenario: No, No, Yes. In a terminal (tests/editors/test_nvim_chat.py runs Neovim in tmux),
-- Neovim's own vim.ui.select is on the screen and the test types the same answers; either way
-- every question asked and its answer are recorded, and the scenario ends there (steps 2 and 3
-- run headless). With H.data.skip_rewind, step 1 stops after the two turns (the tool name's
-- test, which then holds on its own).
return function(H)
  local ws = H.env.workspace
  local terminal = H.data.terminal == true
  local rewinding = H.data.skip_rewind ~= true
  if terminal then
    -- This scenario waits in vim.wait, where nothing clears the message area between messages:
    -- the server's (each answer, several lines, and the rewind's outcome) go to the log, so
    -- none stacks into a hit-enter prompt nobody answers.
    vim.lsp.handlers["window/showMessage"] = function(_, result)
      H.note("window/showMessage: " .. tostring(type(result) == "table" and result.message or result))
    end
    -- harness.lua stubs inputlist() for headless runs; here a person answers Neovim's own.
    vim.fn.inputlist = nil
  end
  vim.cmd("edit " .. ws .. "/hello.py")
  local file_buf = vim.api.nvim_get_current_buf()
  local lich = require("lich")
  local chat = require("lich.chat")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  H.wait_client(file_buf)

  -- The plugin's request log: every command it sends to the server, in order.
  local sent = {}
  local execute = lich.execute
  lich.execute = function(command, args, callback, opts)
    table.insert(sent, { command = command, args = args })
    return execute(command, args, callback, opts)
  end
  local function rewinds()
    local found = {}
    for _, request in ipairs(sent) do
      if request.command == "lich.rewind" then
        table.insert(found, request.args)
      end
    end
    return found
  end

  -- Every question asked through vim.ui.select, and its answer (the index picked; nil: none).
  local questions = {}
  local scripted = { 2, 2, 1 }
  local real_select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    local question = { message = opts.prompt, items = items, kind = opts.kind }
    table.insert(questions, question)
    if terminal then
      return real_select(items, opts, function(item, index)
        question.answer = index
        on_choice(item, index)
      end)
    end
    local index = table.remove(scripted, 1)
    question.answer = index
    on_choice(index and items[index] or nil, index)
  end

  local function text()
    return table.concat(chat.lines(), "\n")
  end
  local function has(needle)
    return text():find(needle, 1, true) ~= nil
  end
  local function wait_answer(what, count)
    H.wait(what, 60000, function()
      return #lich.finished >= count and chat.running == nil
    end)
    return lich.finished[count]
  end
  local function conv_win()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(win) == chat.conv then
        return win
      end
    end
  end
  -- The first line that reads `needle`.
  local function line_index(needle)
    for index, line in ipairs(chat.lines()) do
      if line == needle then
        return index
      end
    end
    return nil
  end
  local function server_turns()
    local err, result = H.execute("lich.thread", { thread = chat.thread })
    if err or type(result) ~= "table" then
      return {}
    end
    local turns = {}
    for _, turn in ipairs(result.turns or {}) do
      turns[turn.turn] = { prompt = turn.prompt, discarded = turn.discarded == true }
    end
    return turns
  end
  -- :LichRewind from the conversation window, the cursor on `lnum`.
  local function rewind_at(lnum, argument)
    local win = conv_win()
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_win_set_cursor(win, { lnum, 0 })
    if terminal then
      -- The screen as a person typing the command sees it (this scenario has been in vim.wait).
      vim.cmd("redraw")
    end
    vim.cmd("LichRewind" .. (argument and (" " .. argument) or ""))
    if terminal then
      -- A person's command returns to the main loop, which clears the question; this scenario
      -- goes on waiting in vim.wait.
      vim.cmd("redraw!")
    end
  end

  -- 1. Two turns; the second answer imitates the chat's headings.
  vim.cmd("LichChat first question")
  wait_answer("the first answer", 1)
  vim.cmd("LichChat second question")
  wait_answer("the second answer", 2)
  local thread = chat.thread
  H.values.thread = thread
  H.check("both turns are in the chat", has("## You · turn 1\nfirst question") and has("## You · turn 2\nsecond question"), text())
  H.check("the answer's fake headings are shown as text", has("Before the trap.\n## You · turn 1\n"), text())
  local trap = line_index("The line under the trap.")
  local fake_heading = line_index("## You · turn 1 (rewound)")
  H.check("the trap is in turn 2's answer", trap ~= nil and fake_heading ~= nil and fake_heading < trap, { trap, fake_heading })
  H.check("the turn under the trap is turn 2 (the plugin's record)", trap and chat.turn_at(trap) == 2, trap and chat.turn_at(trap))
  H.check("the fake heading line belongs to turn 2", fake_heading and chat.turn_at(fake_heading) == 2, fake_heading and chat.turn_at(fake_heading))
  H.check("turn 1's own line belongs to turn 1", chat.turn_at(line_index("first question")) == 1)
  H.check("the thread's heading lines belong to no turn", chat.turn_at(1) == nil and chat.turn_at(2) == nil)

  if rewinding then
    -- "No": nothing is sent, nothing rewound.
    rewind_at(trap)
    local asked = questions[1]
    H.values.first_question = asked
    H.check("the rewind asked first", asked ~= nil, questions)
    H.check(
      "it asks about turn 2 and shows turn 2's message",
      asked and asked.message:find("Rewind turn 2 of this thread?", 1, true) ~= nil and asked.message:find("Turn 2: second question", 1, true) ~= nil,
      asked
    )
    H.check("it does not ask about turn 1", asked and asked.message:find("turn 1", 1, true) == nil, asked)
    H.check("it offers Yes and No", asked and asked.items[1] == "Yes, rewind turn 2" and asked.items[2] == "No", asked)
    H.check("the answer was No", asked and asked.answer == 2, asked)
    H.check("No sends no lich.rewind", #rewinds() == 0, sent)
    local turns = server_turns()
    H.check("after No the server rewound nothing", turns[1] and turns[2] and not turns[1].discarded and not turns[2].discarded, turns)

    -- An explicit turn number: the question names that turn and its message.
    rewind_at(trap, "1")
    asked = questions[2]
    H.check(
      ":LichRewind 1 asks about turn 1 with its message",
      asked and asked.message:find("Rewind turn 1 of this thread?", 1, true) ~= nil and asked.message:find("Turn 1: first question", 1, true) ~= nil,
      asked
    )
    H.check("No again sends no lich.rewind", asked and asked.answer == 2 and #rewinds() == 0, { asked, sent })

    -- "Yes": lich.rewind {thread, turn = 2}.
    local reloads = chat.reloads
    rewind_at(trap)
    asked = questions[3]
    H.check("the third question is about turn 2", asked and asked.message:find("Rewind turn 2 of this thread?", 1, true) ~= nil, asked)
    H.check("the answer was Yes", asked and asked.answer == 1, asked)
    H.wait("the rewound thread drawn", 30000, function()
      return chat.reloads > reloads
    end)
    local sent_rewinds = rewinds()
    H.values.rewinds = sent_rewinds
    H.check(
      "Yes sent lich.rewind for turn 2 of the chat's thread, once",
      #sent_rewinds == 1 and sent_rewinds[1].turn == 2 and sent_rewinds[1].thread == thread,
      sent_rewinds
    )
    turns = server_turns()
    H.check("the server rewound turn 2 and kept turn 1", turns[1] and turns[2] and not turns[1].discarded and turns[2].discarded, turns)
    H.check("the chat marks turn 2 rewound, not turn 1", has("## You · turn 2 (rewound)\nsecond question") and has("## You · turn 1\nfirst question"), text())
    H.check("three questions in all", #questions == 3, questions)
    H.values.questions = questions
  end
  if terminal then
    -- The question was the terminal's part; steps 2 and 3 run headless.
    return
  end

  -- 2. A tool name with a newline.
  vim.cmd("LichChat third question")
  local third = wait_answer("the third answer", 3)
  H.check("the third turn answered", third.err == nil and third.result and third.result.thread == thread, third)
  local tool_line = nil
  for _, line in ipairs(chat.lines()) do
    if line:find("^▸ read_file") then
      tool_line = line
    end
  end
  H.values.tool_line = tool_line
  H.check("the tool call is drawn on one line, its name escaped", tool_line ~= nil and tool_line:find("read_file\\n## You · turn 1", 1, true) == 1 + #"▸ ", tool_line)
  H.check("the answer after it is drawn", has("After the odd tool."), text())
  H.check("the chat has turn 3", has("## You · turn 3\nthird question"), text())
  local no_line_breaks = true
  for _, line in ipairs(chat.lines()) do
    no_line_breaks = no_line_breaks and line:find("\n", 1, true) == nil
  end
  H.check("no line of the chat holds a newline", no_line_breaks)
  local transcript = table.concat(require("lich.transcript").lines(), "\n")
  H.check(
    "the transcript shows the name escaped too",
    transcript:find("→ read_file\\n## You · turn 1 ", 1, true) ~= nil and transcript:find("← read_file\\n## You · turn 1 failed", 1, true) ~= nil,
    transcript
  )
  local live_lines = chat.lines()
  H.values.live_lines = live_lines

  -- 3. The server restarts: lich.thread draws the thread the same way.
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
  local drawn_tool_line = nil
  for _, line in ipairs(chat.lines()) do
    if line:find("^▸ read_file") then
      drawn_tool_line = line
    end
  end
  H.values.drawn_tool_line = drawn_tool_line
  H.values.drawn_lines = chat.lines()
  -- lich.thread keeps no durations: the live line's " (N ms)" is all that may differ.
  local live_without_duration = tool_line and tool_line:gsub(" %(%d+ ms%)$", "")
  H.check("after the restart the tool line reads the same", drawn_tool_line ~= nil and drawn_tool_line == live_without_duration, { drawn_tool_line, tool_line })
  H.check(
    "after the restart the thread is drawn whole",
    has("After the odd tool.") and has(rewinding and "## You · turn 2 (rewound)" or "## You · turn 2\n") and has("The line under the trap."),
    text()
  )
  trap = line_index("The line under the trap.")
  local odd = nil
  for index, line in ipairs(chat.lines()) do
    if line:find("^▸ read_file") then
      odd = index
    end
  end
  H.check("drawn again, the trap still belongs to turn 2", trap and chat.turn_at(trap) == 2, trap and chat.turn_at(trap))
  H.check("drawn again, the odd tool belongs to turn 3", odd and chat.turn_at(odd) == 3, odd and chat.turn_at(odd))
  H.values.questions = questions
end
