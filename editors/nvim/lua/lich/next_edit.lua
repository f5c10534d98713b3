-- Next edit suggestions (issue #47): after a change, ask the lich server's
-- textDocument/copilotInlineEdit (Copilot's shape) for the edits the user is about to make, near
-- the cursor or away from it, and show each at its place with extmarks: the text it replaces
-- highlighted as deleted, the text it inserts as virtual text, a sign in the gutter. The accept
-- key (<Tab>) first jumps to the suggestion, then accepts it; the dismiss key (<Esc> in Normal
-- mode) drops it. On by default whenever the server has a next-edit model (lich.status
-- `next_edit.model`); see :help lich-next-edit.
local compat = require("lich.compat")
local status_model = require("lich.status_model")

local M = {}

M.ns = vim.api.nvim_create_namespace("lich_next_edit")
M.hl = { delete = "LichNextEditDelete", insert = "LichNextEditInsert", sign = "LichNextEditSign" }
M.defaults = {
  -- false: never ask; true: ask whenever the server has a next-edit model.
  enabled = true,
  -- Jump to the suggestion; pressed on it, accept it (Normal and Insert mode).
  accept_key = "<Tab>",
  -- Drop the suggestions shown (Normal mode: <Esc> in Insert mode still leaves Insert mode, and
  -- the suggestion that follows the change stays up).
  dismiss_key = "<Esc>",
  -- Wait this long after the last change before asking (a burst of typing asks once).
  debounce_ms = 75,
  sign_text = "»",
}

-- lich.status is read again on a change when older than this, so a next-edit model added to (or
-- removed from) the config is picked up without restarting the server.
local STATUS_REFRESH_MS = 5000
-- Inline virtual text (the inserted text inside the line) exists from 0.10; before, it goes at
-- the end of the line. virt_lines (the lines an edit inserts after the first) may be missing.
local HAS_INLINE = vim.fn.has("nvim-0.10") == 1
local HAS_VIRT_LINES = vim.fn.has("nvim-0.6") == 1

---@type table<integer, {model: string|nil, known: boolean, checked: number, asking: boolean}>
local models = {}
---@type {client_id: integer, request_id: integer, bufnr: integer}|nil
local pending = nil
---@type {bufnr: integer, tick: integer, edits: {mark: integer, text: string, decorations: integer[]}[]}|nil
local shown = nil
local timer = nil
-- Buffers edited before lich.status answered, with what M.request needs: asked once it has.
---@type table<integer, {opts: table, name: string}>
local ask_when_known = {}

-- Counters the tests (and curious users) read.
M.stats = { requests = 0, answers = 0, shown = 0, accepted = 0 }

local function define_highlights()
  vim.cmd("highlight default link " .. M.hl.delete .. " DiffDelete")
  vim.cmd("highlight default link " .. M.hl.insert .. " DiffAdd")
  vim.cmd("highlight default link " .. M.hl.sign .. " DiffChange")
end
define_highlights()

local function cursor()
  local pos = vim.api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

local function cancel_pending()
  local request = pending
  pending = nil
  compat.cancel_in_flight(request)
end

--- Remove the suggestions shown (the request in flight stays).
local function clear_shown()
  if shown and vim.api.nvim_buf_is_valid(shown.bufnr) then
    vim.api.nvim_buf_clear_namespace(shown.bufnr, M.ns, 0, -1)
  end
  shown = nil
end

--- Drop the suggestions shown and the request in flight.
function M.clear()
  cancel_pending()
  clear_shown()
end

--- Whether a request is in flight.
function M.pending()
  return pending ~= nil
end

--- The suggestions shown, for the tests and statuslines: nil, or {bufnr, edits = {{start_row,
--- start_col, end_row, end_col, text}}} with 0-based rows and byte columns, in the buffer as it is.
function M.current()
  if not shown or not vim.api.nvim_buf_is_valid(shown.bufnr) then
    return nil
  end
  local edits = {}
  for _, edit in ipairs(shown.edits) do
    local mark = vim.api.nvim_buf_get_extmark_by_id(shown.bufnr, M.ns, edit.mark, { details = true })
    if mark and mark[1] then
      local details = mark[3] or {}
      table.insert(edits, {
        start_row = mark[1],
        start_col = mark[2],
        end_row = details.end_row or mark[1],
        end_col = details.end_col or mark[2],
        text = edit.text,
      })
    end
  end
  return { bufnr = shown.bufnr, edits = edits }
end

--- What the plugin knows of the server's next-edit model for a client: {known, model}.
---@param client_id integer
function M.model(client_id)
  return status_model.info(models, client_id)
end

--- Read lich.status's `next_edit.model` (null, or no `next_edit` from an older server: off).
local function refresh_model(client, bufnr)
  status_model.refresh(models, "next_edit", client, bufnr, function(entry)
    if not entry.model then
      M.clear()
    end
    local waiting = ask_when_known
    ask_when_known = {}
    for buf, ask in pairs(waiting) do
      if entry.model and vim.api.nvim_buf_is_valid(buf) then
        M.request(buf, ask.opts, ask.name) -- asks only about the current buffer
      end
    end
  end)
end

local function lich_client(bufnr, name)
  return compat.get_clients(name, bufnr)[1]
end

--- The byte column of LSP `character` in `line` for the client's position encoding.
local function byte_col(line, character, encoding)
  if encoding == "utf-8" then
    return math.min(character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, character, encoding ~= "utf-32")
  return ok and col or #line
end

local function display(text)
  -- A tab inside virtual text is not expanded by every version: show the spaces it stands for.
  return (text:gsub("\t", string.rep(" ", vim.bo.tabstop)))
end

--- Draw one edit at (sr, sc)-(er, ec); returns its range mark (tracks the range as the buffer
--- changes) and the marks that only decorate.
local function render_edit(bufnr, sr, sc, er, ec, text, sign_text)
  local mark_opts = {
    end_row = er,
    end_col = ec,
    -- The range grows with text typed at its edges, as the text it would replace does.
    right_gravity = false,
    end_right_gravity = true,
    sign_text = sign_text ~= "" and sign_text or nil,
    sign_hl_group = M.hl.sign,
  }
  if sr ~= er or sc ~= ec then
    mark_opts.hl_group = M.hl.delete
  end
  local mark = vim.api.nvim_buf_set_extmark(bufnr, M.ns, sr, sc, mark_opts)
  local decorations = {}
  if text == "" then
    return mark, decorations
  end
  local lines = vim.split((text:gsub("\r\n", "\n")), "\n", true)
  local opts = { virt_text = { { display(lines[1]), M.hl.insert } }, hl_mode = "combine" }
  if HAS_INLINE then
    opts.virt_text_pos = "inline"
  else
    -- 0.7-0.9: the inserted text after the line, marked as what replaces the highlighted text.
    opts.virt_text = { { " ⇢ " .. display(lines[1]), M.hl.insert } }
    opts.virt_text_pos = "eol"
  end
  if #lines > 1 and HAS_VIRT_LINES then
    opts.virt_lines = {}
    for index = 2, #lines do
      table.insert(opts.virt_lines, { { display(lines[index]), M.hl.insert } })
    end
  end
  local ok, id = pcall(vim.api.nvim_buf_set_extmark, bufnr, M.ns, er, ec, opts)
  if not ok and opts.virt_lines then
    -- A Neovim without virt_lines: the first line only (accepting still inserts them all).
    opts.virt_lines = nil
    ok, id = pcall(vim.api.nvim_buf_set_extmark, bufnr, M.ns, er, ec, opts)
  end
  if ok then
    table.insert(decorations, id)
  end
  return mark, decorations
end

--- Show the `edits` of an answer (LSP ranges in the client's encoding) in `bufnr`.
local function show(bufnr, tick, edits, encoding, sign_text)
  clear_shown()
  local list = {}
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  for _, edit in ipairs(type(edits) == "table" and edits or {}) do
    local range = type(edit) == "table" and edit.range or nil
    local text = type(edit) == "table" and edit.text or nil
    if type(range) == "table" and type(text) == "string" and range.start and range["end"] then
      local sr, er = range.start.line, range["end"].line
      if sr >= 0 and er >= sr and er < line_count then
        local first = vim.api.nvim_buf_get_lines(bufnr, sr, sr + 1, false)[1] or ""
        local last = vim.api.nvim_buf_get_lines(bufnr, er, er + 1, false)[1] or ""
        local sc = byte_col(first, range.start.character, encoding)
        local ec = byte_col(last, range["end"].character, encoding)
        local mark, decorations = render_edit(bufnr, sr, sc, er, ec, text, sign_text)
        table.insert(list, { mark = mark, text = text, decorations = decorations })
      end
    end
  end
  if #list > 0 then
    shown = { bufnr = bufnr, tick = tick, edits = list }
    M.stats.shown = M.stats.shown + 1
  end
end

--- Ask for next edits at the cursor of `bufnr` (after a change).
---@param bufnr integer
---@param opts table the next_edit options
---@param name string the lich client's name
function M.request(bufnr, opts, name)
  cancel_pending()
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr then
    return
  end
  local client = lich_client(bufnr, name)
  local model = client and models[client.id]
  if client and (not model or not model.known) then
    ask_when_known[bufnr] = { opts = opts, name = name }
  end
  if not client or not client.initialized or not model or not model.known or not model.model then
    return
  end
  local row, col = cursor()
  local encoding = client.offset_encoding or "utf-16"
  local character = col > 0 and vim.lsp.util.character_offset(bufnr, row, col, encoding) or 0
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr), version = vim.lsp.util.buf_versions[bufnr] },
    position = { line = row, character = character },
  }
  local request
  local ok, request_id = compat.request(client, "textDocument/copilotInlineEdit", params, function(err, result)
    if pending ~= request then
      return -- superseded or cleared meanwhile
    end
    pending = nil
    M.stats.answers = M.stats.answers + 1
    if err or not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return -- an error, or the buffer changed since: its own request follows
    end
    show(bufnr, tick, type(result) == "table" and result.edits or nil, encoding, opts.sign_text or "")
  end, bufnr)
  if ok and request_id then
    request = { client_id = client.id, request_id = request_id, bufnr = bufnr }
    pending = request
    M.stats.requests = M.stats.requests + 1
  end
end

-- The edit the accept key goes to: the first one that ends at or after the cursor, else the
-- first (the server sends them in document order).
local function target_edit(edits, row, col)
  for index, edit in ipairs(edits) do
    if edit.end_row > row or (edit.end_row == row and edit.end_col >= col) then
      return index, edit
    end
  end
  return 1, edits[1]
end

--- The accept key: jump to the suggestion, or accept it when the cursor is on it. False when
--- no suggestion is shown in the current buffer (the key then does what it does unmapped).
---@return boolean
function M.accept()
  local current = M.current()
  local bufnr = vim.api.nvim_get_current_buf()
  if not current or current.bufnr ~= bufnr or #current.edits == 0 then
    return false
  end
  local row, col = cursor()
  local index, edit = target_edit(current.edits, row, col)
  local on_it = row >= edit.start_row and row <= edit.end_row
    and (row ~= edit.start_row or col >= edit.start_col)
    and (row ~= edit.end_row or col <= edit.end_col)
  if not on_it then
    vim.api.nvim_win_set_cursor(0, { edit.start_row + 1, edit.start_col })
    return true
  end
  local entry = table.remove(shown.edits, index)
  vim.api.nvim_buf_del_extmark(bufnr, M.ns, entry.mark)
  for _, id in ipairs(entry.decorations) do
    vim.api.nvim_buf_del_extmark(bufnr, M.ns, id)
  end
  local lines = vim.split((edit.text:gsub("\r\n", "\n")), "\n", true)
  vim.api.nvim_buf_set_text(bufnr, edit.start_row, edit.start_col, edit.end_row, edit.end_col, lines)
  local last_row = edit.start_row + #lines - 1
  local last_col = #lines == 1 and edit.start_col + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  M.stats.accepted = M.stats.accepted + 1
  -- The other suggestions stay (their marks moved with the text) until the answer to the
  -- request this change sends replaces them.
  shown.tick = vim.api.nvim_buf_get_changedtick(bufnr)
  if #shown.edits == 0 then
    clear_shown()
  end
  return true
end

--- The dismiss key: drop the suggestions shown; false when there are none.
---@return boolean
function M.dismiss()
  if not shown then
    return false
  end
  M.clear()
  return true
end

--- Do what `key` did before the plugin mapped it: run the `previous` mapping (maparg()'s dict)
--- or, with none, the key itself unmapped.
local function fall_through(key, previous)
  local keys = vim.api.nvim_replace_termcodes(key, true, false, true)
  if previous then
    local ok, out = pcall(function()
      if previous.callback then
        return previous.callback()
      end
      return previous.expr == 1 and vim.api.nvim_eval(previous.rhs) or previous.rhs
    end)
    if ok and previous.callback and previous.expr ~= 1 then
      return -- a Lua mapping that did its work
    end
    if ok and type(out) == "string" then
      if previous.expr ~= 1 or previous.replace_keycodes ~= 0 then
        out = vim.api.nvim_replace_termcodes(out, true, true, true) -- <lt> too, as a mapping reads it
      end
      -- "i": in place of the key, before what was typed after it.
      vim.api.nvim_feedkeys(out, previous.noremap == 1 and "ni" or "mi", false)
      return
    end
  end
  vim.api.nvim_feedkeys(keys, "ni", false)
end

local group = vim.api.nvim_create_augroup("lich_next_edit", { clear = true })
-- A colorscheme starts with `:highlight clear`, which drops the default links.
vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = define_highlights })

--- Wire next edits into `bufnr` for `client` (the lich client's attach).
---@param client table
---@param bufnr integer
---@param opts table|nil see M.defaults
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
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "TextChangedP" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      local tick = vim.api.nvim_buf_get_changedtick(bufnr)
      if shown and (shown.bufnr ~= bufnr or shown.tick ~= tick) then
        clear_shown() -- drawn for text that is not there any more
      end
      cancel_pending()
      local live = lich_client(bufnr, name)
      local entry = live and models[live.id]
      if live and (not entry or vim.loop.now() - entry.checked > STATUS_REFRESH_MS) then
        refresh_model(live, bufnr)
      end
      timer = timer or vim.loop.new_timer()
      timer:stop()
      timer:start(math.max(0, opts.debounce_ms or 0), 0, vim.schedule_wrap(function()
        M.request(bufnr, opts, name)
      end))
    end,
  })
  vim.api.nvim_create_autocmd("BufLeave", { group = group, buffer = bufnr, callback = M.clear })
  local function map(modes, key, fn, desc)
    if type(key) ~= "string" or key == "" then
      return -- false or "": the user keeps the key
    end
    for _, mode in ipairs(type(modes) == "table" and modes or { modes }) do
      -- What the key did before (nvim-cmp's <Tab>, 0.11's snippet <Tab>, the user's own): it
      -- still does that whenever no suggestion is shown.
      local previous = vim.fn.maparg(key, mode, false, true)
      if type(previous) ~= "table" or vim.tbl_isempty(previous) or previous.desc == desc then
        previous = nil
      end
      vim.keymap.set(mode, key, function()
        if not fn() then
          fall_through(key, previous)
        end
      end, { buffer = bufnr, desc = desc })
    end
  end
  map({ "n", "i" }, opts.accept_key, M.accept, "lich: jump to the next edit suggestion, or accept it")
  map("n", opts.dismiss_key, M.dismiss, "lich: dismiss the next edit suggestion")
end

--- Forget a stopped client's model (a restarted server is asked again).
---@param client_id integer
function M.forget(client_id)
  models[client_id] = nil
  if pending and pending.client_id == client_id then
    pending = nil
  end
end

--- Attach next edits to every buffer the lich client attaches to: on LspAttach (0.8+), else
--- (0.7) through the client's on_attach, which `config` (lich's, before it starts) gets wrapped.
---@param config table lich's merged config (its `next_edit` option and `name`)
function M.setup(config)
  local options = config.next_edit
  if vim.fn.has("nvim-0.8") == 1 then
    vim.api.nvim_create_autocmd("LspAttach", {
      group = vim.api.nvim_create_augroup("lich_next_edit_attach", { clear = true }),
      callback = function(args)
        local client = vim.lsp.get_client_by_id(args.data.client_id)
        if client and client.name == config.name then
          M.attach(client, args.buf, options)
        end
      end,
    })
    return
  end
  local user_on_attach = config.on_attach
  config.on_attach = function(client, bufnr)
    M.attach(client, bufnr, options)
    if user_on_attach then
      user_on_attach(client, bufnr)
    end
  end
end

return M
