-- lich.nvim: the Neovim half of lich-lsp. The server does the work; this file asks it, over the
-- lich client only (workspace/executeCommand sent to that one client; vim.lsp.buf.execute_command
-- would broadcast to every attached server).
local client_mod = require("lich.client")
local compat = require("lich.compat")
local progress = require("lich.progress")
local transcript = require("lich.transcript")

local M = {}

M.config = vim.deepcopy(client_mod.defaults)
---@type table<integer, {prompt: string, client_id: integer, started: number}> running asks by request id
M.running = {}
---@type table[] finished asks, newest last: {prompt, result, err}
M.finished = {}

local MAX_FINISHED = 20
local INIT_WAIT_MS = 10000
local INIT_POLL_MS = 100

local function notify(message, level)
  vim.notify("lich: " .. message, level or vim.log.levels.INFO)
end

--- Configure and (unless autostart = false) start attaching the lich client.
---@param opts table|nil see :help lich-setup
function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(client_mod.defaults), opts or {})
  -- Lists replace rather than merge index-by-index.
  if opts and opts.root_markers then
    M.config.root_markers = opts.root_markers
  end
  if opts and opts.cmd then
    M.config.cmd = opts.cmd
  end
  transcript.max_lines = M.config.transcript_max_lines
  progress.enabled = M.config.progress
  progress.attach_autocmd(M.config.name)
  -- Next edit suggestions (:help lich-next-edit): before the client starts, so 0.7's on_attach
  -- carries them too.
  local next_edit = require("lich.next_edit")
  M.config.next_edit = vim.tbl_extend("force", next_edit.defaults, M.config.next_edit or {})
  next_edit.setup(M.config)
  if M.config.autostart then
    client_mod.enable(M.config)
  end
end

--- Attach the lich client to a buffer now (for autostart = false, or files outside a root when
--- single_file is set).
---@param bufnr integer|nil
function M.attach(bufnr)
  return client_mod.attach(bufnr or vim.api.nvim_get_current_buf(), M.config)
end

--- The lich client for `bufnr`: the one attached to it, else the first running one.
---@param bufnr integer|nil
---@return table|nil
function M.get_client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local attached = compat.get_clients(M.config.name, bufnr)
  if attached[1] then
    return attached[1]
  end
  return compat.get_clients(M.config.name, nil)[1]
end

local function resolve_client(opts)
  if opts.client_id then
    local client = vim.lsp.get_client_by_id(opts.client_id)
    if client and not compat.is_stopped(client) then
      return client
    end
  end
  return M.get_client(opts.bufnr)
end

--- Send `workspace/executeCommand` to the lich client only.
---@param command string e.g. "lich.status"
---@param args table the one object argument
---@param callback fun(err: table|nil, result: any)|nil
---@param opts table|nil {bufnr, client_id, flush_all}: flush_all sends every buffer's pending
---  changes first (not only the current buffer's), for commands that act on the whole workspace
---@return integer|nil request_id
function M.execute(command, args, callback, opts)
  opts = opts or {}
  callback = callback or function() end
  local client = resolve_client(opts)
  if not client then
    local message = "no lich client is running (is this buffer inside a project root? see :help lich-setup)"
    notify(message, vim.log.levels.ERROR)
    callback({ message = message }, nil)
    return nil
  end
  if not client.initialized then
    -- A command right after startup: wait for initialize instead of failing.
    local waited = opts._waited_ms or 0
    if waited >= INIT_WAIT_MS then
      callback({ message = "lich server did not finish starting" }, nil)
      return nil
    end
    vim.defer_fn(function()
      M.execute(command, args, callback, vim.tbl_extend("force", opts, { _waited_ms = waited + INIT_POLL_MS }))
    end, INIT_POLL_MS)
    return nil
  end
  local params = { command = command, arguments = { args or vim.empty_dict() } }
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  -- The client flushes the pending didChange of the buffer it is given, or of every buffer
  -- when given none.
  local ok, request_id = compat.request(client, "workspace/executeCommand", params, function(err, result)
    callback(err, result)
  end, (not opts.flush_all) and bufnr or nil)
  if not ok then
    callback({ message = "the lich client is not running" }, nil)
    return nil
  end
  return request_id
end

local function file_uri(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.api.nvim_buf_get_option(bufnr, "buftype") ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" then
    return nil
  end
  return vim.uri_from_bufnr(bufnr)
end

local function encoding_of(bufnr)
  local client = M.get_client(bufnr)
  return client and client.offset_encoding or "utf-16"
end

--- LSP range for lines `line1`..`line2` (1-based, inclusive) of `bufnr`; when those lines are the
--- last characterwise visual selection, its columns are used too.
---@param bufnr integer
---@param line1 integer
---@param line2 integer
---@return table
function M.range_for_lines(bufnr, line1, line2)
  local encoding = encoding_of(bufnr)
  local start_mark = vim.api.nvim_buf_get_mark(bufnr, "<")
  local end_mark = vim.api.nvim_buf_get_mark(bufnr, ">")
  local start_col, end_line_text = 0, vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
  local end_byte = #end_line_text
  if vim.fn.visualmode() == "v" and start_mark[1] == line1 and end_mark[1] == line2 then
    start_col = start_mark[2]
    -- The '> mark sits on the first byte of the last selected character; take all its bytes.
    local lead = end_line_text:byte(end_mark[2] + 1) or 0
    local width = lead >= 0xF0 and 4 or lead >= 0xE0 and 3 or lead >= 0xC0 and 2 or 1
    end_byte = math.min(#end_line_text, end_mark[2] + width)
  end
  local util = vim.lsp.util
  return {
    start = { line = line1 - 1, character = start_col > 0 and util.character_offset(bufnr, line1 - 1, start_col, encoding) or 0 },
    ["end"] = { line = line2 - 1, character = end_byte > 0 and util.character_offset(bufnr, line2 - 1, end_byte, encoding) or 0 },
  }
end

local function remember(entry)
  table.insert(M.finished, entry)
  if #M.finished > MAX_FINISHED then
    table.remove(M.finished, 1)
  end
end

--- One error line for a failed request to the server.
local function notify_error(what, err)
  notify(what .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
end

--- Ask the agent. With no prompt, asks for one with vim.ui.input first.
---@param opts table {prompt?, uri?, range?, mode?, bufnr?, client_id?, on_done?}
function M.ask(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  if not opts.prompt or opts.prompt == "" then
    vim.ui.input({ prompt = "Ask agent: " }, function(input)
      if input and input ~= "" then
        M.ask(vim.tbl_extend("force", opts, { prompt = input, bufnr = bufnr }))
      end
    end)
    return
  end
  local args = vim.tbl_extend("force", opts.extra or {}, {
    prompt = opts.prompt,
    uri = opts.uri or file_uri(bufnr),
    range = opts.range,
    mode = opts.mode,
  })
  -- While the chat is shown, every ask (:LichAsk, the code actions, the chat's own input) is the
  -- chat thread's next turn; while a turn of it runs, the ask waits in the chat's queue.
  local chat = require("lich.chat")
  if chat.is_open() and chat.running then
    chat.enqueue(vim.tbl_extend("force", opts, { bufnr = bufnr }))
    return nil
  end
  local ok, in_chat, thread, chat_turn = pcall(chat.begin_turn, opts.prompt, args.uri, args.range)
  if not ok then
    notify(tostring(in_chat), vim.log.levels.WARN)
    return nil
  end
  if in_chat and args.thread == nil and args.new_thread == nil then
    args.thread = thread
    args.new_thread = chat_turn and chat_turn.new_thread
  end
  if in_chat then
    -- The chat shows how the turn ends: the server sends no end-of-task message for it.
    args.origin = "chat"
  end
  local client = resolve_client({ client_id = opts.client_id, bufnr = bufnr })
  local started = vim.loop.now()
  -- The server's run_start event does not repeat the prompt: record it here.
  transcript.append({ "", "? " .. opts.prompt })
  local request_id
  request_id = M.execute("lich.ask", args, function(err, result)
    if request_id then
      M.running[request_id] = nil
    end
    remember({ prompt = opts.prompt, result = result, err = err, elapsed_ms = vim.loop.now() - started })
    if in_chat then
      pcall(chat.end_turn, err, result, chat_turn)
    end
    if err then
      notify_error("ask", err)
      transcript.append({ "! " .. (err.message or "ask failed") })
    end
    -- A success is not repeated with vim.notify: in the chat the answer is on screen, and for
    -- any other ask the server's end-of-task message (one short line) says it; a second
    -- message would stack into a hit-enter prompt. The transcript keeps the whole run.
    if opts.on_done then
      opts.on_done(err, result)
    end
  end, { bufnr = bufnr, client_id = client and client.id })
  if request_id then
    M.running[request_id] = { prompt = opts.prompt, client_id = client and client.id, started = started }
  end
  return request_id
end

--- Cancel a task by id, or every running task.
---@param task_id string|nil
---@param callback fun(err, result)|nil
function M.cancel(task_id, callback)
  local args = vim.empty_dict()
  if task_id and task_id ~= "" then
    args = { task_id = task_id }
  end
  return M.execute("lich.cancel", args, function(err, result)
    if err then
      notify_error("cancel", err)
    end
    if callback then
      callback(err, result)
    end
  end)
end

local function tool_result_text(result)
  if type(result) ~= "table" then
    return tostring(result)
  end
  if result.ok == false then
    return result.error or result.output or "failed"
  end
  return result.output or vim.inspect(result)
end

--- Apply a hashline patch through the server (same edit path as the agent; no model involved).
---@param patch string
---@param callback fun(err, result)|nil
function M.apply_patch(patch, callback)
  if not patch or vim.trim(patch) == "" then
    notify("the patch is empty", vim.log.levels.WARN)
    return nil
  end
  return M.execute("lich.applyPatch", { patch = patch }, function(err, result)
    if err then
      notify_error("patch", err)
    elseif type(result) == "table" and result.ok == false then
      notify("patch rejected: " .. tool_result_text(result), vim.log.levels.ERROR)
    else
      notify(tool_result_text(result))
    end
    if callback then
      callback(err, result)
    end
  end)
end

--- At most this many characters of an MCP server's last error in its status line.
M.MCP_ERROR_CHARS = 120

--- `text` on one line (runs of whitespace as one space), clipped to `max` characters with "…".
local function clip_line(text, max)
  local one = vim.trim((text:gsub("%s+", " ")))
  if vim.fn.strchars(one) > max then
    return vim.fn.strcharpart(one, 0, max - 1) .. "…"
  end
  return one
end

local function nonempty_string(value)
  return type(value) == "string" and vim.trim(value) ~= "" and value or nil
end

--- The status line of one entry of lich.status's `mcp_servers` ({name, transport?, state,
--- tools, last_error}): "MCP files: connected, 12 tools", "MCP web: failed: <last error, one
--- line, clipped>", "MCP x: not started".
---@param server table
---@return string
function M.mcp_line(server)
  local state = nonempty_string(server.state) or "unknown"
  local text = "MCP " .. (nonempty_string(server.name) or "?") .. ": " .. (state:gsub("_", " "))
  if state == "connected" then
    if type(server.tools) == "number" then
      text = text .. ", " .. string.format("%d", server.tools) .. (server.tools == 1 and " tool" or " tools")
    end
  else
    -- JSON null arrives as vim.NIL (vim.fn.json_decode) or as an absent key (vim.lsp.rpc).
    local last_error = nonempty_string(server.last_error)
    if last_error then
      text = text .. ": " .. clip_line(last_error, M.MCP_ERROR_CHARS)
    end
  end
  return text
end

--- One line per MCP server of lich.status's `mcp_servers`; {} when the field is missing or not
--- a list (an older server) and for entries that are not objects.
---@param servers any
---@return string[]
function M.mcp_lines(servers)
  local lines = {}
  if type(servers) ~= "table" or (next(servers) ~= nil and not compat.islist(servers)) then
    return lines
  end
  for _, server in ipairs(servers) do
    if type(server) == "table" and (next(server) == nil or not compat.islist(server)) then
      table.insert(lines, M.mcp_line(server))
    end
  end
  return lines
end

--- The lines :LichStatus shows for a lich.status result: every key of the result, the trust
--- state as a summary, one line per MCP server, and the tasks running in this Neovim.
---@param result any
---@return string[]
function M.status_lines(result)
  local lines = { "lich status" }
  local mcp = {}
  if type(result) == "table" then
    local keys = vim.tbl_keys(result)
    table.sort(keys)
    for _, key in ipairs(keys) do
      local value = result[key]
      local text
      if key == "trust" and type(value) == "table" then
        text = M.trust_summary(value)
      elseif key == "mcp_servers" and type(value) == "table" then
        mcp = M.mcp_lines(value)
      else
        text = type(value) == "string" and value or vim.fn.json_encode(value)
      end
      if text then
        table.insert(lines, "  " .. key .. ": " .. text)
      end
    end
  end
  for _, line in ipairs(mcp) do
    table.insert(lines, "  " .. line)
  end
  local active = progress.active()
  for _, entry in ipairs(active) do
    table.insert(lines, "  running: " .. entry.title .. (entry.message and (" - " .. entry.message) or ""))
  end
  return lines
end

--- Show the server's lich.status (provider, model, tasks).
---@param callback fun(err, result)|nil
function M.status(callback)
  return M.execute("lich.status", vim.empty_dict(), function(err, result)
    if err then
      notify_error("status", err)
    else
      vim.notify(table.concat(M.status_lines(result), "\n"), vim.log.levels.INFO)
    end
    if callback then
      callback(err, result)
    end
  end)
end

--- One line for a trust object ({state, config, keys}) as lich.status and lich.trustWorkspace
--- return it: the state, the config file, and the keys concerned (waiting for trust, or applied
--- once trusted).
---@param trust table
---@return string
function M.trust_summary(trust)
  local text = tostring(trust.state or "unknown")
  if type(trust.config) == "string" and trust.config ~= "" then
    text = text .. " (" .. trust.config .. ")"
  end
  local keys = {}
  for _, entry in ipairs(type(trust.keys) == "table" and trust.keys or {}) do
    if type(entry) == "table" and entry.key then
      table.insert(keys, entry.what and (entry.key .. ": " .. entry.what) or entry.key)
    end
  end
  if #keys > 0 then
    local label = ({ trusted = "applied", refused = "ignored" })[trust.state] or "waiting for trust"
    text = text .. "; " .. label .. ": " .. table.concat(keys, "; ")
  end
  return text
end

--- The line :LichTrust shows: the server's message, with the state added when the message does
--- not name it.
local function trust_message(result)
  local state = tostring(result.state or "unknown")
  local message = type(result.message) == "string" and vim.trim(result.message) or ""
  -- notify() adds the prefix itself.
  message = message:gsub("^lich:%s*", "")
  if message == "" then
    return "workspace config " .. M.trust_summary(result)
  end
  if not message:lower():find(state:lower(), 1, true) then
    message = message .. " (" .. state .. ")"
  end
  return message
end

--- Trust this workspace's .lich/config.json (lich.trustWorkspace), or with `revoke` withdraw the
--- trust. The server records trust for that exact content; the answer is shown with vim.notify.
---@param opts table|nil {revoke?, bufnr?, client_id?}
---@param callback fun(err, result)|nil
function M.trust(opts, callback)
  opts = opts or {}
  local args = opts.revoke and { revoke = true } or vim.empty_dict()
  return M.execute("lich.trustWorkspace", args, function(err, result)
    if err then
      notify_error(opts.revoke and "revoking trust" or "trust", err)
    elseif type(result) ~= "table" then
      notify("unexpected answer to lich.trustWorkspace: " .. vim.inspect(result), vim.log.levels.WARN)
    elseif result.state == "refused" or result.state == (opts.revoke and "trusted" or "untrusted") then
      -- Refused by workspace_trust = "never", or the change did not happen.
      notify(trust_message(result), vim.log.levels.WARN)
    else
      notify(trust_message(result))
    end
    if callback then
      callback(err, result)
    end
  end, { bufnr = opts.bufnr, client_id = opts.client_id })
end

--- The counts line of a lich.runTests result: the server's summary, else one from the counts.
---@param result table
---@return string
function M.test_summary(result)
  if type(result.summary) == "string" and vim.trim(result.summary) ~= "" then
    return vim.trim(result.summary)
  end
  local parts = {}
  for _, key in ipairs({ "failed", "errors", "passed", "skipped" }) do
    local n = tonumber(result[key]) or 0
    if n > 0 then
      local label = key == "errors" and (n == 1 and "error" or "errors") or key
      table.insert(parts, string.format("%d %s", n, label))
    end
  end
  return #parts > 0 and table.concat(parts, ", ") or "no tests ran"
end

local MAX_FAILURES_SHOWN = 5

--- What :LichTest shows for a result, and at which level: green INFO, red WARN (the failures
--- are diagnostics too), a run that could not happen (no test command, one already running) ERROR.
---@param result table
---@return string message, integer level
function M.test_message(result)
  local summary = M.test_summary(result)
  if result.ok == true then
    return "tests passed: " .. summary, vim.log.levels.INFO
  end
  local error_text = type(result.error) == "string" and vim.trim(result.error) or ""
  local failures = type(result.failures) == "table" and result.failures or {}
  local red = error_text:find("^tests_failed") ~= nil
    or (error_text == "" and ((tonumber(result.failed) or 0) > 0 or (tonumber(result.errors) or 0) > 0))
    or #failures > 0
  if not red then
    return "running the tests failed: " .. (error_text ~= "" and error_text or summary), vim.log.levels.ERROR
  end
  local lines = { "tests failed: " .. summary }
  for index, failure in ipairs(failures) do
    if index > MAX_FAILURES_SHOWN then
      table.insert(lines, string.format("  ... and %d more (:lua vim.diagnostic.setqflist())", #failures - MAX_FAILURES_SHOWN))
      break
    end
    local where = type(failure.uri) == "string" and vim.fn.fnamemodify(vim.uri_to_fname(failure.uri), ":~:.") or "?"
    local line = tonumber(failure.line)
    table.insert(lines, string.format("  %s:%s %s: %s", where, line and tostring(line + 1) or "?", failure.test_id or "?", failure.message or ""))
  end
  return table.concat(lines, "\n"), vim.log.levels.WARN
end

--- Run the workspace's tests (lich.runTests): the server saves what differs from the buffers,
--- runs the test command (with `filter` appended) and publishes each failing test as a
--- diagnostic (source "lich tests"), cleared by the next green run. The outcome is shown with
--- vim.notify.
---@param opts table|nil {filter?, bufnr?, client_id?}
---@param callback fun(err, result)|nil
function M.run_tests(opts, callback)
  opts = opts or {}
  local filter = type(opts.filter) == "string" and vim.trim(opts.filter) or ""
  local args = filter ~= "" and { filter = filter } or vim.empty_dict()
  return M.execute("lich.runTests", args, function(err, result)
    if err then
      notify_error("running the tests", err)
    elseif type(result) ~= "table" then
      notify("unexpected answer to lich.runTests: " .. vim.inspect(result), vim.log.levels.ERROR)
    else
      M.last_test_result = result
      local message, level = M.test_message(result)
      notify(message, level)
    end
    if callback then
      callback(err, result)
    end
  end, {
    bufnr = opts.bufnr,
    client_id = opts.client_id,
    -- Every buffer's latest text reaches the server before it saves them and runs the tests.
    flush_all = true,
  })
end

--- Anchored rows of a buffer (lich.read), e.g. to write a patch by hand.
---@param bufnr integer|nil
---@param callback fun(err, result)
function M.read(bufnr, callback)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  return M.execute("lich.read", { uri = vim.uri_from_bufnr(bufnr) }, callback, { bufnr = bufnr })
end

--- One line for an entry of lich.status's `undoable_tasks` ({task_id, title, files, running}).
---@param task table
---@return string
function M.undo_choice(task)
  local files = type(task.files) == "table" and task.files or {}
  local shown = {}
  for index, file in ipairs(files) do
    if index > 3 then
      table.insert(shown, string.format("and %d more", #files - 3))
      break
    end
    table.insert(shown, tostring(file))
  end
  local text = tostring(task.task_id) .. ": " .. tostring(task.title or "")
  if #shown > 0 then
    text = text .. " (" .. table.concat(shown, ", ") .. ")"
  end
  if task.running == true then
    text = text .. " [running]"
  end
  return text
end

--- Undo an agent task (lich.undoTask): the server sends the inverse of every change the task
--- made as one edit (`u` in a buffer undoes the undo), keeping the edits you made since where
--- they do not touch the task's lines and refusing a file where they do. The server tells the
--- outcome (window/showMessage); errors of the request are notified here. Without a task id,
--- the recent undoable tasks (lich.status's `undoable_tasks`) are offered with vim.ui.select.
---@param opts table|nil {task_id?, bufnr?, client_id?}
---@param callback fun(err, result)|nil
function M.undo(opts, callback)
  opts = opts or {}
  callback = callback or function() end
  local exec_opts = {
    bufnr = opts.bufnr,
    client_id = opts.client_id,
    -- The server plans the undo against the buffers' text: every pending change goes first.
    flush_all = true,
  }
  local function send(task_id)
    return M.execute("lich.undoTask", { task_id = task_id }, function(err, result)
      if err then
        notify_error("undo", err)
      elseif type(result) ~= "table" then
        notify("unexpected answer to lich.undoTask: " .. vim.inspect(result), vim.log.levels.WARN)
      else
        M.last_undo_result = result
      end
      callback(err, result)
    end, exec_opts)
  end
  local task_id = type(opts.task_id) == "string" and vim.trim(opts.task_id) or ""
  if task_id ~= "" then
    return send(task_id)
  end
  return M.execute("lich.status", vim.empty_dict(), function(err, status)
    if err then
      notify_error("status", err)
      return callback(err, nil)
    end
    local tasks = type(status) == "table" and type(status.undoable_tasks) == "table" and status.undoable_tasks or {}
    if #tasks == 0 then
      notify("no task to undo (the server keeps the last 20 tasks that changed files)")
      return callback(nil, nil)
    end
    vim.ui.select(tasks, { prompt = "Undo which task? ", format_item = M.undo_choice }, function(choice)
      if not choice then
        return callback(nil, nil)
      end
      send(choice.task_id)
    end)
  end, exec_opts)
end

function M.open_transcript()
  return transcript.open()
end

--- Open (or focus) the chat; see :help lich-chat.
---@param message string|nil sent at once when given
function M.chat(message)
  return require("lich.chat").command_chat({ args = message or "" })
end

-- User command bodies (plugin/lich.lua wires them up).

function M.command_ask(cmd)
  local bufnr = vim.api.nvim_get_current_buf()
  local range = nil
  if cmd.range and cmd.range > 0 then
    range = M.range_for_lines(bufnr, cmd.line1, cmd.line2)
  end
  M.ask({ prompt = cmd.args, bufnr = bufnr, range = range })
end

function M.command_apply_patch(cmd)
  local text
  local register = vim.trim(cmd.args or "")
  if register ~= "" then
    text = vim.fn.getreg(register)
  elseif cmd.range and cmd.range > 0 then
    text = table.concat(vim.api.nvim_buf_get_lines(0, cmd.line1 - 1, cmd.line2, false), "\n")
  else
    text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  end
  M.apply_patch(text)
end

function M.command_trust(cmd)
  local arg = vim.trim(cmd.args or "")
  if arg ~= "" and arg ~= "revoke" then
    notify("usage: :LichTrust [revoke]", vim.log.levels.ERROR)
    return
  end
  M.trust({ revoke = arg == "revoke", bufnr = vim.api.nvim_get_current_buf() })
end

function M.command_test(cmd)
  M.run_tests({ filter = cmd.args, bufnr = vim.api.nvim_get_current_buf() })
end

function M.command_undo(cmd)
  M.undo({ task_id = cmd.args, bufnr = vim.api.nvim_get_current_buf() })
end

function M.command_cancel(cmd)
  M.cancel(vim.trim(cmd.args or ""))
end

return M
