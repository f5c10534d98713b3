-- The chat: the current thread's conversation in a markdown buffer, with a small input buffer in
-- a window below it. Messages go out as `lich.ask {prompt, thread}` (through require("lich").ask,
-- so :LichAsk and the code actions land in the same thread while the chat is shown); the answer
-- streams in from the server's `lich/event` notifications, and a thread is (re)drawn whole from
-- `lich.thread` when it is picked, rewound, or the server restarts.
--
-- Streaming appends at the end of the buffer only, and moves a window's cursor only when it was
-- on the last line: a user reading further up keeps their place. Tool calls are folded (manual
-- folds the plugin creates in every chat window as it draws each call: an expr fold is not
-- recomputed while the user types in Insert mode, so a call drawn then would stay unfolded),
-- edits shown as ```diff blocks with only their changed lines.
--
-- Everything the model chose (its answer, tool names and arguments, file names, the thread's
-- title) is text to show, never to interpret: a one-line place (a heading, a tool line) shows
-- control characters escaped (`\n`), and where a turn starts is the plugin's own record (an
-- extmark placed when it drew the turn's heading), never a line that reads like a heading.
local M = {}

--- The thread the chat shows (nil: the next message starts one).
M.thread = nil
M.title = nil
--- Turns the thread has, rewound ones included (the server numbers turns that way).
M.turns = 0
--- While a turn started through the chat (or while it is shown) runs: {thread?, prompt}.
M.running = nil
--- Messages sent while a turn ran (the chat's input, :LichChat, :LichAsk and the code actions
--- while the chat is shown), oldest first: {prompt, ask}, `ask` being require("lich").ask's
--- options; each goes out when the turn before it ends.
M.queue = {}
--- How many times the thread was drawn from lich.thread (tests wait on it).
M.reloads = 0
M.conv = nil
M.input = nil

local CONV_NAME = "lich://chat"
local INPUT_NAME = "lich://chat-input"
local INPUT_HEIGHT_LINES = 4
local HEADER_LINES = 3
local MENTION_WAIT_MS = 3000
local ARGUMENT_CHARS = 300
local DIFF_LINES_MAX = 200

-- The folded blocks (tool calls) of the conversation: {first, last} line numbers (1-based).
-- Lines are only ever added at the end of the conversation (before the queued messages) or the
-- whole conversation is drawn again, so these numbers stay true.
local folds = {}
-- How many lines at the end of the conversation show the queued messages (see M.queue).
local queue_lines = 0
local draw_queue -- defined with the queue below
-- Where each turn starts: an extmark in this namespace on the turn's heading line, placed when
-- the plugin draws that heading, and the turn it heads, keyed by the extmark's id:
-- {turn, prompt, discarded}.
local TURNS_NS = vim.api.nvim_create_namespace("lich_chat_turns")
local turn_records = {}
-- The live turn: whether the tail line is streamed text, whether anything streamed in this run,
-- and each tool call's arguments until its end event.
local live = { streaming = false, streamed = false, args = {} }

local function notify(message, level)
  vim.notify("lich: " .. message, level or vim.log.levels.INFO)
end

local function valid(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

local function windows_of(buf)
  local found = {}
  if not valid(buf) then
    return found
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      table.insert(found, win)
    end
  end
  return found
end

--- Whether the chat is shown in some window: then :LichAsk and the code actions continue its
--- thread.
---@return boolean
function M.is_open()
  return #windows_of(M.conv) > 0
end

local function scratch(name, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.api.nvim_buf_set_option(buf, "buftype", "nofile")
  vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
  vim.api.nvim_buf_set_option(buf, "swapfile", false)
  vim.api.nvim_buf_set_option(buf, "filetype", filetype)
  return buf
end

local CONTROL_ESCAPES = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

--- `value` for a one-line place (a heading, a tool line, a title): its control characters shown
--- escaped (a newline as `\n`, others as `\xHH`), so a string the model chose can neither break
--- the line nor pass for another line of the chat.
---@param value any
---@return string
function M.escape(value)
  local text
  if type(value) == "string" then
    text = value
  elseif type(value) == "number" or type(value) == "boolean" then
    text = tostring(value)
  else
    text = "?"
  end
  -- Spelled out, not %c: %c follows the C locale, which may count bytes of UTF-8 characters.
  return (text:gsub("[%z\1-\31\127]", function(char)
    return CONTROL_ESCAPES[char] or string.format("\\x%02x", char:byte())
  end))
end

local escape = M.escape

local function header_lines()
  local title
  if M.thread then
    title = "# lich · " .. escape((M.title and M.title ~= "") and M.title or ("thread " .. M.thread))
  else
    title = "# lich · new thread"
  end
  local meta
  if M.thread then
    meta = string.format("_thread %s · %d turn%s_", escape(M.thread), M.turns, M.turns == 1 and "" or "s")
  else
    meta = "_Type below: <CR> (normal mode) or <C-s> (insert mode) sends; :LichThreads picks an earlier thread._"
  end
  return { title, meta, "" }
end

--- Write to the conversation buffer: replace lines `first`..`last` (0-based, end exclusive, as
--- nvim_buf_set_lines) with `lines`. A window whose cursor was on the last line follows the end;
--- every other window keeps its cursor and its view.
local function write(first, last, lines)
  local buf = M.conv
  local count = vim.api.nvim_buf_line_count(buf)
  local followers = {}
  for _, win in ipairs(windows_of(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      table.insert(followers, win)
    end
  end
  -- nvim_buf_set_lines refuses a string with a newline: every caller splits or escapes, and a
  -- line that still holds one is shown escaped rather than failing the whole write.
  for index, line in ipairs(lines) do
    if line:find("\n", 1, true) then
      lines[index] = line:gsub("\n", "\\n")
    end
  end
  vim.api.nvim_buf_set_option(buf, "modifiable", true)
  local ok, err = pcall(vim.api.nvim_buf_set_lines, buf, first, last, false, lines)
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  if not ok then
    error(err)
  end
  local new_count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(followers) do
    vim.api.nvim_win_set_cursor(win, { new_count, 0 })
  end
end

local function ensure_conv()
  if valid(M.conv) then
    return M.conv
  end
  M.conv = scratch(CONV_NAME, "markdown")
  vim.api.nvim_buf_set_option(M.conv, "modifiable", false)
  -- The answer is the model's text: a "vim: set ..." line in it sets nothing.
  vim.api.nvim_buf_set_option(M.conv, "modeline", false)
  folds = {}
  queue_lines = 0
  turn_records = {}
  write(0, -1, header_lines())
  vim.keymap.set("n", "q", function()
    M.close()
  end, { buffer = M.conv, nowait = true, desc = "lich: close the chat" })
  vim.keymap.set("n", "dd", function()
    local index = M.queued_at(vim.api.nvim_win_get_cursor(0)[1])
    if index then
      M.unqueue(index)
    else
      notify("the conversation is read-only; dd takes back a queued message (on its line)")
    end
  end, { buffer = M.conv, desc = "lich: take back the queued message under the cursor" })
  -- Any window that comes to show the conversation (`:sbuffer`, a session) gets the chat's
  -- window options and folds, not only the one M.open makes.
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = M.conv,
    callback = function()
      M.setup_window(vim.api.nvim_get_current_win())
    end,
  })
  return M.conv
end

local function refresh_header()
  if valid(M.conv) then
    write(0, HEADER_LINES, header_lines())
  end
end

local function split_lines(text)
  return vim.split(tostring(text or ""), "\n", true)
end

--- Forget every turn record (the conversation is drawn again from scratch).
local function clear_turn_marks()
  if valid(M.conv) then
    vim.api.nvim_buf_clear_namespace(M.conv, TURNS_NS, 0, -1)
  end
  turn_records = {}
end

--- Record that line `row` (0-based) of the conversation heads turn `record.turn`.
local function mark_turn(row, record)
  local id = vim.api.nvim_buf_set_extmark(M.conv, TURNS_NS, row, 0, {})
  turn_records[id] = record
  return id
end

--- How many lines the conversation has before the queued messages drawn at its end.
local function content_end()
  return vim.api.nvim_buf_line_count(M.conv) - queue_lines
end

--- Fold lines `first`..`last` (1-based) in window `win` (its 'foldmethod' is manual: the
--- chat's own, unless the user changed it, and then the fold is left out).
local function fold_in(win, first, last)
  pcall(vim.api.nvim_win_call, win, function()
    vim.cmd(string.format("%d,%dfold", first, last))
  end)
end

--- Create every recorded fold in `win` afresh (a new chat window, a conversation drawn again).
local function apply_folds(win)
  pcall(vim.api.nvim_win_call, win, function()
    vim.cmd("normal! zE")
  end)
  for _, range in ipairs(folds) do
    fold_in(win, range[1], range[2])
  end
end

--- Append `lines` after a blank line (unless the conversation already ends in one), before the
--- queued messages; `fold` makes them one closed fold in every chat window, as they arrive.
--- Returns the 1-based line number of the first appended line.
local function append_block(lines, fold)
  local buf = ensure_conv()
  local count = content_end()
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
  local block = {}
  if last ~= "" then
    table.insert(block, "")
  end
  local first = count + #block + 1
  for _, line in ipairs(lines) do
    table.insert(block, line)
  end
  write(count, count, block)
  if fold then
    local range = { first, first + #lines - 1 }
    table.insert(folds, range)
    for _, win in ipairs(windows_of(buf)) do
      fold_in(win, range[1], range[2])
    end
  end
  live.streaming = false
  return first
end

--- Glue streamed text onto the tail line (a new paragraph when the tail is something else).
local function stream(text)
  if not live.streaming then
    append_block({ "" })
  end
  local buf = M.conv
  local count = content_end()
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
  write(count - 1, count, split_lines(last .. text))
  live.streaming = true
end

--- A closed tool call reads as its heading and how much is folded under it.
function M.foldtext()
  local first = vim.v.foldstart
  local heading = vim.fn.getline(first)
  return heading .. string.format("  [+%d lines]", vim.v.foldend - first)
end

-- 'foldtext' and 'omnifunc' name a function reachable from Vimscript (v:lua works from 0.5).
_G.lich_chat_foldtext = M.foldtext

-- ---------------------------------------------------------------------------------------------
-- Rendering pieces shared by the live stream and a thread drawn from lich.thread.

local function one_line(value, limit)
  local text = type(value) == "string" and value or vim.fn.json_encode(value)
  text = escape(text:gsub("%s+", " "))
  if vim.fn.strchars(text) > limit then
    text = vim.fn.strcharpart(text, 0, limit - 1) .. "…"
  end
  return text
end

--- lich.thread clips long arguments into a string: take them back as an object when they still
--- parse.
local function arguments_table(arguments)
  if type(arguments) == "table" then
    return arguments
  end
  if type(arguments) == "string" then
    local ok, decoded = pcall(vim.fn.json_decode, arguments)
    if ok and type(decoded) == "table" then
      return decoded
    end
  end
  return nil
end

--- What a tool call is about, for its heading: the server's `target` (tool events and
--- lich.thread carry it, computed once in the server's core), never derived from the arguments.
local function tool_target(target)
  if type(target) ~= "table" then
    return ""
  end
  local function text(value)
    return type(value) == "string" and value ~= "" and value or nil
  end
  local path = text(target.path)
  if type(target.paths) == "table" and #target.paths > 1 then
    path = table.concat(vim.tbl_filter(function(p)
      return type(p) == "string"
    end, target.paths), ", ")
  end
  local query = text(target.query)
  if query then
    return one_line(query, 60) .. (path and (" in " .. one_line(path, 60)) or "")
  end
  if path then
    local lines = type(target.lines) == "table" and tonumber(target.lines.start) or nil
    local suffix = ""
    if lines then
      suffix = string.format(" (lines %d-%s)", lines, tonumber(target.lines["end"]) or "")
    end
    return one_line(path, 60) .. suffix
  end
  local other = text(target.command) or text(target.url)
  return other and one_line(other, 60) or ""
end

local function limited(lines)
  if #lines > DIFF_LINES_MAX then
    local kept = vim.list_slice(lines, 1, DIFF_LINES_MAX)
    table.insert(kept, string.format("… %d more lines", #lines - DIFF_LINES_MAX))
    return kept
  end
  return lines
end

-- vim.text.diff from 0.10 (vim.diff, its older name, goes away later); 0.7 has vim.diff.
local text_diff = (vim.text and vim.text.diff) or vim.diff

--- The changed lines of an edit from `old` to `new`: each hunk's removed (-) then added (+)
--- lines, hunks after the first set apart by an "@@" line; the lines the edit keeps are left
--- out (an edit_file's old_string often repeats many unchanged lines around the change).
---@param old string
---@param new string
---@return string[]
function M.changed_lines(old, new)
  local function with_newline(text)
    return text:sub(-1) == "\n" and text or (text .. "\n")
  end
  local unified = text_diff(with_newline(old), with_newline(new), { result_type = "unified", ctxlen = 0 })
  local lines = {}
  local hunks = 0
  for _, line in ipairs(split_lines(unified)) do
    local sign = line:sub(1, 1)
    if line:sub(1, 2) == "@@" then
      hunks = hunks + 1
      if hunks > 1 then
        table.insert(lines, "@@")
      end
    elseif sign == "-" or sign == "+" then
      table.insert(lines, line)
    end
  end
  return lines
end

--- A ```diff block for an edit, or nil: edit_file's changed lines (M.changed_lines), write_file's content,
--- apply_patch's hashline patch (its `~` payload lines as additions, its ops as hunk headers).
local function diff_lines(name, args)
  if type(args) ~= "table" then
    return nil
  end
  local body = {}
  if name == "edit_file" and type(args.old_string) == "string" and type(args.new_string) == "string" then
    table.insert(body, "--- " .. escape(args.path or "?"))
    table.insert(body, "+++ " .. escape(args.path or "?"))
    vim.list_extend(body, M.changed_lines(args.old_string, args.new_string))
  elseif name == "write_file" and type(args.content) == "string" then
    table.insert(body, "+++ " .. escape(args.path or "?"))
    for _, line in ipairs(split_lines(args.content)) do
      table.insert(body, "+" .. line)
    end
  elseif name == "apply_patch" and type(args.input) == "string" then
    for _, line in ipairs(split_lines(args.input)) do
      if line:sub(1, 1) == "~" then
        table.insert(body, "+" .. line:sub(2))
      elseif line:match("^@@") then
        table.insert(body, "+++ " .. escape(vim.trim(line:sub(3))))
      elseif line ~= "" then
        table.insert(body, "@@ " .. line .. " @@")
      end
    end
  else
    return nil
  end
  local lines = { "```diff" }
  vim.list_extend(lines, limited(body))
  table.insert(lines, "```")
  return lines
end

--- A tool call as a folded block: the heading (name, target, ok or failed, duration), then the
--- arguments, the result or error, and for an edit its diff.
local function tool_block(name, arguments, target_data, ok, result, duration_ms)
  local args = arguments_table(arguments)
  local target = tool_target(target_data)
  local heading = "▸ " .. escape(name) .. (target ~= "" and (" " .. target) or "") .. " · " .. (ok and "ok" or "failed")
  if tonumber(duration_ms) then
    heading = heading .. string.format(" (%d ms)", math.floor(tonumber(duration_ms) + 0.5))
  end
  local lines = { heading }
  if arguments ~= nil and arguments ~= vim.NIL then
    table.insert(lines, "  arguments: " .. one_line(arguments, ARGUMENT_CHARS))
  end
  if type(result) == "string" and result ~= "" then
    table.insert(lines, "  " .. (ok and "result: " or "error: ") .. one_line(result, ARGUMENT_CHARS))
  end
  local diff = ok and diff_lines(name, args)
  if diff then
    vim.list_extend(lines, diff)
  end
  return lines
end

-- ---------------------------------------------------------------------------------------------
-- The queue: messages sent while a turn runs wait here, drawn at the end of the conversation
-- (below the running turn, which grows above them), and go out one by one as turns end.

local QUEUED_PREFIX = "⋯ queued "
local QUEUE_CHARS = 200

--- The lines that show the queue ({} when it is empty).
local function queue_block()
  if #M.queue == 0 then
    return {}
  end
  local lines = { "" }
  for index, entry in ipairs(M.queue) do
    table.insert(lines, QUEUED_PREFIX .. index .. ": " .. one_line(entry.prompt, QUEUE_CHARS))
  end
  table.insert(lines, "_Sent when the turn ends. dd on a queued line (or :LichUnqueue [n]) takes it back._")
  return lines
end

--- Draw the queue again at the end of the conversation.
draw_queue = function()
  if not valid(M.conv) then
    return
  end
  local count = vim.api.nvim_buf_line_count(M.conv)
  local block = queue_block()
  write(count - queue_lines, count, block)
  queue_lines = #block
end

--- Which queued message line `lnum` (1-based) of the conversation shows, or nil.
---@param lnum integer
---@return integer|nil
function M.queued_at(lnum)
  if queue_lines == 0 or not valid(M.conv) then
    return nil
  end
  -- The block: a blank line, one line per message, the hint.
  local index = lnum - (vim.api.nvim_buf_line_count(M.conv) - queue_lines) - 1
  return (index >= 1 and index <= #M.queue) and index or nil
end

--- Queue an ask for the chat's thread (a turn of it runs): `ask` are require("lich").ask's
--- options, `ask.prompt` the message shown.
---@param ask table
function M.enqueue(ask)
  table.insert(M.queue, { prompt = ask.prompt, ask = ask })
  draw_queue()
end

--- Take queued message `index` (default: the last one) back; returns its text, or nil.
---@param index integer|nil
---@return string|nil
function M.unqueue(index)
  index = index or #M.queue
  if index < 1 or index > #M.queue then
    notify(#M.queue == 0 and "no message is queued" or ("no queued message " .. index), vim.log.levels.WARN)
    return nil
  end
  local entry = table.remove(M.queue, index)
  draw_queue()
  return entry.prompt
end

--- Send the oldest queued message, when no turn runs.
function M.send_queued()
  if M.running or #M.queue == 0 then
    return
  end
  local entry = table.remove(M.queue, 1)
  draw_queue()
  M.open({ focus = false })
  require("lich").ask(entry.ask)
end

--- How a turn ended, in plain words; nil for a normal answer.
---@param stopped_reason string|nil
---@param error_text string|nil
---@param running boolean|nil the turn is still running
---@return string|nil
function M.outcome_text(stopped_reason, error_text, running)
  local reason = type(stopped_reason) == "string" and stopped_reason or ""
  local problem = type(error_text) == "string" and vim.trim(error_text) or ""
  if reason == "final" then
    return nil
  elseif reason == "aborted" then
    return "**Cancelled.** The turn was stopped before it finished."
  elseif reason == "error" then
    return "**The turn failed:** " .. (problem ~= "" and one_line(problem, 500) or "the provider returned an error.")
  elseif reason == "budget" then
    return "**Stopped:** the turn used every model call it was allowed (max_turns)."
  elseif reason == "" then
    return (not running) and "**This turn did not finish** (the server stopped while it ran)." or nil
  end
  return "**Stopped:** " .. escape(reason) .. (problem ~= "" and (": " .. one_line(problem, 500)) or "")
end

local function turn_heading(number, discarded)
  return "## You · turn " .. tostring(number) .. (discarded and " (rewound)" or "")
end

--- The running turn's heading (drawn with the next number before the answer) takes the number the
--- server gave it (lich.ask's `turn`), in its record and on its heading line.
local function renumber_turn(id, number)
  local record = turn_records[id]
  if record == nil or record.turn == number or not valid(M.conv) then
    return
  end
  local old = turn_heading(record.turn, false)
  record.turn = number
  local pos = vim.api.nvim_buf_get_extmark_by_id(M.conv, TURNS_NS, id, {})
  local row = pos[1]
  if row == nil or (vim.api.nvim_buf_get_lines(M.conv, row, row + 1, false)[1] or "") ~= old then
    return
  end
  -- Only the text after the extmark's column changes, so the mark stays on the line.
  local prefix = #turn_heading("", false)
  vim.api.nvim_buf_set_option(M.conv, "modifiable", true)
  pcall(vim.api.nvim_buf_set_text, M.conv, row, prefix, row, #old, { tostring(number) })
  vim.api.nvim_buf_set_option(M.conv, "modifiable", false)
end

local function prompt_lines(number, prompt, about, discarded)
  local lines = { turn_heading(number, discarded) }
  if about then
    table.insert(lines, "_" .. escape(about) .. "_")
  end
  vim.list_extend(lines, split_lines(prompt))
  table.insert(lines, "")
  table.insert(lines, "## lich")
  return lines
end

-- ---------------------------------------------------------------------------------------------
-- Drawing a whole thread (lich.thread's answer).

--- Replace the conversation with `thread` (a lich.thread result) in one write; the cursor of a
--- window that was at the end stays at the end, the others keep their line.
---@param thread table
function M.render_thread(thread)
  ensure_conv()
  M.thread = thread.thread or M.thread
  M.title = type(thread.title) == "string" and thread.title or nil
  local turns = type(thread.turns) == "table" and thread.turns or {}
  M.turns = #turns
  folds = {}
  local lines = header_lines()
  local function add(block, fold)
    if lines[#lines] ~= "" then
      table.insert(lines, "")
    end
    local first = #lines + 1
    vim.list_extend(lines, block)
    if fold then
      table.insert(folds, { first, first + #block - 1 })
    end
    return first
  end
  -- The heading line (1-based) of each turn drawn: marked once the lines are written.
  local headings = {}
  for index, turn in ipairs(turns) do
    local discarded = turn.discarded == true
    local number = tonumber(turn.turn) or index
    local prompt = type(turn.prompt) == "string" and turn.prompt or ""
    local first = add(prompt_lines(number, prompt, nil, discarded))
    table.insert(headings, { row = first, record = { turn = number, prompt = prompt, discarded = discarded } })
    for _, tool in ipairs(type(turn.tools) == "table" and turn.tools or {}) do
      add(tool_block(tool.name or "?", tool.arguments, tool.target, tool.ok == true, tool.result), true)
    end
    if type(turn.final) == "string" and turn.final ~= "" then
      add(split_lines(turn.final))
    end
    local last_running = thread.running == true and index == #turns
    local outcome = M.outcome_text(turn.stopped_reason, turn.error, last_running)
    if outcome then
      add({ outcome })
    end
  end
  -- Replacing every line would send the other windows' cursors to the top: keep their rows.
  local count = vim.api.nvim_buf_line_count(M.conv)
  local kept = {}
  for _, win in ipairs(windows_of(M.conv)) do
    local row = vim.api.nvim_win_get_cursor(win)[1]
    if row < count then
      kept[win] = row
    end
  end
  clear_turn_marks()
  write(0, -1, lines)
  queue_lines = 0
  draw_queue()
  for _, heading in ipairs(headings) do
    mark_turn(heading.row - 1, heading.record)
  end
  for _, win in ipairs(windows_of(M.conv)) do
    apply_folds(win)
  end
  for win, row in pairs(kept) do
    vim.api.nvim_win_set_cursor(win, { math.min(row, #lines), 0 })
  end
  live = { streaming = false, streamed = false, args = {} }
  M.reloads = M.reloads + 1
end

--- Draw the current thread again from the server (after a pick, a rewind, a restart).
---@param callback fun(err, result)|nil
function M.reload(callback)
  callback = callback or function() end
  if not M.thread then
    ensure_conv()
    folds = {}
    clear_turn_marks()
    M.turns = 0
    write(0, -1, header_lines())
    queue_lines = 0
    draw_queue()
    for _, win in ipairs(windows_of(M.conv)) do
      apply_folds(win)
    end
    M.reloads = M.reloads + 1
    return callback(nil, nil)
  end
  local thread = M.thread
  require("lich").execute("lich.thread", { thread = thread }, function(err, result)
    if err then
      notify("loading thread " .. thread .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif type(result) == "table" and M.thread == thread then
      if result.running ~= true and M.running and M.running.thread == thread then
        M.running = nil
      end
      M.render_thread(result)
    end
    callback(err, result)
  end)
end

-- ---------------------------------------------------------------------------------------------
-- Turns: started by require("lich").ask, streamed from lich/event, closed by the ask's answer.

local function relative(uri)
  if type(uri) ~= "string" then
    return nil
  end
  return vim.fn.fnamemodify(vim.uri_to_fname(uri), ":~:.")
end

--- A fresh thread id for `lich.ask {new_thread}`: the chat knows its new thread's events from
--- the first one instead of guessing which run is its own.
---@return string
function M.new_thread_id()
  local seed = table.concat({ tostring(vim.loop.hrtime()), tostring(vim.fn.getpid()), tostring(math.random()) }, " ")
  return "nvim-" .. os.date("%Y%m%d-%H%M%S") .. "-" .. vim.fn.sha256(seed):sub(1, 8)
end

--- Called by require("lich").ask before it sends: when the chat is shown, the ask becomes the
--- chat's next turn. Returns whether it does, the thread to continue (nil: a new one), and the
--- turn (give it back to end_turn; `turn.new_thread` is the id a new thread is to take). An
--- error when the chat's turn is still running (two turns of a thread never run at once).
---@param prompt string
---@param uri string|nil
---@param range table|nil
---@return boolean in_chat, string|nil thread, table|nil turn
function M.begin_turn(prompt, uri, range)
  if not M.is_open() then
    return false, nil, nil
  end
  if M.running then
    error("a turn of the chat's thread is running; wait for it or :LichCancel it", 0)
  end
  local about = nil
  local path = relative(uri)
  if path then
    about = "about " .. path
    if type(range) == "table" and type(range.start) == "table" and type(range["end"]) == "table" then
      about = about .. string.format(", lines %d-%d", range.start.line + 1, range["end"].line + 1)
    end
  end
  local turn = { thread = M.thread, prompt = prompt }
  local thread = M.thread
  if not thread then
    turn.new_thread = M.new_thread_id()
    turn.thread = turn.new_thread
    M.thread = turn.new_thread
    refresh_header()
  end
  M.running = turn
  live = { streaming = false, streamed = false, args = {} }
  local number = M.turns + 1
  local first = append_block(prompt_lines(number, prompt, about, false))
  turn.mark = mark_turn(first - 1, { turn = number, prompt = prompt, discarded = false })
  return true, thread, turn
end

--- Called with the ask's answer (or its request error) for the turn begin_turn returned.
---@param err table|nil
---@param result table|nil
---@param turn table|nil
function M.end_turn(err, result, turn)
  if turn ~= nil and M.running ~= turn then
    -- The server stopped meanwhile and the chat was drawn again from the thread: this late
    -- answer (or the error of the dead request) has nothing left to add.
    return
  end
  M.running = nil
  -- The next queued message goes out once this answer is drawn.
  vim.schedule(M.send_queued)
  if err and turn and turn.new_thread and M.thread == turn.new_thread then
    -- Refused before it started: no thread took the id.
    M.thread = nil
    refresh_header()
  end
  if not valid(M.conv) then
    return
  end
  if err then
    append_block({ "**Not sent:** " .. one_line(err.message or vim.inspect(err), 500) })
    return
  end
  if type(result) ~= "table" then
    return
  end
  if type(result.thread) == "string" and result.thread ~= "" then
    if M.thread == nil then
      M.thread = result.thread
    end
    if result.thread ~= M.thread then
      return
    end
  end
  if type(result.turn) == "number" then
    -- The server's number for this turn (another client may have added turns meanwhile).
    M.turns = result.turn
    if turn ~= nil and turn.mark ~= nil then
      renumber_turn(turn.mark, result.turn)
    end
  else
    M.turns = M.turns + 1 -- a server from before lich.ask said `turn`
  end
  if not live.streamed and not live.final_shown and type(result.final) == "string" and result.final ~= "" then
    append_block(split_lines(result.final))
  end
  if not live.outcome_shown then
    local outcome = M.outcome_text(result.stopped_reason, result.error, false)
    if outcome then
      append_block({ outcome })
    end
  end
  live.streaming = false
  refresh_header()
end

--- An approval question of the running turn, from the `approval` event's data (the question
--- itself follows as the editor's own prompt): the tool, what it runs and where, or its target.
function M.approval_lines(data)
  local head = "? approval asked: " .. one_line(data.tool or "?", 60)
  local command = type(data.command) == "string" and data.command ~= "" and data.command or nil
  if command then
    head = head .. " `" .. one_line(command, 200) .. "`"
  else
    local target = tool_target(data.target)
    head = head .. (target ~= "" and (" " .. target) or "")
  end
  if type(data.host) == "string" and data.host ~= "" then
    head = head .. " on " .. one_line(data.host, 100)
  end
  if type(data.cwd) == "string" and data.cwd ~= "" then
    head = head .. " in " .. one_line(data.cwd, 200)
  end
  local lines = { head }
  if type(data.what_will_run) == "string" and data.what_will_run ~= "" then
    table.insert(lines, "  " .. one_line(data.what_will_run, 500))
  end
  return lines
end

--- Render one `lich/event` (docs/lich-event.schema.json) of the chat's thread.
---@param event table
function M.on_event(event)
  if type(event) ~= "table" or not valid(M.conv) then
    return
  end
  local thread = event.thread
  if thread == nil or thread ~= M.thread then
    return
  end
  local kind = event.type
  local data = type(event.data) == "table" and event.data or {}
  if kind == "text_delta" then
    live.streamed = true
    if type(data.text) == "string" then
      stream(data.text)
    end
  elseif kind == "tool_call_start" then
    live.args[data.call_id or ""] = data.arguments
    live.streaming = false
  elseif kind == "approval" then
    append_block(M.approval_lines(data))
  elseif kind == "tool_call_end" then
    local ok = data.ok == true
    local result = ok and data.summary or data.error
    append_block(
      tool_block(data.name or "?", live.args[data.call_id or ""], data.target, ok, result, data.duration_ms),
      true
    )
  elseif kind == "final" then
    if not live.streamed and type(data.text) == "string" and data.text ~= "" then
      append_block(split_lines(data.text))
      live.final_shown = true
    end
  elseif kind == "llm_retry" then
    local discarded = tonumber(data.discarded_chars) or 0
    append_block({
      "_The provider "
        .. escape(data.provider or "?")
        .. " failed ("
        .. escape(data.kind or "error")
        .. "); "
        .. (data.action == "failover" and "trying the next provider" or "trying again")
        .. (discarded > 0 and "; the answer starts again below" or "")
        .. "._",
    })
  elseif kind == "run_end" then
    local outcome = M.outcome_text(data.stopped_reason, data.error, false)
    if outcome then
      append_block({ outcome })
    end
    live.outcome_shown = true
  elseif kind == "llm_start" or kind == "llm_end" or kind == "turn_start" or kind == "turn_end" then
    live.streaming = false
  end
end

--- The server exited: a turn that was running will not answer.
function M.on_client_exit()
  if M.running and valid(M.conv) then
    append_block({ "**The language server stopped** while this turn ran; the chat reloads the thread when it is back." })
  end
  M.running = nil
end

--- A lich client finished initializing (a first start or a restart): draw the chat's thread from
--- the server again, so the chat shows what the thread holds now.
function M.on_client_init()
  if valid(M.conv) and M.thread then
    M.running = nil
    M.reload(function()
      M.send_queued()
    end)
  end
end

-- ---------------------------------------------------------------------------------------------
-- The windows, the input, the commands.

local function input_text()
  if not valid(M.input) then
    return ""
  end
  return vim.trim(table.concat(vim.api.nvim_buf_get_lines(M.input, 0, -1, false), "\n"))
end

--- Send `text` as the chat's next turn; while a turn runs, queue it (shown at the end of the
--- conversation, sent when the turn ends).
---@param text string
---@return integer|nil request_id nil when queued (or nothing to send)
function M.send(text)
  text = vim.trim(text or "")
  if text == "" then
    return nil
  end
  M.open({ focus = false })
  -- While a turn runs, require("lich").ask queues it.
  return require("lich").ask({ prompt = text, bufnr = M.input })
end

--- Send what the input holds (or queue it while a turn runs) and empty it.
function M.send_input()
  local text = input_text()
  if text == "" then
    return
  end
  vim.api.nvim_buf_set_lines(M.input, 0, -1, false, { "" })
  M.send(text)
end

--- `@` mention candidates from the server (lich.mentions), waited for: completion functions are
--- synchronous.
---@param prefix string
---@return string[]
function M.mention_candidates(prefix)
  local done, candidates = false, {}
  require("lich").execute("lich.mentions", { prefix = prefix or "" }, function(err, result)
    if not err and type(result) == "table" and type(result.candidates) == "table" then
      candidates = result.candidates
    end
    done = true
  end)
  vim.wait(MENTION_WAIT_MS, function()
    return done
  end, 10)
  return candidates
end

--- 'omnifunc' / 'completefunc' of the input: completes the path after an `@` that starts a word.
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line()
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local before = line:sub(1, col)
    local at = before:match(".*()@[^%s@]*$")
    if not at or (at > 1 and not before:sub(at - 1, at - 1):match("%s")) then
      -- -3: no completion here, and leave completion mode quietly.
      return -3
    end
    return at
  end
  local items = {}
  for _, path in ipairs(M.mention_candidates(base)) do
    table.insert(items, { word = path, menu = "[lich]" })
  end
  return items
end

_G.lich_chat_omnifunc = M.omnifunc

local function ensure_input()
  if valid(M.input) then
    return M.input
  end
  local buf = scratch(INPUT_NAME, "lichchat")
  vim.api.nvim_buf_set_option(buf, "omnifunc", "v:lua.lich_chat_omnifunc")
  vim.api.nvim_buf_set_option(buf, "completefunc", "v:lua.lich_chat_omnifunc")
  vim.keymap.set("n", "<CR>", M.send_input, { buffer = buf, desc = "lich: send the message" })
  vim.keymap.set("i", "<C-s>", M.send_input, { buffer = buf, desc = "lich: send the message" })
  vim.keymap.set("i", "@", function()
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local previous = vim.api.nvim_get_current_line():sub(col, col)
    if col == 0 or previous:match("%s") then
      -- The menu must not put the first path into the text before the user typed any of it:
      -- until this completion ends, nothing is inserted or selected on its own ('completeopt'
      -- is global before 0.10).
      local saved = vim.o.completeopt
      vim.o.completeopt = "menuone,noinsert,noselect"
      vim.api.nvim_create_autocmd({ "CompleteDone", "InsertLeave" }, {
        buffer = buf,
        once = true,
        callback = function()
          vim.o.completeopt = saved
        end,
      })
      -- Already replaced here, so it reads the same whether or not the Neovim version replaces
      -- an expr mapping's keycodes itself.
      return "@" .. vim.api.nvim_replace_termcodes("<C-x><C-o>", true, false, true)
    end
    return "@"
  end, { buffer = buf, expr = true, desc = "lich: complete a path to mention" })
  vim.keymap.set("n", "q", function()
    M.close()
  end, { buffer = buf, nowait = true, desc = "lich: close the chat" })
  M.input = buf
  return buf
end

--- Give window `win` (showing the conversation) the chat's options and its folds.
---@param win integer
function M.setup_window(win)
  vim.api.nvim_win_set_option(win, "wrap", true)
  vim.api.nvim_win_set_option(win, "linebreak", true)
  vim.api.nvim_win_set_option(win, "number", false)
  vim.api.nvim_win_set_option(win, "foldmethod", "manual")
  vim.api.nvim_win_set_option(win, "foldtext", "v:lua.lich_chat_foldtext()")
  vim.api.nvim_win_set_option(win, "foldlevel", 0)
  vim.api.nvim_win_set_option(win, "foldenable", true)
  apply_folds(win)
end

--- Close every window of the chat (the conversation and the input); the buffers stay, so
--- :LichChat shows the same thread again. A chat window that is the last one of Neovim shows
--- an empty buffer instead.
function M.close()
  for _, buf in ipairs({ M.input, M.conv }) do
    for _, win in ipairs(windows_of(buf)) do
      if #vim.api.nvim_list_wins() > 1 then
        vim.api.nvim_win_close(win, false)
      else
        vim.api.nvim_win_call(win, function()
          vim.cmd("enew")
        end)
      end
    end
  end
end

--- Open the chat (or focus it): the conversation in a split, the input below it.
---@param opts table|nil {focus? = true}: put the cursor in the input
---@return integer conversation buffer
function M.open(opts)
  opts = opts or {}
  ensure_conv()
  ensure_input()
  local tab_wins = vim.api.nvim_tabpage_list_wins(0)
  local conv_win, input_win
  for _, win in ipairs(tab_wins) do
    local buf = vim.api.nvim_win_get_buf(win)
    if buf == M.conv then
      conv_win = conv_win or win
    elseif buf == M.input then
      input_win = input_win or win
    end
  end
  if not conv_win then
    local previous = vim.api.nvim_get_current_win()
    vim.cmd("botright split")
    conv_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(conv_win, M.conv)
    M.setup_window(conv_win)
    vim.api.nvim_win_set_cursor(conv_win, { vim.api.nvim_buf_line_count(M.conv), 0 })
    if input_win == nil and opts.focus == false then
      vim.api.nvim_set_current_win(previous)
    end
  end
  if not input_win then
    local previous = vim.api.nvim_get_current_win()
    vim.api.nvim_set_current_win(conv_win)
    vim.cmd("belowright " .. INPUT_HEIGHT_LINES .. "split")
    input_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(input_win, M.input)
    vim.api.nvim_win_set_option(input_win, "winfixheight", true)
    vim.api.nvim_win_set_option(input_win, "number", false)
    if opts.focus == false then
      vim.api.nvim_set_current_win(previous)
    end
  end
  if opts.focus ~= false then
    vim.api.nvim_set_current_win(input_win)
  end
  return M.conv
end

--- :LichChat [message]: with a message, open the chat and send it (queued while a turn runs);
--- without one, toggle the chat (close it when it is shown, else open it).
function M.command_chat(cmd)
  local text = vim.trim(cmd.args or "")
  if text == "" then
    if M.is_open() then
      M.close()
    else
      M.open()
    end
    return
  end
  M.open()
  M.send(text)
end

--- :LichUnqueue [n]: take queued message n (default: the last one) back.
function M.command_unqueue(cmd)
  local arg = vim.trim(cmd.args or "")
  local index = nil
  if arg ~= "" then
    index = tonumber(arg)
    if not index or index ~= math.floor(index) then
      notify("usage: :LichUnqueue [queued message number]", vim.log.levels.ERROR)
      return
    end
  end
  M.unqueue(index)
end

local function refuse_while_running(what)
  if M.running then
    notify("a turn is running; wait for it or :LichCancel it before " .. what, vim.log.levels.WARN)
    return true
  end
  return false
end

--- :LichNewThread: the chat starts over; the next message starts a new thread.
function M.new_thread()
  if refuse_while_running("starting a new thread") then
    return
  end
  M.thread, M.title, M.turns = nil, nil, 0
  M.open()
  M.reload()
end

--- Show thread `thread` in the chat (drawn from lich.thread).
---@param thread string
---@param callback fun(err, result)|nil
function M.load(thread, callback)
  if refuse_while_running("switching threads") then
    return
  end
  M.thread, M.title = thread, nil
  M.open()
  M.reload(callback)
end

local function format_updated(value)
  if type(value) == "number" then
    return os.date("%Y-%m-%d %H:%M", math.floor(value))
  end
  return tostring(value or "")
end

--- One line of the :LichThreads picker for an entry of lich.threads.
---@param entry table {thread, title, turns, updated, running}
---@return string
function M.thread_choice(entry)
  local turns = tonumber(entry.turns) or 0
  local title = (type(entry.title) == "string" and entry.title ~= "") and entry.title or tostring(entry.thread)
  return string.format(
    "%s · %d turn%s · %s%s",
    one_line(title, 80),
    turns,
    turns == 1 and "" or "s",
    format_updated(entry.updated),
    entry.running == true and " · running" or ""
  )
end

--- :LichThreads: pick a thread of this workspace (vim.ui.select) and show it in the chat.
---@param callback fun(err, result)|nil called once the picked thread is drawn
function M.pick_thread(callback)
  callback = callback or function() end
  require("lich").execute("lich.threads", vim.empty_dict(), function(err, result)
    if err then
      notify("listing threads failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return callback(err, nil)
    end
    local threads = type(result) == "table" and type(result.threads) == "table" and result.threads or {}
    if #threads == 0 then
      notify("no threads in this workspace yet: :LichChat starts one")
      return callback(nil, nil)
    end
    vim.ui.select(threads, { prompt = "Thread: ", format_item = M.thread_choice }, function(choice)
      if not choice then
        return callback(nil, nil)
      end
      M.load(choice.thread, callback)
    end)
  end)
end

--- The turn that line `lnum` (1-based) of the conversation belongs to: the record of the nearest
--- turn heading the plugin drew at or above it (its extmark), {turn, prompt, discarded}; nil above
--- the first turn. The text of the lines plays no part: an answer that reads like a heading is
--- not one.
---@param lnum integer
---@return table|nil
function M.turn_record_at(lnum)
  if not valid(M.conv) or lnum < 1 then
    return nil
  end
  -- From `lnum` backwards: the first mark met is the nearest heading at or above it.
  local marks = vim.api.nvim_buf_get_extmarks(M.conv, TURNS_NS, { lnum - 1, 0 }, { 0, 0 }, { limit = 1 })
  local mark = marks[1]
  return mark and turn_records[mark[1]] or nil
end

--- The number of the turn that line `lnum` of the conversation belongs to (see turn_record_at).
---@param lnum integer
---@return integer|nil
function M.turn_at(lnum)
  local record = M.turn_record_at(lnum)
  return record and record.turn or nil
end

--- The record of turn `number` as the chat drew it, or nil.
---@param number integer
---@return table|nil
function M.turn_record(number)
  local found = nil
  for _, record in pairs(turn_records) do
    if record.turn == number then
      found = record
    end
  end
  return found
end

local CONFIRM_PROMPT_CHARS = 200

--- The question :LichRewind asks before it rewinds `record`'s turn (one line).
---@param record table {turn, prompt}
---@return string
function M.rewind_question(record)
  return string.format(
    "Rewind turn %d of this thread? Its files and conversation go back, and every later turn's too. Turn %d: %s",
    record.turn,
    record.turn,
    one_line(record.prompt ~= "" and record.prompt or "(no message)", CONFIRM_PROMPT_CHARS)
  )
end

--- :LichRewind [turn]: take back turn `turn` (default: the turn under the cursor in the chat)
--- and every later one, files and conversation (lich.rewind), then draw the thread again. Asks
--- first (vim.ui.select: the question names the turn and shows its message; "Yes, rewind turn
--- N" or "No") unless `opts.confirm` is false.
---@param turn integer|nil
---@param callback fun(err, result)|nil
---@param opts table|nil {confirm? = true}
function M.rewind(turn, callback, opts)
  callback = callback or function() end
  opts = opts or {}
  if not M.thread then
    notify("the chat has no thread to rewind yet", vim.log.levels.WARN)
    return callback(nil, nil)
  end
  if refuse_while_running("rewinding") then
    return callback(nil, nil)
  end
  local record = nil
  if turn then
    record = M.turn_record(turn)
    if not record then
      notify("the chat shows no turn " .. tostring(turn), vim.log.levels.WARN)
      return callback(nil, nil)
    end
  else
    local win = vim.api.nvim_get_current_win()
    if vim.api.nvim_win_get_buf(win) == M.conv then
      record = M.turn_record_at(vim.api.nvim_win_get_cursor(win)[1])
    end
    if not record then
      notify("put the cursor on a turn in the chat, or give its number: :LichRewind 2", vim.log.levels.WARN)
      return callback(nil, nil)
    end
  end
  if record.discarded then
    notify("turn " .. record.turn .. " is already rewound", vim.log.levels.WARN)
    return callback(nil, nil)
  end
  local thread = M.thread
  local function send()
    require("lich").execute("lich.rewind", { thread = thread, turn = record.turn }, function(err, result)
      if err then
        notify("rewind failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return callback(err, nil)
      end
      M.reload(function()
        callback(nil, result)
      end)
    end, { flush_all = true })
  end
  if opts.confirm == false then
    return send()
  end
  local yes = "Yes, rewind turn " .. record.turn
  vim.ui.select({ yes, "No" }, { prompt = M.rewind_question(record), kind = "lich.rewind" }, function(choice)
    if choice ~= yes then
      return callback(nil, nil)
    end
    -- A picker may answer later: the chat must still show that thread, with no turn running.
    if M.thread ~= thread then
      notify("the chat shows another thread now; nothing was rewound", vim.log.levels.WARN)
      return callback(nil, nil)
    end
    if refuse_while_running("rewinding") then
      return callback(nil, nil)
    end
    send()
  end)
end

function M.command_rewind(cmd)
  local arg = vim.trim(cmd.args or "")
  local turn = nil
  if arg ~= "" then
    turn = tonumber(arg)
    if not turn or turn < 1 or turn ~= math.floor(turn) then
      notify("usage: :LichRewind [turn number]", vim.log.levels.ERROR)
      return
    end
  end
  M.rewind(turn)
end

--- Lines of the conversation (for tests and for copying).
---@return string[]
function M.lines()
  if not valid(M.conv) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(M.conv, 0, -1, false)
end

return M
