-- Work-done progress of lich tasks. 0.10+ fires the LspProgress autocmd from the built-in
-- handler; 0.7-0.9 only record progress in client.messages, so there we wrap `$/progress`.
-- Either way the latest state per token is kept here (for :LichStatus) and echoed.
local compat = require("lich.compat")

local M = {}

M.enabled = true
---@type table<string, {title: string, message: string|nil, percentage: integer|nil, done: boolean}>
M.tokens = {}
M.last_echo = nil

local function key(client_id, token)
  return tostring(client_id) .. ":" .. tostring(token)
end

--- Record one `$/progress` value and echo it.
---@param client_id integer
---@param params table `{token, value}`
function M.update(client_id, params)
  local value = params and params.value
  if type(value) ~= "table" or not value.kind then
    return
  end
  local id = key(client_id, params.token)
  local entry = M.tokens[id] or { title = "lich", done = false }
  if value.kind == "begin" then
    entry = { title = value.title or "lich", done = false }
  end
  entry.message = value.message or entry.message
  entry.percentage = value.percentage or entry.percentage
  if value.kind == "end" then
    entry.done = true
  end
  M.tokens[id] = entry
  if M.enabled then
    -- The server's titles already say "lich: <task>"; do not say it twice.
    local text = entry.title:find("^lich%f[%W]") and entry.title or ("lich: " .. entry.title)
    if entry.message and entry.message ~= "" then
      text = text .. ": " .. entry.message
    end
    if entry.done then
      text = text .. " (done)"
    end
    M.last_echo = text
    -- No history: progress is transient; the transcript keeps the lasting record.
    pcall(vim.api.nvim_echo, { { text:gsub("\n", " "), "Comment" } }, false, {})
  end
end

--- Progress entries still running.
---@return table[]
function M.active()
  local running = {}
  for _, entry in pairs(M.tokens) do
    if not entry.done then
      table.insert(running, entry)
    end
  end
  return running
end

--- A `$/progress` handler for 0.7-0.9: the built-in bookkeeping, then ours.
---@param client_name string
function M.legacy_handler(client_name)
  return function(err, result, ctx, config)
    local default = vim.lsp.handlers["$/progress"]
    if default then
      pcall(default, err, result, ctx, config)
    end
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    if client and client.name == client_name then
      M.update(ctx.client_id, result)
    end
  end
end

--- Listen to LspProgress (0.10+) for clients named `client_name`; idempotent.
---@param client_name string
function M.attach_autocmd(client_name)
  if not compat.has_progress_autocmd then
    return
  end
  local group = vim.api.nvim_create_augroup("lich_progress", { clear = true })
  vim.api.nvim_create_autocmd("LspProgress", {
    group = group,
    callback = function(args)
      local data = args.data or {}
      local client = data.client_id and vim.lsp.get_client_by_id(data.client_id)
      if client and client.name == client_name then
        M.update(data.client_id, data.params)
      end
    end,
  })
end

return M
