-- The chat drawing a thread as lich.thread returns it (no server): an edit_file call and an
-- apply_patch call as folded blocks with ```diff bodies, a refused tool in plain words, a
-- provider error, a rewound turn; then a 200-turn thread opened in under a second.
return function(H)
  local chat = require("lich.chat")
  vim.cmd("LichChat")
  local function text()
    return table.concat(chat.lines(), "\n")
  end
  local function has(needle)
    return text():find(needle, 1, true) ~= nil
  end
  chat.render_thread({
    thread = "20250101-000000-abcdef",
    title = "make it return 42",
    running = false,
    turns = {
      {
        turn = 1,
        prompt = "make it return 42",
        final = "Changed it.",
        stopped_reason = "final",
        tools = {
          { id = "c1", name = "edit_file", ok = true, result = "Edited hello.py (+1 -1)", arguments = vim.fn.json_encode({ path = "hello.py", old_string = "    return 1", new_string = "    return 42" }), kind = "edit", target = { path = "hello.py" } },
          { id = "c2", name = "apply_patch", ok = true, result = "Edited b.py (+1 -0)", arguments = { input = "@@ b.py\n+ 3:7c\n~x = 2\n" }, kind = "edit", target = { path = "b.py" } },
          { id = "c3", name = "run_command", ok = false, result = "denied: the user refused run_command", arguments = { command = "rm -rf build" }, kind = "execute", target = { command = "rm -rf build" } },
        },
      },
      { turn = 2, prompt = "again", final = "", stopped_reason = "error", error = "provider 'fake': auth: HTTP 401: invalid API key", tools = {} },
      { turn = 3, prompt = "undone", final = "Did it.", stopped_reason = "final", tools = {}, discarded = true, branch = 1 },
    },
  })
  H.values.lines = chat.lines()
  H.check("the title heads the chat", chat.lines()[1] == "# lich · make it return 42", chat.lines()[1])
  H.check("the thread and its turns in the second line", chat.lines()[2] == "_thread 20250101-000000-abcdef · 3 turns_", chat.lines()[2])
  -- Each heading's target is the server's `target` (lich.thread carries it), not the arguments.
  H.check("edit_file as a diff block", has("▸ edit_file hello.py · ok\n  arguments: ") and has("```diff\n--- hello.py\n+++ hello.py\n-    return 1\n+    return 42\n```"), text())
  H.check("apply_patch as a diff block", has("▸ apply_patch b.py · ok") and has("```diff\n+++ b.py\n@@ + 3:7c @@\n+x = 2\n```"), text())
  H.check("a refused tool reads as failed with its reason", has("▸ run_command rm -rf build · failed\n  arguments: ") and has("  error: denied: the user refused run_command"), text())
  H.check("the provider error in plain words", has("**The turn failed:** provider 'fake': auth: HTTP 401: invalid API key"), text())
  H.check("the rewound turn is marked", has("## You · turn 3 (rewound)\nundone"), text())

  local win = vim.fn.bufwinid(chat.conv)
  local lines = chat.lines()
  local folds = {}
  for index, line in ipairs(lines) do
    if line:find("^▸ ") then
      local closed, last = unpack(vim.api.nvim_win_call(win, function()
        return { vim.fn.foldclosed(index), vim.fn.foldclosedend(index) }
      end))
      table.insert(folds, { line = index, closed = closed, last = last })
    end
  end
  H.values.folds = folds
  H.check("three tool folds", #folds == 3, folds)
  for _, fold in ipairs(folds) do
    H.check("the tool at line " .. fold.line .. " is a closed fold", fold.closed == fold.line and fold.last > fold.line, fold)
  end
  if folds[1] then
    local shown = vim.api.nvim_win_call(win, function()
      vim.v.foldstart, vim.v.foldend = folds[1].line, folds[1].last
      return vim.fn.eval(vim.api.nvim_win_get_option(win, "foldtext"))
    end)
    H.check("a closed tool call shows its heading", shown == lines[folds[1].line] .. string.format("  [+%d lines]", folds[1].last - folds[1].line), shown)
  end
  local after = folds[1] and folds[1].last and lines[folds[1].last + 1]
  H.check("a fold ends with its block", after ~= nil and after == "", { after = after })

  -- Model-chosen strings (issue #43): a title, a tool name, an edit's path and a patch's path with
  -- newlines and other control characters, and an answer that imitates the headings. The thread
  -- draws, each one-line place shows them escaped, and the turns are the plugin's records.
  local ok, err = pcall(chat.render_thread, {
    thread = "odd",
    title = "a title\n## You · turn 9",
    running = false,
    turns = {
      { turn = 1, prompt = "first", final = "One.", stopped_reason = "final", tools = {} },
      {
        turn = 2,
        prompt = "second",
        final = "## You · turn 1\nfake\n## lich\nstill turn 2",
        stopped_reason = "odd\nreason",
        tools = {
          { id = "n1", name = "read_file\n## You · turn 1", ok = false, result = "unknown_tool", arguments = { path = "a\nb.py" }, target = { path = "a\nb.py" } },
          { id = "n2", name = "edit_file", ok = true, result = "Edited", arguments = { path = "x\ny.py", old_string = "a", new_string = "b" }, target = { path = "x\ny.py" } },
          { id = "n3", name = "write_file\27[31m", ok = true, result = "Wrote", arguments = { path = "z.py", content = "c" }, target = { path = "z.py" } },
        },
      },
    },
  })
  H.check("a thread full of control characters draws", ok, err)
  lines = chat.lines()
  H.values.odd_lines = lines
  H.check("the title shows its newline escaped", lines[1] == "# lich · a title\\n## You · turn 9", lines[1])
  H.check("the tool name shows its newline escaped", has("▸ read_file\\n## You · turn 1 a b.py · failed"), text())
  H.check("an edit's path shows its newline escaped", has("--- x\\ny.py\n+++ x\\ny.py"), text())
  H.check("an escape character shows as \\x1b", has("▸ write_file\\x1b[31m z.py · ok"), text())
  H.check("an odd stop reason stays on its line", has("**Stopped:** odd\\nreason"), text())
  local no_newlines = true
  for _, line in ipairs(lines) do
    no_newlines = no_newlines and not line:find("\n", 1, true)
  end
  H.check("no line holds a newline", no_newlines)
  local fake, still = nil, nil
  for index, line in ipairs(lines) do
    if line == "## You · turn 1" and index > 5 and not fake then
      fake = index
    elseif line == "still turn 2" then
      still = index
    end
  end
  H.check("the answer's fake heading belongs to turn 2", fake and chat.turn_at(fake) == 2, { fake, fake and chat.turn_at(fake) })
  H.check("the line after it too", still and chat.turn_at(still) == 2, { still, still and chat.turn_at(still) })
  H.check("turn 1's message is turn 1's", chat.turn_record(1) and chat.turn_record(1).prompt == "first", chat.turn_record(1))
  H.check("the heading lines are no turn", chat.turn_at(1) == nil and chat.turn_at(3) == nil)

  -- A long thread: one write, under a second.
  local turns = {}
  for number = 1, 200 do
    table.insert(turns, {
      turn = number,
      prompt = "question " .. number .. "\nwith a second line",
      final = "answer " .. number .. "\n\n- a list\n- of points",
      stopped_reason = "final",
      tools = { { id = "c", name = "read_file", ok = true, result = "1:aa|x", arguments = { path = "f" .. number .. ".py" }, target = { path = "f" .. number .. ".py" } } },
    })
  end
  -- An approval question of the running turn, drawn from the `approval` event's data.
  chat.render_thread({ thread = "asking", title = "asking", running = true, turns = {} })
  chat.on_event({
    type = "approval",
    thread = "asking",
    task_id = "t1",
    data = {
      turn = 1,
      call_id = "c1",
      id = "approval-1",
      tool = "terminal",
      capability = "process/exec",
      kind = "execute",
      target = { command = "make test" },
      command = "make test",
      cwd = "/ws",
      what_will_run = "runs `make test` with bash -lc in the workspace",
      question = "the question's text, not read",
      options = { "Allow once", "Allow always", "Deny" },
    },
  })
  H.check(
    "an approval is drawn from the event's data",
    has("? approval asked: terminal `make test` in /ws\n  runs `make test` with bash -lc in the workspace"),
    text()
  )
  local started = vim.loop.hrtime()
  chat.render_thread({ thread = "long", title = "long", running = false, turns = turns })
  vim.api.nvim_win_call(win, function()
    vim.cmd("normal! G")
    vim.cmd("redraw")
  end)
  local elapsed_ms = (vim.loop.hrtime() - started) / 1e6
  H.values.long_ms = elapsed_ms
  H.check("a 200-turn thread is drawn", has("## You · turn 200\nquestion 200") and has("answer 200"), #chat.lines())
  H.check("a 200-turn thread opens in under a second", elapsed_ms < 1000, elapsed_ms)
end
