-- Test harness for scenarios run in a real headless Neovim (0.7+). A scenario is a Lua file that
-- returns function(H); the harness runs it protected, records checks and values, writes them as
-- JSON to $LICH_TEST_RESULT and quits Neovim whatever happens (a watchdog covers hangs).
--   nvim --headless --clean -n -i NONE --cmd "set rtp^=editors/nvim" \
--        -c "luafile tests/editors/nvim/harness.lua" -- with $LICH_TEST_SCENARIO set
local H = {
  env = {
    result = os.getenv("LICH_TEST_RESULT"),
    scenario = os.getenv("LICH_TEST_SCENARIO"),
    workspace = os.getenv("LICH_TEST_WORKSPACE"),
    python = os.getenv("LICH_TEST_PYTHON") or "python3",
    timeout_ms = tonumber(os.getenv("LICH_TEST_TIMEOUT_MS") or "") or 60000,
  },
  -- Values computed by the pytest side (e.g. hashline anchors from lich_core.hashline).
  data = vim.fn.json_decode(os.getenv("LICH_TEST_DATA") or "{}"),
  values = {},
  checks = {},
  log = {},
}

local finished = false

local function write_result(error_text)
  if finished then
    return
  end
  finished = true
  local ok, lich = pcall(require, "lich")
  local transcript = {}
  local tok, t = pcall(require, "lich.transcript")
  if tok then
    transcript = t.lines()
  end
  local payload = {
    error = error_text or vim.NIL,
    values = H.values,
    checks = H.checks,
    log = H.log,
    transcript = transcript,
    nvim = tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. "." .. tostring(vim.version().patch),
    finished = ok and #lich.finished or 0,
  }
  local file = assert(io.open(H.env.result, "w"))
  file:write(vim.fn.json_encode(payload))
  file:close()
end

local function quit()
  vim.cmd("qall!")
end

function H.note(text)
  table.insert(H.log, string.format("[%d ms] %s", vim.loop.now() - H.started_ms, text))
end

--- Record a named check; the pytest side asserts every check passed.
function H.check(name, ok, detail)
  table.insert(H.checks, { name = name, ok = ok and true or false, detail = detail and vim.inspect(detail) or vim.NIL })
  H.note((ok and "PASS " or "FAIL ") .. name)
  return ok
end

-- Every vim.notify message, so scenarios can assert on what the user was told and a wait can
-- stop at the first error instead of running into its timeout.
H.messages = {}
local original_notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(H.messages, { msg = tostring(msg), level = level or vim.log.levels.INFO })
  H.note("notify: " .. tostring(msg))
  return original_notify(msg, level, opts)
end

--- Poll until `fn()` is truthy or fail the scenario; an ERROR notification meanwhile fails it
--- at once (pass allow_errors = true to wait through errors).
function H.wait(what, timeout_ms, fn, allow_errors)
  local seen = #H.messages
  local failure = nil
  local ok = vim.wait(timeout_ms, function()
    for index = seen + 1, #H.messages do
      if not allow_errors and H.messages[index].level == vim.log.levels.ERROR then
        failure = H.messages[index].msg
        return true
      end
    end
    return fn() and true or false
  end, 50)
  if failure then
    error("error while waiting for " .. what .. ": " .. failure, 0)
  end
  if not ok then
    error("timed out after " .. timeout_ms .. " ms waiting for: " .. what, 0)
  end
  H.note("ok: " .. what)
end

--- The lich client attached to `bufnr`, after initialize completed.
function H.wait_client(bufnr, timeout_ms)
  local lich = require("lich")
  local client
  H.wait("lich client attached and initialized", timeout_ms or 30000, function()
    client = lich.get_client(bufnr)
    local attached = client and vim.lsp.buf_is_attached(bufnr, client.id)
    return attached and client.initialized
  end)
  return client
end

--- Run one executeCommand through the plugin and wait for its answer.
function H.execute(command, args, timeout_ms)
  local done, err, result = false, nil, nil
  require("lich").execute(command, args, function(e, r)
    done, err, result = true, e, r
  end)
  H.wait("answer to " .. command, timeout_ms or 30000, function()
    return done
  end)
  return err, result
end

--- A second lich_lsp client, named "bystander", attached to `bufnr`: commands the plugin sends
--- must reach only the "lich" client, and this one's lich.status proves none arrived.
function H.start_bystander(bufnr)
  local config = {
    name = "bystander",
    cmd = { H.env.python, "-m", "lich_lsp" },
    root_dir = H.env.workspace,
  }
  local client_id
  if vim.fn.has("nvim-0.8") == 1 then
    client_id = vim.lsp.start(config, { bufnr = bufnr })
  else
    client_id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  local client
  H.wait("bystander client initialized", 30000, function()
    client = vim.lsp.get_client_by_id(client_id)
    return client and client.initialized and vim.lsp.buf_is_attached(bufnr, client_id)
  end)
  return client
end

--- workspace/executeCommand straight to `client` (not through the plugin).
function H.execute_on(client, command, args)
  local done, err, result = false, nil, nil
  require("lich.compat").request(client, "workspace/executeCommand", { command = command, arguments = { args } }, function(e, r)
    done, err, result = true, e, r
  end, 0)
  H.wait("answer to " .. command .. " from " .. client.name, 30000, function()
    return done
  end)
  return err, result
end

function H.buf_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
end

function H.read_file(path)
  local file = io.open(path, "r")
  if not file then
    return nil
  end
  local text = file:read("*a")
  file:close()
  return text
end

--- Anchored rows of a buffer from the server's lich.read, as {line = {hash, text}}; on failure
--- nil and the error.
function H.anchors(bufnr)
  local err, result = H.execute("lich.read", { uri = vim.uri_from_bufnr(bufnr) })
  if err then
    return nil, err
  end
  local text = type(result) == "table" and (result.output or result.rows or result.text) or result
  if type(text) == "table" then
    text = table.concat(text, "\n")
  end
  local rows = {}
  for _, row in ipairs(vim.split(text or "", "\n", true)) do
    local number, hash, content = row:match("^%s*%*?(%d+):(%x%x)|(.*)$")
    if number then
      rows[tonumber(number)] = { hash = hash, text = content }
    end
  end
  return rows, result
end

-- Headless Neovim has no one to answer prompts: make any that slip through fail loudly instead
-- of hanging until the watchdog.
vim.fn.inputlist = function()
  H.note("unexpected inputlist prompt")
  return 0
end

H.started_ms = vim.loop.now()
vim.defer_fn(function()
  if not finished then
    write_result("watchdog: scenario still running after " .. H.env.timeout_ms .. " ms")
    quit()
  end
end, H.env.timeout_ms)

vim.schedule(function()
  local ok, err = xpcall(function()
    local scenario = dofile(H.env.scenario)
    scenario(H)
  end, debug.traceback)
  write_result(not ok and tostring(err) or nil)
  quit()
end)

return H
