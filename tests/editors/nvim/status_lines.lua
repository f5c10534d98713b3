-- lich.status_lines (what :LichStatus shows) on sample lich.status results: one line per MCP
-- server of `mcp_servers`, and nothing from a missing or malformed field (an older server). No
-- server needed; the results are decoded both as vim.fn.json_decode does (null -> vim.NIL) and
-- as Neovim's LSP client decodes a response (null in an object -> absent key, where available).
return function(H)
  local lich = require("lich")

  local function expect(name, got, want)
    H.check(name, vim.deep_equal(got, want), { got = got, want = want })
  end

  local long_error = "connect: ECONNREFUSED 127.0.0.1:9\n  at request\t(retrying later) " .. string.rep("é", 300)
  local sample = vim.fn.json_encode({
    server = "lich-lsp",
    mcp_servers = {
      { name = "files", transport = "stdio", state = "connected", tools = 12, last_error = vim.NIL },
      { name = "one", transport = "http", state = "connected", tools = 1, last_error = vim.NIL },
      { name = "web", transport = "http", state = "failed", tools = 0, last_error = long_error },
      { name = "ws", state = "refused", tools = 0, last_error = "workspace config not trusted" },
      { name = "lazy", state = "not_started", tools = 0, last_error = vim.NIL },
      { name = "slow", state = "connecting", tools = 0, last_error = vim.NIL },
      { name = "off", state = "disabled", tools = 0, last_error = vim.NIL },
    },
  })
  local clipped = "connect: ECONNREFUSED 127.0.0.1:9 at request (retrying later) "
  clipped = clipped .. string.rep("é", 119 - vim.fn.strchars(clipped)) .. "…"
  local want = {
    "lich status",
    "  server: lich-lsp",
    "  MCP files: connected, 12 tools",
    "  MCP one: connected, 1 tool",
    "  MCP web: failed: " .. clipped,
    "  MCP ws: refused: workspace config not trusted",
    "  MCP lazy: not started",
    "  MCP slow: connecting",
    "  MCP off: disabled",
  }

  local decoders = { { "json_decode", vim.fn.json_decode } }
  if vim.json and vim.json.decode then
    table.insert(decoders, {
      "lsp",
      function(text)
        return vim.json.decode(text, { luanil = { object = true } })
      end,
    })
  end
  for _, decoder in ipairs(decoders) do
    local name, decode = decoder[1], decoder[2]
    expect(name .. ": one line per MCP server", lich.status_lines(decode(sample)), want)
  end
  H.check("the error line is clipped to 120 characters", vim.fn.strchars(clipped) == lich.MCP_ERROR_CHARS, vim.fn.strchars(clipped))

  -- Older servers: no field, or one that is not a list of objects.
  local base = { "lich status", "  server: lich-lsp" }
  expect("no mcp_servers", lich.status_lines({ server = "lich-lsp" }), base)
  expect("empty mcp_servers", lich.status_lines(vim.fn.json_decode('{"server": "lich-lsp", "mcp_servers": []}')), base)
  expect("mcp_servers an object", lich.status_lines({ server = "lich-lsp", mcp_servers = { files = { state = "connected" } } }), base)
  expect("mcp_servers null", lich.status_lines(vim.fn.json_decode('{"server": "lich-lsp", "mcp_servers": null}')), { "lich status", "  mcp_servers: null", "  server: lich-lsp" })
  expect(
    "malformed entries",
    lich.status_lines(vim.fn.json_decode('{"server": "lich-lsp", "mcp_servers": [null, 3, "x", ["a"], {"name": "n", "state": 7, "tools": "many", "last_error": 5}]}')),
    { "lich status", "  server: lich-lsp", "  MCP n: unknown" }
  )
  expect("connected without a tool count", lich.mcp_line({ name = "n", state = "connected" }), "MCP n: connected")
  expect("failed without an error", lich.mcp_line({ name = "w", state = "failed", last_error = vim.NIL }), "MCP w: failed")
  expect("not a table", lich.status_lines(nil), { "lich status" })

  -- :LichStatus itself shows these lines (lich.status answered by a stubbed lich.execute).
  local original = lich.execute
  lich.execute = function(command, _, callback)
    H.values.status_command = command
    callback(nil, vim.fn.json_decode(sample))
    return 1
  end
  local seen = #H.messages
  local ok, err = pcall(vim.cmd, "LichStatus")
  lich.execute = original
  H.check(":LichStatus ran", ok, err)
  local shown = H.messages[seen + 1] and H.messages[seen + 1].msg or ""
  expect(":LichStatus shows the MCP lines", shown, table.concat(want, "\n"))
  H.check("through lich.status", H.values.status_command == "lich.status", H.values.status_command)
end
