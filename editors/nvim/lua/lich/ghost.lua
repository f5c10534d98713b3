-- Ghost text: inline completions from the lich server shown as extmarks in Insert mode.
-- Core Neovim (0.7-0.11) does not ask textDocument/inlineCompletion, so this module does: after
-- each change in Insert mode it asks the lich client (cancelling the request it asked before),
-- shows the answer as virtual text at the cursor, and inserts it on the accept key (or its next
-- word or line on the partial keys). The server debounces and supersedes per document
-- (docs/completions.md), so no timer is needed here.
local compat = require("lich.compat")
local status_model = require("lich.status_model")

local M = {}

M.ns = vim.api.nvim_create_namespace("lich_ghost")
M.hl_group = "LichGhostText"
M.defaults = {
  enabled = true,
  accept_key = "<C-l>",
  -- copilot.vim's keys for the same (VS Code: Ctrl+Right).
  accept_word_key = "<M-Right>",
  accept_line_key = "<M-C-Right>",
  -- <Tab> accepts too while a suggestion is shown and no completion menu is open (as
  -- copilot.vim); otherwise it is a real <Tab>. Left alone when Insert mode maps <Tab> already.
  accept_tab = true,
}
local TAB_DESC = "lich: accept the inline suggestion (else a real <Tab>)"
-- The description of Neovim 0.11's default Insert-mode <Tab> (vim/_defaults.lua).
local SNIPPET_TAB_DESC = "vim.snippet.jump if active, otherwise <Tab>"

-- lich.status is read again on InsertEnter when older than this, so a completion model added to
-- (or removed from) the config is picked up without restarting the server.
local STATUS_REFRESH_MS = 5000
-- virt_text_pos = "inline" (text after the cursor moves right) exists from 0.10; before, the
-- ghost's first line is an overlay that repeats the rest of the line after itself.
local HAS_INLINE = vim.fn.has("nvim-0.10") == 1
local TRIGGER_AUTOMATIC = 2

-- Non-ASCII code points that are not identifier characters for the word rule (next_word): the
-- Latin-1 signs, general punctuation, symbols and arrows, CJK and fullwidth punctuation, emoji.
-- Every other non-ASCII character counts as a letter, so words of any script stay whole without a
-- Unicode table (charclass() is not in 0.7, and it reads 'iskeyword' for ASCII).
local NOT_WORD_RANGES = {
  { 0x00A0, 0x00BF },
  { 0x00D7, 0x00D7 },
  { 0x00F7, 0x00F7 },
  { 0x2000, 0x2BFF },
  { 0x3000, 0x303F },
  { 0xFE30, 0xFE4F },
  { 0xFF00, 0xFF0F },
  { 0xFF1A, 0xFF20 },
  { 0xFF3B, 0xFF40 },
  { 0xFF5B, 0xFF65 },
  { 0x1F000, 0x1FAFF },
}
local SPACE, WORD, OTHER = 0, 1, 2

---@type table<integer, {model: string|nil, known: boolean, checked: number, asking: boolean}>
local models = {}
-- The buffers whose <Tab> accepts ghost text (accept_tab, or <Tab> as the accept key): their
-- lich client's name, and whether <Tab> is the accept key (then mapped always, else while the
-- server has a completion model; see sync_tabs).
---@type table<integer, {name: string, always: boolean}>
local tab_buffers = {}
local sync_tabs -- defined with the keys below
---@type {client_id: integer, request_id: integer, bufnr: integer, row: integer, col: integer}|nil
local pending = nil
---@type {bufnr: integer, row: integer, col: integer, tick: integer, lines: string[]}|nil
local shown = nil

-- Counters the tests (and curious users) read: requests sent, changes seen.
M.stats = { requests = 0, changes = 0, answers = 0 }

-- The group as it read after the plugin last defined it: still that, it is the plugin's own
-- (defined again when the colours change); anything else, the user's or the colour scheme's.
local own_highlight = nil

local function highlight_text()
  return vim.fn.execute("highlight " .. M.hl_group)
end

local function comment_colour(mode)
  return vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.hlID("Comment")), "fg", mode)
end

--- Give LichGhostText its colour unless the colour scheme or the user set one (`default`): a
--- link to Comment when Comment has a colour in the terminal's mode (cterm, or gui with
--- 'termguicolors'); else grey of its own, ctermfg=244 as copilot.vim's (0.10+'s own colour
--- scheme gives Comment no cterm colour: linked, ghost text would look like typed code).
function M.define_highlight()
  if own_highlight ~= nil and highlight_text() == own_highlight then
    vim.cmd("highlight clear " .. M.hl_group)
  end
  local mode = vim.o.termguicolors and "gui" or "cterm"
  if comment_colour(mode) ~= "" then
    vim.cmd("highlight default link " .. M.hl_group .. " Comment")
  else
    local gui = comment_colour("gui")
    vim.cmd("highlight default " .. M.hl_group .. " ctermfg=244 guifg=" .. (gui ~= "" and gui or "#808080"))
  end
  own_highlight = highlight_text()
end
M.define_highlight()

local function cursor()
  local pos = vim.api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

local function cancel_pending()
  local request = pending
  pending = nil
  compat.cancel_in_flight(request)
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
  return status_model.info(models, client_id)
end

--- Read lich.status's `completion.model` (null, or no `completion` from an older server: off).
local function refresh_model(client, bufnr)
  status_model.refresh(models, "completion", client, bufnr, function(entry)
    if not entry.model then
      M.clear()
    end
    sync_tabs()
  end)
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

--- The code point at byte `i` of `text` and its length in bytes (a stray byte stands alone).
local function decode(text, i)
  local byte = text:byte(i)
  local size = byte >= 0xF0 and 4 or byte >= 0xE0 and 3 or byte >= 0xC0 and 2 or 1
  if size == 1 then
    return byte, 1
  end
  local code = byte % (2 ^ (7 - size))
  for k = 1, size - 1 do
    local next_byte = text:byte(i + k)
    if not next_byte or next_byte < 0x80 or next_byte > 0xBF then
      return byte, 1
    end
    code = code * 64 + next_byte % 64
  end
  return code, size
end

local function class(code)
  if code == 32 or code == 9 or code == 10 or code == 13 then
    return SPACE
  end
  if code < 128 then
    local char = string.char(code)
    return (char:match("[%w_]") and WORD) or OTHER
  end
  for _, range in ipairs(NOT_WORD_RANGES) do
    if code >= range[1] and code <= range[2] then
      return OTHER
    end
  end
  return WORD
end

-- Byte index just past the whitespace (spaces, tabs, line breaks) that starts text at `i`.
local function skip_space(text, i)
  while i <= #text do
    local code, size = decode(text, i)
    if class(code) ~= SPACE then
      break
    end
    i = i + size
  end
  return i
end

--- How many bytes of `text` the word key inserts: the leading whitespace (spaces, tabs and line
--- breaks), then one run of identifier characters (ASCII letters, digits and `_`, and every
--- non-ASCII character outside NOT_WORD_RANGES: letters of any script) or, when the next
--- character is not one of those, one run of the other non-whitespace characters. So
--- "add(a, b)" goes "add", "(", "a", ",", " b", ")"; "\n    return" goes whole.
---@param text string
---@return integer
function M.next_word(text)
  local i = skip_space(text, 1)
  if i > #text then
    return #text
  end
  local first = class((decode(text, i)))
  while i <= #text do
    local code, size = decode(text, i)
    if class(code) ~= first then
      break
    end
    i = i + size
  end
  return i - 1
end

--- How many bytes of `text` the line key inserts: up to the end of its first line, without the
--- line break; whitespace and line breaks it starts with are taken along with the next line, so
--- a suggestion that starts a new line inserts the break, the indentation and that line's text.
---@param text string
---@return integer
function M.next_line(text)
  local i = skip_space(text, 1)
  local newline = text:find("\n", i, true)
  return newline and newline - 1 or #text
end

--- Ask for a suggestion at the cursor of `bufnr` (Insert mode, after a change).
---@param bufnr integer
---@param opts table the completion options
---@param name string the lich client's name
function M.request(bufnr, opts, name)
  local row, col = cursor()
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  -- The rest of a suggestion after a partial accept is drawn for this very change: it stays up
  -- until the answer (the server's, from that suggestion, without the model) replaces it, so
  -- it does not blink off for the round trip.
  local ghost = shown
  if ghost and ghost.bufnr == bufnr and ghost.row == row and ghost.col == col and ghost.tick == tick then
    cancel_pending()
  else
    M.clear()
  end
  local client = lich_client(bufnr, name)
  if not client or not client.initialized or vim.fn.pumvisible() == 1 then
    M.clear()
    return
  end
  local model = models[client.id]
  if not model or not model.known or not model.model then
    M.clear()
    return
  end
  local character = col
  if col > 0 then
    character = vim.lsp.util.character_offset(bufnr, row, col, client.offset_encoding or "utf-16")
  end
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
    -- Whatever is not shown from this answer leaves nothing shown (a ghost kept for the
    -- request included): nothing newer was asked, so the server's word is the last.
    if err or not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_get_current_buf() ~= bufnr then
      return M.clear()
    end
    local now_row, now_col = cursor()
    local mode = vim.api.nvim_get_mode().mode
    if mode:sub(1, 1) ~= "i" or now_row ~= row or now_col ~= col then
      return M.clear()
    end
    if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      return M.clear()
    end
    local text, range = suggestion_text(result)
    if not text or text == "" then
      return M.clear()
    end
    -- Only an insertion at the cursor is shown (what the lich server answers).
    if type(range) == "table" and range.start and (range.start.line ~= row or range.start.character ~= character) then
      return M.clear()
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

-- Insert the first `take(text)` bytes of the suggestion shown (all of it without `take`) and
-- show the rest at once: the change's TextChangedI asks again and the server answers the rest
-- from the suggestion (the user typed its first characters), with no model request.
local function accept(take)
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
  local text = table.concat(ghost.lines, "\n")
  local part = take and text:sub(1, take(text)) or text
  local lines = vim.split(part, "\n", true)
  vim.api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local last_row = row + #lines - 1
  local last_col = #lines == 1 and col + #lines[1] or #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { last_row + 1, last_col })
  local rest = text:sub(#part + 1)
  if rest ~= "" then
    local rest_lines = vim.split(rest, "\n", true)
    local tick = vim.api.nvim_buf_get_changedtick(bufnr)
    shown = { bufnr = bufnr, row = last_row, col = last_col, tick = tick, lines = rest_lines }
    render(bufnr, last_row, last_col, rest_lines)
  end
  return true
end

--- Insert the suggestion shown (all its lines) at the cursor; false when none is shown here.
---@return boolean
function M.accept()
  return accept(nil)
end

--- Insert the suggestion's next word (M.next_word) and show the rest; false when none is shown.
---@return boolean
function M.accept_word()
  return accept(M.next_word)
end

--- Insert the rest of the suggestion's line (M.next_line) and show the rest; false when none is
--- shown.
---@return boolean
function M.accept_line()
  return accept(M.next_line)
end

-- The keys that do what typing `key` does when it is not mapped. Core Neovim reads a typed Alt
-- key that no mapping takes (<M-Right>, <M-C-Right>) as <Esc> and the key, but only when typed:
-- fed back it would be the key without Alt. Fed with the "t" flag it would be typed, but then a
-- macro being recorded would get it twice.
local ALT_PREFIX = "\128\252\008" -- K_SPECIAL KS_MODIFIER MOD_MASK_ALT
local function unmapped_keys(key)
  local keys = vim.api.nvim_replace_termcodes(key, true, false, true)
  if keys:sub(1, #ALT_PREFIX) == ALT_PREFIX and #keys > #ALT_PREFIX then
    return "\027" .. keys:sub(#ALT_PREFIX + 1)
  end
  return keys
end

--- Whether Insert mode in `bufnr` maps <Tab> to something of the user's (buffer-local or
--- global): then <Tab> is left to it. The plugin's own mappings (their description starts with
--- "lich:", as next edit suggestions' <Tab>) are not the user's.
local function tab_taken(bufnr)
  local existing = vim.api.nvim_buf_call(bufnr, function()
    return vim.fn.maparg("<Tab>", "i", false, true)
  end)
  if type(existing) ~= "table" or next(existing) == nil then
    return false
  end
  local desc = type(existing.desc) == "string" and existing.desc or ""
  -- Neovim's own default (0.11: jump to a snippet's next field) is not the user's either: the
  -- mapping here does the same where nothing is suggested.
  local neovim_default = existing.buffer == 0 and desc == SNIPPET_TAB_DESC
  return desc:find("^lich:") == nil and not neovim_default
end

--- <Tab> in Insert mode: the ghost text's suggestion when one is shown and no completion menu
--- is open, else a next edit suggestion's accept (lich.next_edit maps <Tab> too, and this one
--- takes its place), else the jump to a snippet's next field (Neovim 0.11's own <Tab>), else a
--- real <Tab>.
local function tab()
  if vim.fn.pumvisible() == 0 and M.accept() then
    return
  end
  local next_edit = package.loaded["lich.next_edit"]
  if next_edit ~= nil and next_edit.accept() then
    return
  end
  if vim.snippet and vim.snippet.active({ direction = 1 }) then
    vim.snippet.jump(1)
    return
  end
  vim.api.nvim_feedkeys(unmapped_keys("<Tab>"), "ni", false)
end

--- While the server of `bufnr` has a completion model, map <Tab> there (unless the user maps
--- it; again on InsertEnter, since another part of the plugin may map it on the same attach,
--- after this one); without one (none configured, or not known yet) the plugin's <Tab> is
--- taken away, as there is no ghost text to accept.
local function sync_tab(bufnr)
  local wanted = tab_buffers[bufnr]
  if wanted == nil or not vim.api.nvim_buf_is_valid(bufnr) then
    tab_buffers[bufnr] = nil
    return
  end
  local client = lich_client(bufnr, wanted.name)
  local entry = client and models[client.id]
  if wanted.always or (entry and entry.model) then
    if not tab_taken(bufnr) then
      vim.keymap.set("i", "<Tab>", tab, { buffer = bufnr, desc = TAB_DESC })
    end
    return
  end
  local existing = vim.api.nvim_buf_call(bufnr, function()
    return vim.fn.maparg("<Tab>", "i", false, true)
  end)
  if type(existing) == "table" and existing.buffer == 1 and existing.desc == TAB_DESC then
    vim.keymap.del("i", "<Tab>", { buffer = bufnr })
  end
end

sync_tabs = function()
  for bufnr in pairs(tab_buffers) do
    sync_tab(bufnr)
  end
end

local group = vim.api.nvim_create_augroup("lich_ghost", { clear = true })
-- A colorscheme starts with `:highlight clear`, which drops the group; 'termguicolors' changes
-- which of Comment's colours shows.
vim.api.nvim_create_autocmd("ColorScheme", { group = group, callback = M.define_highlight })
vim.api.nvim_create_autocmd("OptionSet", { group = group, pattern = "termguicolors", callback = M.define_highlight })

--- Wire ghost text into `bufnr` for `client` (the lich client's on_attach).
---@param client table
---@param bufnr integer
---@param opts table|nil {enabled, accept_key, accept_word_key, accept_line_key, accept_tab}
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
  local function map(key, fn, desc)
    if type(key) ~= "string" or key == "" then
      return -- false or "": the user keeps the key
    end
    vim.keymap.set("i", key, function()
      if not fn() then
        -- No suggestion here: the key does what it does without this mapping.
        vim.api.nvim_feedkeys(unmapped_keys(key), "ni", false)
      end
    end, { buffer = bufnr, desc = desc })
  end
  map(opts.accept_key, M.accept, "lich: accept the inline suggestion")
  map(opts.accept_word_key, M.accept_word, "lich: accept the inline suggestion's next word")
  map(opts.accept_line_key, M.accept_line, "lich: accept the inline suggestion's line")
  -- <Tab> as the accept key is the user's choice: the same mapping, whatever else maps <Tab>.
  local tab_is_accept_key = type(opts.accept_key) == "string"
    and vim.api.nvim_replace_termcodes(opts.accept_key, true, false, true) == "\t"
  tab_buffers[bufnr] = (opts.accept_tab or tab_is_accept_key) and { name = name, always = tab_is_accept_key } or nil
  if tab_buffers[bufnr] then
    sync_tab(bufnr)
    vim.api.nvim_create_autocmd("InsertEnter", {
      group = group,
      buffer = bufnr,
      callback = function()
        sync_tab(bufnr)
      end,
    })
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
