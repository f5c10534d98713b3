-- Drives `lich demo --editor nvim` headless for tests/demo/test_demo_nvim.py: answers the
-- approval question as a user would ("Allow once"), waits for the demo's ask to finish (the demo
-- script sets g:lich_demo_done), writes what Neovim saw to $DEMO_TEST_RESULT and quits. (Not
-- LICH_* variables: the demo keeps those from the server and from Neovim.)
local questions = {}
vim.lsp.handlers["window/showMessageRequest"] = function(_, params)
  table.insert(questions, params.message)
  return { title = "Allow once" }
end
local timeout_ms = tonumber(os.getenv("DEMO_TEST_TIMEOUT_MS")) or 90000
local waited = 0
local timer = vim.loop.new_timer()
timer:start(100, 100, vim.schedule_wrap(function()
  waited = waited + 100
  if not vim.g.lich_demo_done and waited < timeout_ms then
    return
  end
  timer:stop()
  timer:close()
  local lich = require("lich")
  local finished = lich.finished[1] or {}
  local buffers = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if name:match("%.py$") then
      buffers[vim.fn.fnamemodify(name, ":t")] = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
    end
  end
  local result = {
    done = vim.g.lich_demo_done == true,
    questions = questions,
    result = finished.result,
    err = finished.err and (finished.err.message or vim.inspect(finished.err)) or vim.NIL,
    buffers = buffers,
    transcript = require("lich.transcript").lines(),
  }
  vim.fn.writefile({ vim.fn.json_encode(result) }, os.getenv("DEMO_TEST_RESULT"))
  vim.cmd("qall!")
end))
