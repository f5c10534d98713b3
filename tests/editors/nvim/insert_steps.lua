-- Typing in Insert mode in a headless Neovim, for scenarios. feedkeys(keys, "tx!") types `keys`
-- and stays in Insert mode, handling events (LSP answers, timers, autocmds) while it waits for
-- more keys, until something leaves Insert mode; only then does it return. Meanwhile a timer runs
-- `steps` in order: each waits until its `wait()` is true (polled, like H.wait), then runs its
-- `run()` (checks) and feeds its `feed` keys, which Insert mode reads next as if typed (mappings
-- apply). A step that times out or raises records the error and leaves Insert mode; the error is
-- raised once feedkeys returns, so the scenario fails with it.
local POLL_MS = 20

---@param H table the harness
---@param keys string keys that start Insert mode and type (termcodes such as <Esc> allowed)
---@param steps table[] {what, wait?, run?, feed?, timeout_ms?}
return function(H, keys, steps)
  local termcodes = function(text)
    return vim.api.nvim_replace_termcodes(text, true, false, true)
  end
  local index, failure, deadline, done = 1, nil, nil, false
  local timer = vim.loop.new_timer()
  local function stop(err)
    if done then
      return
    end
    done = true
    failure = failure or err
    timer:stop()
    if vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
      vim.api.nvim_feedkeys(termcodes("<Esc>"), "n", false)
    end
  end
  timer:start(POLL_MS, POLL_MS, vim.schedule_wrap(function()
    if done then
      return
    end
    local step = steps[index]
    if not step then
      return stop(nil)
    end
    deadline = deadline or (vim.loop.now() + (step.timeout_ms or 30000))
    local ok, ready = pcall(function()
      return step.wait == nil or step.wait()
    end)
    if not ok then
      return stop("step '" .. step.what .. "' failed: " .. tostring(ready))
    end
    if not ready then
      if vim.loop.now() > deadline then
        stop("timed out waiting for: " .. step.what)
      end
      return
    end
    H.note("ok: " .. step.what)
    if step.run then
      local run_ok, err = pcall(step.run)
      if not run_ok then
        return stop("step '" .. step.what .. "' failed: " .. tostring(err))
      end
    end
    index, deadline = index + 1, nil
    if step.feed then
      vim.api.nvim_feedkeys(termcodes(step.feed), "t", false)
    end
  end))
  vim.api.nvim_feedkeys(termcodes(keys), "tx!", false)
  stop(nil)
  timer:close()
  if failure then
    error(failure, 0)
  end
  if index <= #steps then
    error("Insert mode ended before the step: " .. steps[index].what, 0)
  end
end
