-- :LichUndo after a task that changed the open hello.py and the closed other.py: the user has
-- typed a line on top of hello.py since. Without a task id the plugin offers the recent tasks
-- with vim.ui.select; the undo keeps the user's line, restores both files (other.py through a
-- hidden buffer and the save request) and is one undo step in the buffer. A second :LichUndo
-- finds nothing left to undo.
return function(H)
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  local lich = require("lich")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  H.wait_client(buf)

  vim.cmd("LichAsk make it return 42")
  H.wait("the ask finished", 60000, function()
    return #lich.finished >= 1
  end)
  local asked = lich.finished[1]
  H.check("the task edited", asked.err == nil and asked.result and #(asked.result.edited or {}) == 2, asked)
  H.check("buffer edited by the task", vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return 42", H.buf_text(buf))
  H.wait("other.py saved by the task", 30000, function()
    return H.read_file(ws .. "/other.py") == "x = 2\n"
  end)

  -- The user keeps working: a line on top, away from the task's line.
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "# mine" })
  -- Typing ends its own undo step (here: break the undo sequence, as leaving Insert mode does).
  vim.api.nvim_buf_call(buf, function()
    vim.o.undolevels = vim.o.undolevels
  end)

  local offered = nil
  vim.ui.select = function(items, opts, on_choice)
    offered = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item, items) }
    on_choice(items[1], 1)
  end
  vim.cmd("LichUndo")
  H.wait("the undo answered", 30000, function()
    return lich.last_undo_result ~= nil
  end)
  local result = lich.last_undo_result
  H.values.undo = result
  H.values.offered = offered
  H.check("vim.ui.select offered the task", offered and #offered.items == 1 and offered.items[1]:find("make it return 42", 1, true) ~= nil, offered)
  H.check("the undo succeeded", result.ok == true and result.task_id == asked.result.task_id, result)
  local outcomes = {}
  for _, file in ipairs(result.files or {}) do
    outcomes[file.path] = file.outcome
  end
  H.check("hello.py rebased, other.py undone", outcomes["hello.py"] == "rebased" and outcomes["other.py"] == "undone", outcomes)
  H.check("the user's line kept, the task's change gone", H.buf_text(buf) == "# mine\ndef hello():\n    return 1", H.buf_text(buf))
  H.wait("other.py restored on disk", 30000, function()
    return H.read_file(ws .. "/other.py") == "x = 1\n"
  end)

  -- One undo step in the buffer: `u` takes the whole undo back.
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent undo")
  end)
  H.check("u undoes the undo", H.buf_text(buf) == "# mine\ndef hello():\n    return 42", H.buf_text(buf))

  local seen = #H.messages
  vim.cmd("LichUndo")
  H.wait("told there is nothing to undo", 30000, function()
    for index = seen + 1, #H.messages do
      if H.messages[index].msg:find("no task to undo", 1, true) then
        return true
      end
    end
    return false
  end)
end
