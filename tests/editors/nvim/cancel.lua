-- :LichCancel stops a task whose model call is slow (the fake provider waits 60 s).
return function(H)
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  local lich = require("lich")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  H.wait_client(buf)

  vim.cmd("LichAsk take your time")
  H.wait("the task is running", 30000, function()
    return #require("lich.progress").active() > 0
  end)
  local started = vim.loop.now()
  vim.cmd("LichCancel")
  H.wait("the cancelled ask returned", 40000, function()
    return #lich.finished >= 1
  end)
  local elapsed = vim.loop.now() - started
  local result = lich.finished[1].result or {}
  H.values.stopped_reason = result.stopped_reason
  H.values.cancel_ms = elapsed
  H.check("stopped as aborted", result.stopped_reason == "aborted", lich.finished[1])
  -- The model turn waits 60 s; 40 s leaves room for a loaded machine and still proves the cancel.
  H.check("stopped well before the model answered", elapsed < 40000, elapsed)
  H.check("progress ended", #require("lich.progress").active() == 0, require("lich.progress").tokens)
end
