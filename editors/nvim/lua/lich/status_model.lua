--- A feature's model as the server's lich.status names it, per client: ghost text reads
--- `completion.model`, next edits `next_edit.model`. Each feature keeps its own table of
--- entries {known, model, checked, asking} (by client id); these functions read and fill it.
local compat = require("lich.compat")

local M = {}

--- What is known of the model for a client: {known, model}.
---@param models table the feature's entries
---@param client_id integer
function M.info(models, client_id)
  local entry = models[client_id]
  return { known = entry ~= nil and entry.known, model = entry and entry.model }
end

--- Ask lich.status again (once at a time per client). `field` is the feature's object in the
--- answer; null, or none from an older server, means off. `on_read(entry)` runs after each answer.
---@param models table
---@param field string
---@param on_read fun(entry: table)
function M.refresh(models, field, client, bufnr, on_read)
  local entry = models[client.id] or { known = false, checked = 0, asking = false }
  models[client.id] = entry
  if entry.asking then
    return
  end
  entry.asking = true
  local params = { command = "lich.status", arguments = { vim.empty_dict() } }
  local ok = compat.request(client, "workspace/executeCommand", params, function(err, result)
    entry.asking = false
    entry.checked = vim.loop.now()
    if err then
      return -- an older or busy server: keep what was known
    end
    local feature = type(result) == "table" and result[field] or nil
    local model = type(feature) == "table" and feature.model or nil
    entry.model = type(model) == "string" and model ~= "" and model or nil
    entry.known = true
    on_read(entry)
  end, bufnr)
  if not ok then
    entry.asking = false
  end
end

return M
