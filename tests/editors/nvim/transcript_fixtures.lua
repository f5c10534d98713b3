-- The transcript module fed the shared `lich/event` fixtures (tests/fixtures/events/*.json, which
-- the pytest side validates against docs/lich-event.schema.json before Neovim starts), decoded as
-- Neovim's LSP client decodes a notification. No server needed. A renamed event field changes
-- the fixtures, and then these lines.
return function(H)
  local transcript = require("lich.transcript")

  local function fresh()
    if transcript.buf and vim.api.nvim_buf_is_valid(transcript.buf) then
      vim.api.nvim_buf_delete(transcript.buf, { force = true })
    end
  end

  local function load(name)
    local path = H.data.fixtures_dir .. "/" .. name .. ".json"
    local file = assert(io.open(path, "r"))
    local text = file:read("*a")
    file:close()
    -- As vim.lsp.rpc decodes a message: JSON null in an object is an absent key.
    return vim.json.decode(text, { luanil = { object = true } })
  end

  --- Render fixture `name`; `interject` = { after_seq = N, line = "..." } writes a line of the
  --- plugin's own (as `:LichAsk` does) after event N.
  local rendered = {}

  local function render(name, interject)
    rendered[name] = true
    fresh()
    for _, event in ipairs(load(name)) do
      transcript.on_event(event)
      if interject and event.seq == interject.after_seq then
        transcript.append({ interject.line })
      end
    end
    return transcript.lines()
  end

  local function expect(name, got, want)
    H.check(name, vim.deep_equal(got, want), { got = got, want = want })
  end

  local retried = "… provider fake failed (network): retrying in 0.5 s (attempt 2 of 3)"
  expect("a run: tools, compression, and a retried stream that keeps only the restarted answer", render("run_tools_retry"), {
    "▶ t1 (fake-model)",
    "! plugin warning: plugin .lich/plugins/lint.py: SyntaxError: invalid syntax (lint.py, line 3)",
    "Let me look at the file first.",
    '→ read_file {"end":3,"path":"src/app.py"}',
    "← read_file ok: 1:a3|def main(): 2:9f| return 1 3:0c|",
    '→ apply_patch {"input":"@@ src/app.py\\n= 2:9f..2:9f\\n~ return 2\\n"}',
    "← apply_patch failed: edit_rejected: stale_document: src/app.py changed in the editor; read it again",
    "… compressing the conversation (~81234 tokens)",
    "… compressed ~81234 → ~9120 tokens",
    retried,
    "The answer is 42.",
    "■ final",
  })

  -- The multi-line, multi-byte partial (9 code points, 10 bytes) goes; the failover provider does
  -- not stream, so its final answer is shown.
  expect("a failover drops a multi-line partial and shows the unstreamed final", render("run_failover"), {
    "▶ t2 (a-model)",
    "Reading.",
    '→ read_file {"end":2,"path":"README.md"}',
    "← read_file ok: 1:5e|# proj 2:00|",
    "! plugin warning: plugin 'audit': before_llm_call raised KeyError: 'turn'",
    "… provider a failed (bad_request): failing over to b",
    "Done.",
    "■ final",
  })

  -- Something else was written after the partial text: it is no longer the tail, so it stays and
  -- the notice says where the answer restarts.
  local tail = { retried .. "; the answer restarts below", "The answer is 42.", "■ final" }
  local got = render("run_tools_retry", { after_seq = 18, line = "? a note" })
  expect("a partial that is not the tail stays, with a restart notice", vim.list_slice(got, 10), {
    "The answe",
    "? a note",
    unpack(tail),
  })
  got = render("run_tools_retry", { after_seq = 17, line = "? a note" })
  expect("a partial split by another line stays whole, with a restart notice", vim.list_slice(got, 10), {
    "The answ",
    "? a note",
    "e",
    unpack(tail),
  })

  expect("budget exhaustion", render("run_budget"), {
    "▶ t3 (fake-model)",
    "! turn budget exhausted (1 turns): skipped terminal, terminal",
    "■ budget",
  })
  local auth = "provider 'fake' at http://127.0.0.1:8765/v1: auth: HTTP 401: invalid API key (check api_key_env)"
  expect("a retry before any text is just a notice; the error and the outcome", render("run_error"), {
    "▶ t4 (fake-model)",
    "… provider fake failed (rate_limit): retrying in 2.0 s (attempt 2 of 3)",
    "! " .. auth,
    "■ error: " .. auth,
  })
  local missing = "session_not_found: no session 20240101-000000-ffffff in /home/dev/proj/.lich/sessions"
  expect("an error before the first turn", render("run_session_error"), {
    "▶ t5 (fake-model)",
    "! " .. missing,
    "■ error: " .. missing,
  })
  expect("an event the server cut, and a cancelled compression", render("run_cancelled"), {
    "▶ t6 (fake-model)",
    "→ edit_file (arguments too large to show)",
    "← edit_file ok: Edited src/big.py: 4000 replacements",
    "… compressing the conversation (~83010 tokens)",
    "… compression skipped: cancelled",
    "■ aborted",
  })

  -- `plan` has no line of its own here: like any other such type, it shows its data, clipped.
  expect("a plan stated with update_plan", render("run_plan"), {
    "▶ t7 (fake-model)",
    '→ update_plan {"explanation":"The test fails on a leap day.","plan":[{"status":"completed","step":"Read the failing test"},{"priority"…',
    '· plan {"entries":[{"content":"Read the failing test","priority":"medium","status":"completed"},{"content":"Fix parse_date","pr…',
    "← update_plan ok: Plan updated: 1 of 3 steps completed; in progress: Fix parse_date",
    "Working on parse_date.",
    "■ final",
  })

  local missed = vim.tbl_filter(function(name)
    return not rendered[name]
  end, H.data.names)
  H.check("every fixture file is rendered here", #missed == 0, { missed = missed })
end
