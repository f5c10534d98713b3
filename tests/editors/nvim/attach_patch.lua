-- setup() attaches the lich client; :LichApplyPatch (register and current buffer) edits the file
-- buffer and the saveDocuments request writes it; code actions are listed; :LichStatus and
-- :LichTranscript work.
return function(H)
  local ws = H.env.workspace
  vim.cmd("edit " .. ws .. "/hello.py")
  local buf = vim.api.nvim_get_current_buf()
  require("lich").setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  local client = H.wait_client(buf)
  H.values.offset_encoding = client.offset_encoding

  local err, status = H.execute("lich.status", vim.empty_dict())
  H.check("status answered", err == nil and type(status) == "table", err)
  H.check("server saw experimental.lich.saveDocuments", status.client and status.client.save_documents == true, status.client)
  H.check("root is the workspace", vim.fn.resolve(status.root) == vim.fn.resolve(ws), status.root)

  local rows, read_err = H.anchors(buf)
  H.check("lich.read rows", rows and rows[2] and rows[2].text == "    return 1", rows or read_err)
  H.check("lich.read hashes match lich_core.hashline", rows and rows[2] and rows[2].hash == H.data.hash_return_1, rows)

  -- :LichApplyPatch a (from a register); anchors from the pytest side (lich_core.hashline).
  local anchor = "2:" .. H.data.hash_return_1
  vim.fn.setreg("a", "@@ hello.py\n= " .. anchor .. ".." .. anchor .. "\n~    return 2\n")
  vim.cmd("LichApplyPatch a")
  H.wait("buffer line 2 patched", 20000, function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    return 2"
  end)
  H.wait("saved to disk", 20000, function()
    return H.read_file(ws .. "/hello.py") == "def hello():\n    return 2\n"
  end)
  H.check("buffer not modified after save", not vim.api.nvim_buf_get_option(buf, "modified"))

  -- :LichApplyPatch from the current buffer (a scratch buffer holding the patch)
  vim.cmd("enew")
  local patch_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(patch_buf, 0, -1, false, { "@@ hello.py", "+ 1:" .. H.data.hash_def, "~    # added by patch" })
  vim.cmd("LichApplyPatch")
  H.wait("line inserted from the patch buffer", 20000, function()
    return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] == "    # added by patch"
  end)
  H.check("patch buffer untouched", #vim.api.nvim_buf_get_lines(patch_buf, 0, -1, false) == 3)
  vim.cmd("buffer " .. buf)

  -- A stale patch is refused and the buffer is left alone.
  vim.fn.setreg("b", "@@ hello.py\n= 2:00..2:00\n~    nope\n")
  local before = H.buf_text(buf)
  local done, result = false, nil
  require("lich").apply_patch(vim.fn.getreg("b"), function(_, r)
    done, result = true, r
  end)
  H.wait("stale patch answered", 20000, function()
    return done
  end, true)
  H.check("stale patch rejected", type(result) == "table" and result.ok == false, result)
  H.check("stale patch left the buffer", H.buf_text(buf) == before)

  -- Code actions for a range, through the lich client only.
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = 1, character = 0 } },
    context = {
      diagnostics = {
        {
          range = { start = { line = 1, character = 4 }, ["end"] = { line = 1, character = 10 } },
          message = "unused variable",
          severity = 2,
          source = "lint",
        },
      },
    },
  }
  local answered, actions = false, nil
  require("lich.compat").request(client, "textDocument/codeAction", params, function(e, r)
    answered, actions = true, r
    H.values.code_action_error = e
  end, buf)
  H.wait("code actions answered", 20000, function()
    return answered
  end)
  local kinds = {}
  for _, action in ipairs(actions or {}) do
    kinds[action.title] = action.kind
  end
  H.values.code_actions = kinds
  H.check("Ask agent… listed", kinds["Ask agent…"] == "refactor.rewrite.lich", kinds)
  local fix = false
  for title, kind in pairs(kinds) do
    fix = fix or (kind == "quickfix.lich" and title:find("unused variable", 1, true) ~= nil)
  end
  H.check("Fix with agent listed for the diagnostic", fix, kinds)

  -- :LichStatus shows the server's status through vim.notify.
  local seen = #H.messages
  vim.cmd("LichStatus")
  H.wait(":LichStatus shown", 20000, function()
    for index = seen + 1, #H.messages do
      local msg = H.messages[index].msg
      if msg:find("lich status", 1, true) and msg:find("save_documents", 1, true) then
        return true
      end
    end
    return false
  end)

  vim.cmd("LichTranscript")
  H.check(":LichTranscript opens the transcript", vim.api.nvim_buf_get_name(0):find("lich://transcript", 1, true) ~= nil, vim.api.nvim_buf_get_name(0))
end
