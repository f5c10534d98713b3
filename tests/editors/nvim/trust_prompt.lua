-- The server's own question: with keys waiting for trust it asks once through
-- window/showMessageRequest ("Trust" / "Not now"). Neovim shows it with its built-in handler
-- (0.7: inputlist; 0.11: vim.ui.select inside a coroutine, else inputlist); this scenario answers
-- "Trust" through both and waits until lich.status reports the workspace trusted.
return function(H)
  local ws = H.env.workspace
  local lich = require("lich")
  local prompts = {}

  vim.fn.inputlist = function(lines)
    table.insert(prompts, { via = "inputlist", lines = lines })
    for _, line in ipairs(lines) do
      local number, title = tostring(line):match("^(%d+)%. (.*)$")
      if number and title == "Trust" then
        H.note("inputlist: answering Trust (" .. number .. ")")
        return tonumber(number)
      end
    end
    return 0
  end
  vim.ui.select = function(items, select_opts, on_choice)
    table.insert(prompts, { via = "vim.ui.select", prompt = select_opts and select_opts.prompt })
    for index, item in ipairs(items) do
      if type(item) == "table" and item.title == "Trust" then
        H.note("vim.ui.select: answering Trust")
        return on_choice(item, index)
      end
    end
    return on_choice(nil, nil)
  end

  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  H.wait_client(buf)

  H.wait("the server asked to trust the workspace", 30000, function()
    return #prompts > 0
  end)
  H.values.prompts = prompts
  H.check("asked once so far", #prompts == 1, prompts)

  -- lich.status, re-sent whenever the previous answer came back, until the state is trusted.
  local last, pending = nil, false
  H.wait("lich.status reports trusted", 30000, function()
    if type(last) == "table" and type(last.trust) == "table" and last.trust.state == "trusted" then
      return true
    end
    if not pending then
      pending = true
      lich.execute("lich.status", vim.empty_dict(), function(_, result)
        pending, last = false, result
      end)
    end
    return false
  end)
  H.values.trust = last.trust
  H.check("trusted through the prompt", last.trust.state == "trusted", last.trust)
  H.check("asked only once", #prompts == 1, prompts)
end
