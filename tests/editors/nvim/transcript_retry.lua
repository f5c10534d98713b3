-- The transcript module fed synthetic `lich/event` notifications around an `llm_retry`: the void
-- partial answer of the failed attempt leaves the buffer, a notice line says what happened, and
-- the restarted answer reads whole. No server needed.
return function(H)
  local transcript = require("lich.transcript")

  local function fresh()
    if transcript.buf and vim.api.nvim_buf_is_valid(transcript.buf) then
      vim.api.nvim_buf_delete(transcript.buf, { force = true })
    end
  end

  local function feed(events)
    for _, event in ipairs(events) do
      transcript.on_event({ type = event[1], task_id = "t1", run_id = "r1", seq = 1, ts = 0, data = event[2] or {} })
    end
    return transcript.lines()
  end

  local function expect(name, got, want)
    H.check(name, vim.deep_equal(got, want), { got = got, want = want })
  end

  local retry = {
    turn = 1,
    provider = "primary",
    attempt = 1,
    max_attempts = 3,
    kind = "timeout",
    message = "read timed out",
    action = "retry",
    delay_s = 1.5,
    next_provider = "primary",
    discarded_chars = 9,
  }

  fresh()
  expect("a retried stream keeps only the restarted answer", feed({
    { "run_start", { model = "m" } },
    { "llm_start", { turn = 1 } },
    { "text_delta", { turn = 1, text = "The answ" } },
    { "text_delta", { turn = 1, text = "e" } },
    { "llm_retry", retry },
    { "text_delta", { turn = 1, text = "The answer " } },
    { "text_delta", { turn = 1, text = "is 42." } },
    { "llm_end", { turn = 1 } },
    { "final", { turn = 1, text = "The answer is 42." } },
    { "run_end", { stopped_reason = "final" } },
  }), {
    "▶ t1 (m)",
    "… provider primary failed (timeout): retrying in 1.5 s (attempt 2 of 3)",
    "The answer is 42.",
    "■ final",
  })

  -- Earlier text of the run stays; the multi-line, multi-byte partial (9 code points, 10 bytes)
  -- goes; the failover provider does not stream, so its final answer is shown.
  fresh()
  expect("a failover drops a multi-line partial and shows the unstreamed final", feed({
    { "run_start", {} },
    { "llm_start", { turn = 1 } },
    { "text_delta", { turn = 1, text = "Reading." } },
    { "llm_end", { turn = 1 } },
    { "llm_start", { turn = 2 } },
    { "text_delta", { turn = 2, text = "héllo\nwor" } },
    { "llm_retry", { turn = 2, provider = "a", attempt = 2, max_attempts = 2, kind = "server", action = "failover", delay_s = 0, next_provider = "b", discarded_chars = 9 } },
    { "llm_end", { turn = 2 } },
    { "final", { turn = 2, text = "Done." } },
  }), {
    "▶ t1",
    "Reading.",
    "… provider a failed (server): failing over to b",
    "Done.",
  })

  -- Something else was written after the partial text: it is no longer the tail, so it stays
  -- and the notice says where the answer restarts.
  fresh()
  expect("a partial that is not the tail stays, with a restart notice", feed({
    { "llm_start", { turn = 1 } },
    { "text_delta", { turn = 1, text = "partial" } },
    { "plugin_warning", {} },
    { "llm_retry", vim.tbl_extend("force", retry, { discarded_chars = 7 }) },
    { "text_delta", { turn = 1, text = "whole" } },
  }), {
    "partial",
    "· plugin_warning",
    "… provider primary failed (timeout): retrying in 1.5 s (attempt 2 of 3); the answer restarts below",
    "whole",
  })

  fresh()
  expect("a retry before any text is just a notice", feed({
    { "llm_start", { turn = 1 } },
    { "llm_retry", vim.tbl_extend("force", retry, { discarded_chars = 0, delay_s = 0 }) },
    { "text_delta", { turn = 1, text = "ok" } },
  }), {
    "… provider primary failed (timeout): retrying (attempt 2 of 3)",
    "ok",
  })
end
