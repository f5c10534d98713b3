-- Version seams. Neovim 0.7 (Debian stable) through 0.11+ all have to work, and the LSP client
-- API moved a lot in between; every version check lives here so the rest reads plainly.
local M = {}

local function has(feature)
  return vim.fn.has(feature) == 1
end

M.has_lsp_config = has("nvim-0.11") -- vim.lsp.config / vim.lsp.enable, client:method() calls
M.has_lsp_start = has("nvim-0.8") -- vim.lsp.start
M.has_progress_autocmd = has("nvim-0.10") -- LspProgress autocmd
M.has_get_clients = has("nvim-0.10") -- vim.lsp.get_clients (get_active_clients is deprecated)

--- Whether `value` is a list (vim.islist from 0.10; vim.tbl_islist is deprecated there).
M.islist = vim.islist or vim.tbl_islist

--- All lich clients, optionally only those attached to `bufnr`.
---@param name string client name
---@param bufnr integer|nil
---@return table[]
function M.get_clients(name, bufnr)
  local found = {}
  if M.has_get_clients then
    found = vim.lsp.get_clients({ name = name, bufnr = bufnr })
  elseif bufnr then
    for _, client in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if client.name == name then
        table.insert(found, client)
      end
    end
  else
    for _, client in ipairs(vim.lsp.get_active_clients()) do
      if client.name == name then
        table.insert(found, client)
      end
    end
  end
  local live = {}
  for _, client in ipairs(found) do
    if not M.is_stopped(client) then
      table.insert(live, client)
    end
  end
  table.sort(live, function(a, b)
    return a.id < b.id
  end)
  return live
end

-- 0.11 turned the client's functions into methods and deprecated the dot form.
function M.request(client, method, params, handler, bufnr)
  if M.has_lsp_config then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if M.has_lsp_config then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.cancel_request(client, request_id)
  if M.has_lsp_config then
    return client:cancel_request(request_id)
  end
  return client.cancel_request(request_id)
end

function M.is_stopped(client)
  if M.has_lsp_config then
    return client:is_stopped()
  end
  return client.is_stopped()
end

function M.stop(client, force)
  if M.has_lsp_config then
    return client:stop(force)
  end
  return client.stop(force)
end

--- Cancel a request in flight ({client_id, request_id}, or nil) with $/cancelRequest: the
--- server closes the model's stream (ghost text, next edits).
function M.cancel_in_flight(request)
  if not request then
    return
  end
  local client = vim.lsp.get_client_by_id(request.client_id)
  if client and not M.is_stopped(client) then
    pcall(M.cancel_request, client, request.request_id)
  end
end

return M
