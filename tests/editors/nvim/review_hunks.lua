-- Review per hunk in a real Neovim against the real server (edit_mode "review" in the user
-- config; review_style left on auto, which is per hunk for a client without change annotations).
-- $LICH_TEST_DATA: file = the file the agent changes, first_line / second_line = the 0-based
-- lines of its two hunks, typed = the line the user types above the first, accepted_text =
-- the first hunk's new line, original_second = the second hunk's line as it is.
--   1. :LichAsk: nothing changes in the buffer; two "lich review" hint diagnostics appear.
--   2. The user types a line above the first hunk (nvim_buf_set_lines, sent as didChange):
--      both diagnostics move down one line.
--   3. vim.lsp.buf.code_action() on the first hunk, "Accept hunk t1-1" chosen in vim.ui.select:
--      the buffer gets the change on the right (moved) line; one diagnostic is left.
--   4. The same on the second hunk with "Reject hunk t1-2": the line stays as it was, no
--      diagnostics are left.
--   5. A second :LichAsk: its first model request carries the rejection (checked in pytest).
return function(H)
  local lich = require("lich")
  lich.setup({ cmd = { H.env.python, "-m", "lich_lsp" } })
  vim.cmd("edit " .. vim.fn.fnameescape(H.data.file))
  local buf = vim.api.nvim_get_current_buf()
  local client = H.wait_client(buf)

  local function review_diagnostics()
    local found = {}
    for _, diagnostic in ipairs(vim.diagnostic.get(buf)) do
      if diagnostic.source == "lich review" then
        table.insert(found, diagnostic)
      end
    end
    table.sort(found, function(a, b)
      return a.lnum < b.lnum
    end)
    return found
  end

  local function lines_of(found)
    local lines = {}
    for _, diagnostic in ipairs(found) do
      table.insert(lines, diagnostic.lnum)
    end
    return lines
  end

  local function line(n)
    return vim.api.nvim_buf_get_lines(buf, n, n + 1, false)[1]
  end

  -- 1. The task proposes two hunks.
  local before = H.buf_text(buf)
  vim.cmd("LichAsk bump the two values")
  H.wait("the ask finished", 60000, function()
    return #lich.finished >= 1
  end)
  local first = lich.finished[1]
  H.values.first = first.result
  H.check("ask answered", first.err == nil and first.result and first.result.stopped_reason == "final", first)
  H.check("the result says the changes are pending", first.result and type(first.result.review) == "string" and first.result.review:find("2 changes pending review", 1, true) ~= nil, first.result)
  H.check("nothing applied yet", H.buf_text(buf) == before, H.buf_text(buf))
  H.wait("two lich review diagnostics", 30000, function()
    return #review_diagnostics() == 2
  end)
  local found = review_diagnostics()
  H.values.proposed = found
  H.check("at the hunks' lines", vim.deep_equal(lines_of(found), { H.data.first_line, H.data.second_line }), found)
  H.check("severity hint", found[1].severity == vim.diagnostic.severity.HINT, found[1])
  H.check("from the lich client", found[1].namespace == vim.lsp.diagnostic.get_namespace(client.id), found[1])

  -- 2. The user types a line above the first hunk.
  vim.api.nvim_buf_set_lines(buf, H.data.first_line, H.data.first_line, false, { H.data.typed })
  H.wait("the diagnostics to follow their lines", 30000, function()
    return vim.deep_equal(lines_of(review_diagnostics()), { H.data.first_line + 1, H.data.second_line + 1 })
  end)

  -- 3 and 4: choose an action by title through vim.lsp.buf.code_action().
  -- 0.7-0.9 list {client_id, action} pairs, 0.10+ {action, ctx}.
  local function choose(title, row)
    local offered = {}
    vim.ui.select = function(items, _, on_choice)
      local chosen = nil
      for index, item in ipairs(items) do
        local action = item.action or item[2]
        table.insert(offered, action and action.title)
        if action and action.title == title and not chosen then
          chosen = index
        end
      end
      if chosen then
        return on_choice(items[chosen], chosen)
      end
      on_choice(nil, nil)
    end
    vim.api.nvim_win_set_cursor(0, { row + 1, 0 })
    vim.lsp.buf.code_action()
    return offered
  end

  local offered = choose("Accept hunk t1-1", H.data.first_line + 1)
  H.wait("the accepted change in the buffer", 30000, function()
    return line(H.data.first_line + 1) == H.data.accepted_text
  end)
  H.values.offered = offered
  H.check("the actions on a hunk", vim.tbl_contains(offered, "Reject hunk t1-1") and vim.tbl_contains(offered, "Accept all in file") and vim.tbl_contains(offered, "Reject all"), offered)
  H.check("the typed line stayed above", line(H.data.first_line) == H.data.typed, H.buf_text(buf))
  H.wait("one diagnostic left", 30000, function()
    return vim.deep_equal(lines_of(review_diagnostics()), { H.data.second_line + 1 })
  end)

  choose("Reject hunk t1-2", H.data.second_line + 1)
  H.wait("no lich review diagnostics", 30000, function()
    return #review_diagnostics() == 0
  end)
  H.check("the rejected line is unchanged", line(H.data.second_line + 1) == H.data.original_second, H.buf_text(buf))
  H.values.final_text = H.buf_text(buf)

  -- 5. The next task: its first model request carries the rejection.
  vim.cmd("LichAsk anything else?")
  H.wait("the second ask finished", 60000, function()
    return #lich.finished >= 2
  end)
  H.check("second ask answered", lich.finished[2].err == nil, lich.finished[2])
end
