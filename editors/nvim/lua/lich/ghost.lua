-- Ghost text: inline completions from the lich server shown as extmarks in Insert mode.
-- Core Neovim (0.7-0.11) does not ask textDocument/inlineCompletion, so this module does: after
-- each change in Insert mode it asks the lich client (cancelling the request it asked before),
-- shows the answer as virtual text at the cursor, and inserts it on the accept key. The server
-- debounces and supersedes per document (docs/completions.md), so no timer is needed here.
local compat = require("lich.compat")

local M = {}

M.ns = vim.api.nvim_create_namespace("lich_ghost")
M.hl_group = "LichGhostText"
M.defaults = { enabled = true, accept_key = "<C-l>" }

-- lich.status is read again on InsertEnter when older than this, so a completion model added to
-- (or removed from) the config is picked up without restarting the server.
local STATUS_REFRESH_MS = 5000
-- virt_text_pos = "inline" (text after the cursor moves right) exists from 0.10; before, the
-- ghost's first line is an overlay that repeats the rest of the line after itself.
local HAS_INLINE = vim.fn.has("nvim-0.10") == 1
local TRIGGER_AUTOMATIC = 2

---@type table<integer, {model: string|nil, known: boolean, checked: number, asking: boolean}>
local models = {}
---@type {client_id: integer, request_id: integer, bufnr: integer, row: integer, col: integer}|nil
local pending = nil
---@type {bufnr: integer, row: integer, col: integer, tick: integer, lines: string[]}|nil
local shown = nil

-- Counters the tests (and curious users) read: requests sent, changes seen.
M.stats = { requests = 0, changes = 0, answers = 0 }

local function define_highlight()
  vim.cmd("highlight default link " .. M.hl_group .. " Comment")
end
define_highlight()

local function cursor()
  local pos = vim.api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

local function cancel_pending()
  local request = pending
  pending = nil
  if not request then
    return
  end
  local client = vim.lsp.get_client_by_id(request.client_id)
  if client and not compat.is_stopped(client) then
    -- $/cancelRequest: the server closes the model's stream at once.
    pcall(compat.cancel_request, client, request.request_id)
  end
end

--- Remove the ghost text and drop the request in flight.
function M.clear()
  cancel_pending()
  if shown and vim.api.nvim_buf_is_valid(shown.bufnr) then
    vim.api.nvim_buf_clear_namespace(shown.bufnr, M.ns, 0, -1)
  end
  shown = nil
end

--- The suggestion shown now ({bufnr, row, col, lines}, 0-based row, byte col), or nil.
function M.current()
  return shown
end

--- Whether a request for a suggestion is in flight.
function M.pending()
  return pending ~= nil
end

--- What the plugin knows of the server's completion model for a client: {known, model}.
---@param client_id integer
function M.model(client_id)
  local entry = models[client_id]
  return { known = entry ~= nil and entry.known, model = entry and entry.model }
end

--- Read lich.status's `completion.model` (null, or no `completion` from an older server: off).
local function refresh_model(client, bufnr)
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
    local completion = type(result) == "table" and result.completion or nil
    local model = type(completion) == "table" and completion.model or nil
    entry.model = type(model) == "string" and model or nil
    entry.known = true
    if not entry.model then
      M.clear()
    end
  end, bufnr)
  if not ok then
    entry.asking = false
  end
end

local function lich_client(bufnr, name)
  return compat.get_clients(name, bufnr)[1]
end

local function display(text)
  -- A tab inside virtual text is not expanded by every version: show the spaces it stands for.
  return (text:gsub("\t", string.rep(" ", vim.bo.tabstop)))
end

local function render(bufnr, row, col, lines)
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local first = display(lines[1])
  local opts = { hl_mode = "combine" }
  if HAS_INLINE then
    opts.virt_text = { { first, M.hl_group } }
    opts.virt_text_pos = "inline"
  else
    local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
    opts.virt_text = { { first, M.hl_group } }
    local rest = line:sub(col + 1)
    if rest ~= "" then
      table.insert(opts.virt_text, { display(rest), "Normal" })
    end
    opts.virt_text_pos = "overlay"
  end
  if #lines > 1 then
    opts.virt_lines = {}
    for index = 2, #lines do
      table.insert(opts.virt_lines, { { display(lines[index]), M.hl_group } })
    end
  end
  vim.api.nvim_buf_set_extmark(bufnr, M.ns, row, col, opts)
end

local function suggestion_text(result)
  local items = type(result) == "table" and (result.items or result) or {}
  local item = type(items) == "table" and items[1] or nil
  if type(item) ~= "table" then
    return nil, nil
  end
  local text = item.insertText
  if type(text) == "table" then
    text = text.value -- a StringValue (snippet): shown and inserted as plain text
  end
  return type(text) == "string" and text or nil, item.range
end

--- Ask for a suggestion at the cursor of `bufnr` (Insert mode, after a change).
---@param bufnr integer
---@param opts table the completion options
---@param name string the lich client's name
function M.request(bufnr, opts, name)
  M.clear()
  local client = lich_client(bufnr, name)
  if not client or not client.initialized or vim.fn.pumvisible() == 1 then
    return
  end
  local model = models[client.id]
  if not model or not model.known or not model.model then
    return
  end
  local row, col = cursor()
  local character = col
  if col > 0 then
    character = vim.lsp.util.character_offset(bufnr, row, col, client.offset_encoding or "utf-16")
  end
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = row, character = character },
    context = { triggerKind = TRIGGER_AUTOMATIC },
  }
  local request
  local ok, request_id = compat.request(client, "textDocument/inlineCompletion", params, function(err, result)
    if pending ~= request then
      return -- superseded or cleared meanwhile
    end
    pending = nil
    M.stats.answers = M.stats.answers + 1
    if err or not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr then
      return
    end
    local now_row, now_col = cursor()
    local mode = vim.api.nvim_get_mode().mode
    if mode:sub(1, 1) ~= "i" or now_row ~= row or now_col ~= col then
      return
    end
    if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return
    end
    local text, range = suggestion_text(result)
    if not text or text == "" then
      return
    end
    -- Only an insertion at the cursor is shown (what the lich server answers).
    if type(range) == "table" and range.start and (range.start.line ~= row or range.start.character ~= character) then
      return
    end
    local lines = vim.split((text:gsub("\r\n", "\n")), "\n", true)
    shown = { bufnr = bufnr, row = row, col = col, tick = tick, lines = lines }
    render(bufnr, row, col, lines)
  end, bufnr)
  if ok and request_id then
    request = { client_id = client.id, request_id = request_id, bufnr = bufnr, row = row, col = col }
    pending = request
    M.stats.requests = M.stats.requests + 1
  end
end

--- Insert the suggestion shown (all its lines) at the cursor; false when none is shown here.
---@return boolean
function M.accept()
  local ghost = shown
  if not ghost then
    return false
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local row, col = cursor()
  if ghost.bufnr ~= bufnr or ghost.row ~= row or ghost.col ~= col or vim.api.nvim_buf_get_changedtick(bufnr) ~= ghost.tick then
    M.clear()
    return false
  end
  M.clear()
  local lines = ghost.lines
  vim.api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local last_row = row + #lines - 1
  local last_col = #lines == 1 and col + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  return true
end

local group = vim.api.nvim_create_augroup("lich_ghost", { clear = true })
-- A colorscheme starts with `:highlight clear`, which drops the default link.
vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = define_highlight })

--- Wire ghost text into `bufnr` for `client` (the lich client's on_attach).
---@param client table
---@param bufnr integer
---@param opts table|nil {enabled, accept_key}
function M.attach(client, bufnr, opts)
  opts = vim.tbl_extend("force", M.defaults, opts or {})
  if opts.enabled == false then
    return
  end
  local name = client.name
  if not models[client.id] then
    refresh_model(client, bufnr)
  end
  vim.api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  vim.api.nvim_create_autocmd({ "TextChangedI", "TextChangedP" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.stats.changes = M.stats.changes + 1
      M.request(bufnr, opts, name)
    end,
  })
  vim.api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      -- Moving away from the suggestion (or where it was asked for) drops it.
      local row, col = cursor()
      local at = shown or pending
      if at and (at.bufnr ~= bufnr or at.row ~= row or at.col ~= col) then
        M.clear()
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
    group = group,
    buffer = bufnr,
    callback = M.clear,
  })
  vim.api.nvim_create_autocmd("InsertEnter", {
    group = group,
    buffer = bufnr,
    callback = function()
      local live = lich_client(bufnr, name)
      local entry = live and models[live.id]
      if live and (not entry or vim.loop.now() - entry.checked > STATUS_REFRESH_MS) then
        refresh_model(live, bufnr)
      end
    end,
  })
  local key = opts.accept_key
  if type(key) == "string" and key ~= "" then
    vim.keymap.set("i", key, function()
      if not M.accept() then
        -- No suggestion here: the key does what it does without this mapping.
        vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(key, true, false, true), "ni", false)
      end
    end, { buffer = bufnr, desc = "lich: accept the inline suggestion" })
  end
end

--- Forget a stopped client's model (a restarted server is asked again).
---@param client_id integer
function M.forget(client_id)
  models[client_id] = nil
  if pending and pending.client_id == client_id then
    pending = nil
  end
end

return M
