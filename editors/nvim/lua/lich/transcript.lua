-- The transcript: a scratch buffer fed by the server's `lich/event` notifications (the agent
-- core's events). Streamed text deltas are glued onto the current line so the buffer reads like
-- the conversation rather than one line per token.
--
-- The events' fields are docs/lich-event.schema.json (generated from the server's event
-- dataclasses); read only those. An event too large to send whole keeps only its short fields
-- and says so in `data.cut`. tests/editors/nvim/transcript_fixtures.lua renders the shared
-- fixtures (tests/fixtures/events/*.json), validated against that schema.
local compat = require("lich.compat")

local M = {}

M.max_lines = 5000
M.buf = nil
-- True while the last line holds streamed assistant text that the next delta continues.
local streaming = false
-- True once the current run streamed any text: its `final` event then repeats nothing.
local streamed_run = false
-- The text the current model attempt streamed and where it starts in the buffer (0-based row,
-- byte column): an `llm_retry` voids it, and the buffer can take it back. Nil once anything
-- else was appended after it (then it is no longer the buffer's tail).
local attempt = nil

local BUF_NAME = "lich://transcript"

local function ensure_buf()
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then
    return M.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, BUF_NAME)
  vim.api.nvim_buf_set_option(buf, "buftype", "nofile")
  vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
  vim.api.nvim_buf_set_option(buf, "swapfile", false)
  vim.api.nvim_buf_set_option(buf, "filetype", "lichtranscript")
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  M.buf = buf
  streaming = false
  attempt = nil
  return buf
end

local function with_modifiable(buf, fn)
  vim.api.nvim_buf_set_option(buf, "modifiable", true)
  local ok, err = pcall(fn)
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  if not ok then
    error(err)
  end
end

local function trim(buf)
  local count = vim.api.nvim_buf_line_count(buf)
  if count > M.max_lines then
    local removed = count - M.max_lines
    vim.api.nvim_buf_set_lines(buf, 0, removed, false, {})
    if attempt then
      attempt.row = attempt.row - removed
      if attempt.row < 0 then
        attempt = nil
      end
    end
  end
end

local function scroll_windows(buf)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

--- Append whole lines (each string may contain newlines).
---@param lines string[]
function M.append(lines)
  local buf = ensure_buf()
  local split = {}
  for _, line in ipairs(lines) do
    for _, part in ipairs(vim.split(line, "\n", true)) do
      table.insert(split, part)
    end
  end
  with_modifiable(buf, function()
    local count = vim.api.nvim_buf_line_count(buf)
    local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
    if count == 1 and first == "" then
      -- A fresh buffer: no blank separator line at the very top.
      while #split > 1 and split[1] == "" do
        table.remove(split, 1)
      end
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, split)
    else
      vim.api.nvim_buf_set_lines(buf, -1, -1, false, split)
    end
    trim(buf)
  end)
  streaming = false
  attempt = nil
  scroll_windows(buf)
end

--- Glue streamed text onto the current line.
---@param text string
function M.stream(text)
  if not streaming then
    M.append({ "" })
  end
  local buf = ensure_buf()
  with_modifiable(buf, function()
    local count = vim.api.nvim_buf_line_count(buf)
    local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
    if not attempt then
      attempt = { row = count - 1, col = #last, text = "" }
    end
    attempt.text = attempt.text .. text
    local parts = vim.split(last .. text, "\n", true)
    vim.api.nvim_buf_set_lines(buf, count - 1, count, false, parts)
    trim(buf)
  end)
  streaming = true
  scroll_windows(buf)
end

local function first_string(data, keys)
  for _, key in ipairs(keys) do
    local value = data[key]
    if type(value) == "string" and value ~= "" then
      return value
    end
  end
  return nil
end

--- Take back the last `chars` characters (code points, as the server counts them) of the current
--- attempt's streamed text. False when that text is no longer the buffer's tail.
---@param chars integer
---@return boolean
local function drop_streamed(chars)
  local buf = M.buf
  if not (attempt and buf and vim.api.nvim_buf_is_valid(buf)) then
    return false
  end
  local tail = vim.api.nvim_buf_get_lines(buf, attempt.row, -1, false)
  if #tail == 0 then
    return false
  end
  tail[1] = tail[1]:sub(attempt.col + 1)
  if table.concat(tail, "\n") ~= attempt.text then
    return false
  end
  local total = vim.fn.strchars(attempt.text)
  if total < chars then
    -- Part of the void text was streamed before something else was written: it cannot all go.
    return false
  end
  local keep = vim.fn.strcharpart(attempt.text, 0, math.max(total - chars, 0))
  with_modifiable(buf, function()
    if keep == "" and attempt.col == 0 then
      -- The attempt began on a line of its own: remove the line too.
      vim.api.nvim_buf_set_lines(buf, attempt.row, -1, false, {})
    else
      local count = vim.api.nvim_buf_line_count(buf)
      local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ""
      vim.api.nvim_buf_set_text(buf, attempt.row, attempt.col, count - 1, #last, vim.split(keep, "\n", true))
    end
  end)
  attempt = nil
  streaming = false
  return true
end

--- The line for an `llm_retry` event: which provider failed, why, and what happens next.
local function retry_notice(data, restarts_below)
  local next_step
  if data.action == "failover" then
    next_step = "failing over to " .. (first_string(data, { "next_provider" }) or "the next provider")
  else
    next_step = "retrying"
    local delay = tonumber(data.delay_s)
    if delay and delay > 0 then
      next_step = next_step .. string.format(" in %.1f s", delay)
    end
    local number, max = tonumber(data.attempt), tonumber(data.max_attempts)
    if number and max then
      next_step = next_step .. string.format(" (attempt %d of %d)", number + 1, max)
    end
  end
  return "… provider "
    .. (first_string(data, { "provider" }) or "?")
    .. " failed ("
    .. (first_string(data, { "kind" }) or "error")
    .. "): "
    .. next_step
    .. (restarts_below and "; the answer restarts below" or "")
end

--- JSON with object keys sorted, so a line reads the same in every Neovim version.
local function encode_sorted(value)
  if type(value) ~= "table" then
    return vim.fn.json_encode(value)
  end
  if compat.islist(value) then
    local items = {}
    for _, item in ipairs(value) do
      table.insert(items, encode_sorted(item))
    end
    return "[" .. table.concat(items, ",") .. "]"
  end
  local keys = vim.tbl_keys(value)
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  local items = {}
  for _, key in ipairs(keys) do
    table.insert(items, vim.fn.json_encode(tostring(key)) .. ":" .. encode_sorted(value[key]))
  end
  return "{" .. table.concat(items, ",") .. "}"
end

local function one_line(value, limit)
  local text = value
  if type(value) ~= "string" then
    text = encode_sorted(value)
  end
  text = text:gsub("%s+", " ")
  limit = limit or 160
  if #text > limit then
    text = text:sub(1, limit) .. "…"
  end
  return text
end

--- Render one `lich/event` notification (docs/lich-event.schema.json).
---@param event table
function M.on_event(event)
  if type(event) ~= "table" then
    return
  end
  local kind = event.type or "event"
  local data = type(event.data) == "table" and event.data or {}
  if kind == "text_delta" then
    streamed_run = true
    M.stream(first_string(data, { "text" }) or "")
  elseif kind == "run_start" then
    streamed_run = false
    local model = first_string(data, { "model" })
    M.append({ "▶ " .. (event.task_id or "task") .. (model and (" (" .. model .. ")") or "") })
  elseif kind == "tool_call_start" then
    -- The model chose the name: shown on its one line, control characters escaped.
    local name = require("lich.chat").escape(data.name or "?")
    local args = data.arguments
    if args == nil and data.cut then
      -- Too large to send whole: the server kept the short fields only.
      args = "(arguments too large to show)"
    end
    M.append({ "→ " .. name .. (args and (" " .. one_line(args, 120)) or "") })
  elseif kind == "tool_call_end" then
    local name = require("lich.chat").escape(data.name or "?")
    local ok = data.ok == true
    local detail = first_string(data, { ok and "summary" or "error" }) or ""
    M.append({ "← " .. name .. (ok and " ok: " or " failed: ") .. one_line(detail, 120) })
  elseif kind == "final" then
    local text = first_string(data, { "text" })
    if text and not streamed_run then
      M.append({ text })
    end
  elseif kind == "run_end" then
    local reason = data.stopped_reason or ""
    local problem = first_string(data, { "error" })
    M.append({ "■ " .. reason .. (problem and (": " .. one_line(problem)) or "") })
  elseif kind == "error" then
    M.append({ "! " .. one_line(first_string(data, { "message" }) or "error") })
  elseif kind == "plugin_warning" then
    M.append({ "! plugin warning: " .. one_line(first_string(data, { "message" }) or "") })
  elseif kind == "budget_exhausted" then
    local skipped = type(data.skipped_calls) == "table" and table.concat(data.skipped_calls, ", ") or ""
    M.append({
      "! turn budget exhausted (" .. tostring(data.max_turns or "?") .. " turns)"
        .. (skipped ~= "" and (": skipped " .. skipped) or ""),
    })
  elseif kind == "compress_start" then
    local tokens = tonumber(data.estimated_tokens)
    M.append({ "… compressing the conversation" .. (tokens and string.format(" (~%d tokens)", tokens) or "") })
  elseif kind == "compress_end" then
    if data.ok == true then
      M.append({ string.format("… compressed ~%s → ~%s tokens", tostring(data.before_tokens), tostring(data.after_tokens)) })
    else
      M.append({ "… compression skipped: " .. (first_string(data, { "error" }) or "?") })
    end
  elseif kind == "llm_retry" then
    -- The failed attempt's streamed text is void: the next attempt streams the answer again.
    local discarded = tonumber(data.discarded_chars) or 0
    local dropped = discarded > 0 and drop_streamed(discarded)
    if discarded > 0 then
      -- A failover provider may not stream: its `final` then has to be shown.
      streamed_run = false
    end
    M.append({ retry_notice(data, discarded > 0 and not dropped) })
  elseif kind == "approval" then
    -- The question itself follows as the editor's prompt (the chat shows it from this data).
    streaming = false
  elseif kind == "llm_start" or kind == "llm_end" or kind == "turn_start" or kind == "turn_end" then
    -- Bookkeeping events, not worth a transcript line; they do end a streamed paragraph.
    streaming = false
    attempt = nil
  else
    M.append({ "· " .. kind .. (next(data) and (" " .. one_line(data, 120)) or "") })
  end
end

--- Open the transcript in a split (or focus it if already visible).
function M.open()
  local buf = ensure_buf()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_set_current_win(win)
      return buf
    end
  end
  vim.cmd("botright split")
  vim.api.nvim_win_set_buf(0, buf)
  scroll_windows(buf)
  return buf
end

--- Lines of the transcript (for tests and for copying).
---@return string[]
function M.lines()
  if not (M.buf and vim.api.nvim_buf_is_valid(M.buf)) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(M.buf, 0, -1, false)
end

return M
