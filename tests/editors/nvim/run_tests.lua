-- :LichTest against the real server on a small pytest project the pytest side wrote
-- ($LICH_TEST_DATA: test_file, code_file, passing_id = the node id of the passing test,
-- failing_name = the failing test's name, fail_line = the 0-based line of its assert, code_line
-- = the 0-based line of the bug in code_file, fixed_line = its fixed text).
--   1. :LichTest <node id of the passing test>: the filter reaches the test command; green.
--   2. :LichTest: red; the failure is a "lich tests" diagnostic on the assert line of the test
--      file's buffer, the user is warned with the summary, "Fix with agent" is offered on it.
--   3. Fix the bug in the code buffer WITHOUT :write, go back to the test file and :LichTest at
--      once: the server made disk match the buffer, the run is green, the diagnostic is gone.
-- Each command's answer is caught through a wrapper on require("lich").run_tests, so the
-- scenario waits on the answer itself, then on the diagnostics the server published.
return function(H)
  local lich = require("lich")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  vim.cmd("edit " .. vim.fn.fnameescape(H.data.test_file))
  local test_buf = vim.api.nvim_get_current_buf()
  local client = H.wait_client(test_buf)

  local answers = {}
  local original = lich.run_tests
  lich.run_tests = function(opts, callback)
    table.insert(answers, { filter = opts and opts.filter })
    local entry = answers[#answers]
    return original(opts, function(err, result)
      entry.done, entry.err, entry.result = true, err, result
      if callback then
        callback(err, result)
      end
    end)
  end

  local function lich_tests_diagnostics(bufnr)
    local found = {}
    for _, diagnostic in ipairs(vim.diagnostic.get(bufnr)) do
      if diagnostic.source == "lich tests" then
        table.insert(found, diagnostic)
      end
    end
    return found
  end

  --- Run an ex command that ends in lich.run_tests; return its result and the notification.
  local function run(command, what)
    local seen_answers, seen_messages = #answers, #H.messages
    vim.cmd(command)
    H.check(command .. " sent one request", #answers == seen_answers + 1, answers)
    local entry = answers[#answers]
    -- pytest in a subprocess on a shared 2-core machine: generous.
    H.wait("answer to " .. command, 60000, function()
      return entry.done
    end)
    local shown = nil
    for index = seen_messages + 1, #H.messages do
      if H.messages[index].msg:find("^lich: ") then
        shown = H.messages[index]
      end
    end
    H.values[what] = { filter = entry.filter, result = entry.result, err = entry.err, shown = shown }
    H.check(command .. " answered without a request error", entry.err == nil, entry.err)
    H.check(command .. " notified the user", shown ~= nil, H.messages)
    return type(entry.result) == "table" and entry.result or {}, shown or { msg = "", level = -1 }
  end

  -- 1. A filter: only the passing test runs.
  local result, shown = run("LichTest " .. H.data.passing_id, "filtered")
  H.check("filtered run: ok", result.ok == true, result)
  H.check("filtered run: only the selected test ran", result.passed == 1 and result.failed == 0, result)
  H.check("filtered run: shown at INFO", shown.level == vim.log.levels.INFO, shown)
  H.check(
    "filtered run: 'tests passed: <summary>'",
    type(result.summary) == "string" and shown.msg == "lich: tests passed: " .. vim.trim(result.summary),
    { shown = shown, summary = result.summary }
  )
  H.check("no lich tests diagnostics after a green run", #lich_tests_diagnostics(test_buf) == 0, vim.diagnostic.get(test_buf))

  -- 2. Everything: one test fails.
  result, shown = run("LichTest", "red")
  H.check("red run: not ok", result.ok == false, result)
  H.check("red run: counts", result.failed == 1 and result.passed == 1, result)
  H.check("red run: error prefix tests_failed", type(result.error) == "string" and result.error:find("^tests_failed") ~= nil, result.error)
  local failure = type(result.failures) == "table" and result.failures[1] or {}
  H.check("red run: one failure", type(result.failures) == "table" and #result.failures == 1, result.failures)
  H.check("the failure names the test", type(failure.test_id) == "string" and failure.test_id:find(H.data.failing_name, 1, true) ~= nil, failure)
  H.check(
    "the failure's uri is the test file",
    type(failure.uri) == "string" and vim.fn.resolve(vim.uri_to_fname(failure.uri)) == vim.fn.resolve(H.data.test_file),
    failure
  )
  H.check("the failure's line is the assert (0-based)", failure.line == H.data.fail_line, failure)
  H.check("red run: shown as a warning", shown.level == vim.log.levels.WARN, shown)
  H.check(
    "the warning has the summary",
    type(result.summary) == "string" and shown.msg:find("lich: tests failed: " .. vim.trim(result.summary), 1, true) == 1,
    { shown = shown, summary = result.summary }
  )
  H.check(
    "the warning lists the failing test at its 1-based line",
    shown.msg:find(":" .. (H.data.fail_line + 1) .. " ", 1, true) ~= nil,
    shown
  )
  H.wait("a lich tests diagnostic in the test file's buffer", 30000, function()
    return #lich_tests_diagnostics(test_buf) > 0
  end)
  local diagnostics = lich_tests_diagnostics(test_buf)
  H.values.diagnostics = diagnostics
  local diagnostic = diagnostics[1]
  H.check("exactly one lich tests diagnostic", #diagnostics == 1, diagnostics)
  H.check("the diagnostic is on the failing line", diagnostic.lnum == H.data.fail_line, diagnostic)
  H.check("the diagnostic is an error", diagnostic.severity == vim.diagnostic.severity.ERROR, diagnostic)
  H.check("the diagnostic's message is the assertion", type(diagnostic.message) == "string" and diagnostic.message:find("assert", 1, true) ~= nil, diagnostic)
  H.check("it came from the lich client", diagnostic.namespace == vim.lsp.diagnostic.get_namespace(client.id), diagnostic)

  -- The "Fix with agent" quick fix on it, as vim.lsp.buf.code_action() would ask for it.
  local line_text = vim.api.nvim_buf_get_lines(test_buf, diagnostic.lnum, diagnostic.lnum + 1, false)[1] or ""
  local lsp_diagnostic = {
    range = {
      start = { line = diagnostic.lnum, character = 0 },
      ["end"] = { line = diagnostic.end_lnum or diagnostic.lnum, character = diagnostic.end_col or #line_text },
    },
    message = diagnostic.message,
    severity = 1,
    source = diagnostic.source,
  }
  local answered, actions = false, nil
  require("lich.compat").request(client, "textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(test_buf) },
    range = lsp_diagnostic.range,
    context = { diagnostics = { lsp_diagnostic } },
  }, function(_, r)
    answered, actions = true, r
  end, test_buf)
  H.wait("code actions on the failure", 30000, function()
    return answered
  end)
  local titles = {}
  for _, action in ipairs(type(actions) == "table" and actions or {}) do
    table.insert(titles, action.title)
  end
  H.values.code_actions = titles
  local fix_offered = false
  for _, title in ipairs(titles) do
    fix_offered = fix_offered or title:find("^Fix with agent") ~= nil
  end
  H.check("Fix with agent offered on the failure", fix_offered, titles)

  -- 3. Fix the bug in the code buffer, unsaved, and run again.
  vim.cmd("edit " .. vim.fn.fnameescape(H.data.code_file))
  local code_buf = vim.api.nvim_get_current_buf()
  H.wait("code buffer attached", 30000, function()
    return vim.lsp.buf_is_attached(code_buf, client.id)
  end)
  vim.api.nvim_buf_set_lines(code_buf, H.data.code_line, H.data.code_line + 1, false, { H.data.fixed_line })
  H.check("the fix is unsaved", vim.api.nvim_buf_get_option(code_buf, "modified"))
  H.check("disk still has the bug", not (H.read_file(H.data.code_file) or ""):find(H.data.fixed_line, 1, true))
  -- Back to the test file at once: the code buffer's change is still waiting in the client's
  -- didChange debounce, and :LichTest must send it too.
  vim.cmd("buffer " .. test_buf)
  result, shown = run("LichTest", "fixed")
  H.check("fixed run: ok", result.ok == true, result)
  H.check("fixed run: both tests passed", result.passed == 2 and result.failed == 0, result)
  H.check("fixed run: shown at INFO", shown.level == vim.log.levels.INFO, shown)
  H.check("disk matches the buffer", (H.read_file(H.data.code_file) or ""):find(H.data.fixed_line, 1, true) ~= nil, H.read_file(H.data.code_file))
  H.check("the code buffer is saved", not vim.api.nvim_buf_get_option(code_buf, "modified"))
  H.wait("the lich tests diagnostic cleared", 30000, function()
    return #lich_tests_diagnostics(test_buf) == 0
  end)
  H.check("no lich tests diagnostics left anywhere", #lich_tests_diagnostics(nil) == 0, vim.diagnostic.get(nil))
end
