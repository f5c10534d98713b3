-- :LichTrust and :LichTrust revoke against the real server, on a workspace whose
-- .lich/config.json the pytest side wrote ($LICH_TEST_DATA: expect_keys, the keys that wait for
-- trust; init_options, e.g. workspace_trust = "never"; refused, whether that is the case).
-- Each command's answer is caught through a wrapper on require("lich").trust, so the scenario
-- waits on the answer itself and then reads what vim.notify showed.
return function(H)
  local ws = H.env.workspace
  local config_path = ws .. "/.lich/config.json"
  local lich = require("lich")
  local opts = { cmd = { H.env.python, "-m", "lich_lsp" } }
  if H.data.init_options then
    opts.init_options = H.data.init_options
  end
  lich.setup(opts)
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  H.wait_client(buf)

  local answers = {}
  local original_trust = lich.trust
  lich.trust = function(trust_opts, callback)
    return original_trust(trust_opts, function(err, result)
      table.insert(answers, { err = err, result = result })
      if callback then
        callback(err, result)
      end
    end)
  end

  local function status_trust()
    local err, status = H.execute("lich.status", vim.empty_dict())
    H.check("lich.status answered", err == nil, err)
    return type(status) == "table" and status.trust or {}
  end

  local function key_names(trust)
    local names = {}
    for _, entry in ipairs(type(trust.keys) == "table" and trust.keys or {}) do
      table.insert(names, entry.key)
    end
    table.sort(names)
    return names
  end

  --- Run an ex command that ends in lich.trust; return its answer and the notification it made.
  local function run(command, what)
    local seen_answers, seen_messages = #answers, #H.messages
    vim.cmd(command)
    H.wait("answer to " .. command, 30000, function()
      return #answers > seen_answers
    end)
    local answer = answers[#answers]
    local shown = nil
    for index = seen_messages + 1, #H.messages do
      if H.messages[index].msg:find("^lich: ") then
        shown = H.messages[index]
      end
    end
    H.values[what] = { result = answer.result, err = answer.err, shown = shown }
    H.check(command .. " succeeded", answer.err == nil, answer.err)
    H.check(command .. " notified the user", shown ~= nil, H.messages)
    return answer.result or {}, shown or { msg = "", level = -1 }
  end

  local expected_keys = H.data.expect_keys or {}
  table.sort(expected_keys)
  local before = status_trust()
  H.values.status_before = before
  local first_state = H.data.refused and "refused" or "untrusted"
  H.check("status: " .. first_state .. " before :LichTrust", before.state == first_state, before)
  H.check("status names the config file", before.config == config_path, before)
  H.check("status lists the keys waiting for trust", vim.deep_equal(key_names(before), expected_keys), before)

  local result, shown = run("LichTrust", "trust")
  if H.data.refused then
    H.check("refused by workspace_trust = never", result.state == "refused", result)
    H.check("refusal shown as a warning", shown.level == vim.log.levels.WARN, shown)
    H.check("the warning names the state", shown.msg:find("refused", 1, true) ~= nil, shown)
    H.check("still refused", status_trust().state == "refused")
    return
  end
  H.check("trusted", result.state == "trusted", result)
  H.check("answer names the config file", result.config == config_path, result)
  H.check("shown at INFO", shown.level == vim.log.levels.INFO, shown)
  H.check("the message names the state", shown.msg:lower():find("trusted", 1, true) ~= nil, shown)
  H.check(
    "the message is the server's",
    type(result.message) == "string" and shown.msg:find(vim.pesc((result.message:gsub("^lich:%s*", ""))), 1) ~= nil,
    { shown = shown, message = result.message }
  )
  local after = status_trust()
  H.values.status_after = after
  H.check("status: trusted after :LichTrust", after.state == "trusted", after)
  H.check("nothing waits for trust any more", #key_names(after) == 0, after)

  result, shown = run("LichTrust revoke", "revoke")
  H.check("revoked: untrusted", result.state == "untrusted", result)
  H.check("revoke shown at INFO", shown.level == vim.log.levels.INFO, shown)
  H.check("the revoke message names the state", shown.msg:lower():find("untrusted", 1, true) ~= nil, shown)
  local revoked = status_trust()
  H.values.status_revoked = revoked
  H.check("status: untrusted after revoke", revoked.state == "untrusted", revoked)
  H.check("the keys wait for trust again", vim.deep_equal(key_names(revoked), expected_keys), revoked)

  -- :LichStatus renders the trust line.
  local seen = #H.messages
  local status_done = false
  lich.status(function()
    status_done = true
  end)
  H.wait(":LichStatus answered", 30000, function()
    return status_done
  end)
  local status_text = H.messages[#H.messages] and #H.messages > seen and H.messages[#H.messages].msg or ""
  H.check("LichStatus shows the trust state", status_text:find("trust: untrusted (" .. config_path, 1, true) ~= nil, status_text)

  -- A wrong argument is a usage error, and nothing is sent.
  local count = #answers
  seen = #H.messages
  -- An ERROR notification inside an ex command is raised as that command's error.
  pcall(vim.cmd, "LichTrust yes-please")
  local usage = H.messages[seen + 1]
  H.check(
    "bad argument: usage error",
    usage and usage.level == vim.log.levels.ERROR and usage.msg:find("usage: :LichTrust [revoke]", 1, true),
    usage
  )
  H.check("bad argument: no request", #answers == count)
  H.check("completion offers revoke", vim.deep_equal(vim.fn.getcompletion("LichTrust ", "cmdline"), { "revoke" }))
end
