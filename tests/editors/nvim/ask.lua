-- :1,2LichAsk with the fake provider scripted to read then patch: the buffer changes and the
-- saveDocuments request writes it to disk; the transcript and progress saw the task. Then the
-- "Ask agent…" code action, chosen through vim.lsp.buf.code_action, prompts with vim.ui.input,
-- and so does :LichAsk without a prompt. A second server ("bystander") is attached to the same
-- buffer throughout: none of the plugin's commands may reach it.
return function(H)
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  local lich = require("lich")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  H.wait_client(buf)
  local bystander = H.start_bystander(buf)

  vim.cmd("1,2LichAsk make it return 42")
  H.wait("the ask finished", 60000, function()
    return #lich.finished >= 1
  end)
  local first = lich.finished[1]
  H.values.first = first
  H.check("ask answered without error", first.err == nil, first.err)
  H.check("stopped with a final answer", first.result and first.result.stopped_reason == "final", first.result)
  H.check("result lists the edited file", first.result and vim.tbl_contains(first.result.edited or {}, vim.uri_from_bufnr(buf)), first.result)
  H.check("buffer edited", vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return 42", H.buf_text(buf))
  H.check("saved by lich/saveDocuments", H.read_file(ws .. "/hello.py") == "def hello():\n    return 42\n", H.read_file(ws .. "/hello.py"))
  H.check("buffer not modified after save", not vim.api.nvim_buf_get_option(buf, "modified"))

  local transcript = table.concat(require("lich.transcript").lines(), "\n")
  H.check("transcript shows the tool calls", transcript:find("→ read_file", 1, true) and transcript:find("← apply_patch ok", 1, true), transcript)
  H.check("transcript shows the answer", transcript:find("Changed the return value to 42.", 1, true) ~= nil, transcript)
  local progress_seen = false
  for _, entry in pairs(require("lich.progress").tokens) do
    progress_seen = progress_seen or (entry.done and entry.title:find("make it return 42", 1, true) ~= nil)
  end
  H.check("work-done progress began and ended", progress_seen, require("lich.progress").tokens)

  -- The code action path: the server's "Ask agent…" carries lich.ask without a prompt; the
  -- client-side lich.ask handler asks for one.
  -- 0.7-0.9 list {client_id, action} pairs, 0.10+ {action, ctx}; pick the lich client's action.
  local lich_id = lich.get_client(buf).id
  vim.ui.select = function(items, opts, on_choice)
    for index, item in ipairs(items) do
      local action = item.action or item[2]
      local client_id = item.ctx and item.ctx.client_id or item[1]
      if action and action.title == "Ask agent…" and client_id == lich_id then
        return on_choice(item, index)
      end
    end
    H.note("no Ask agent… among " .. #items .. " actions")
    on_choice(nil, nil)
  end
  local asked = nil
  vim.ui.input = function(opts, on_confirm)
    asked = opts.prompt
    on_confirm("explain, typed into vim.ui.input")
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.lsp.buf.code_action()
  H.wait("the code action ask finished", 60000, function()
    return #lich.finished >= 2
  end)
  H.check("vim.ui.input prompted", asked ~= nil, asked)
  local second = lich.finished[2]
  H.values.second = second
  H.check("code action ask finished", second.err == nil and second.result and second.result.stopped_reason == "final", second)

  -- :LichAsk with no prompt asks for one.
  local input_prompt = nil
  vim.ui.input = function(opts, on_confirm)
    input_prompt = opts.prompt
    on_confirm("typed at the LichAsk prompt")
  end
  vim.cmd("LichAsk")
  H.wait("the prompted :LichAsk finished", 60000, function()
    return #lich.finished >= 3
  end)
  H.check(":LichAsk without a prompt used vim.ui.input", input_prompt ~= nil, input_prompt)
  local third = lich.finished[3]
  H.check("prompted ask finished", third.prompt == "typed at the LichAsk prompt" and third.err == nil, third)

  -- Everything above went to the lich client only.
  local err, status = H.execute_on(bystander, "lich.status", vim.empty_dict())
  H.values.bystander_tasks = status and status.tasks
  H.check("the bystander server received no task", err == nil and type(status) == "table" and #(status.tasks or {}) == 0, status)
end
