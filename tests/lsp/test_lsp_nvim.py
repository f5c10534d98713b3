"""lich-lsp inside a real headless Neovim (the Debian package, 0.7.2): lich.applyPatch edits a buffer.

Neovim 0.7 has no documentChanges, so this also covers the plain `changes` WorkspaceEdit path
through a real client's own applyEdit handler.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NVIM = shutil.which("nvim")

pytestmark = [
    pytest.mark.nvim,
    pytest.mark.skipif(NVIM is None, reason="nvim is not installed (Debian package neovim)"),
]

SCRIPT = r"""
local root = vim.env.LICH_TEST_ROOT
local out = vim.env.LICH_TEST_OUT
local function finish(result)
  local f = io.open(out, "w")
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  vim.cmd("edit " .. root .. "/hello.py")
  local bufnr = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "lich",
    cmd = { vim.env.LICH_TEST_PYTHON, "-m", "lich_lsp" },
    root_dir = root,
    flags = { debounce_text_changes = 0 },
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(15000, function() return client.initialized end, 20), "no initialize")
  -- An unsaved change the server must see.
  vim.api.nvim_buf_set_lines(bufnr, 0, 1, false, { "print('unsaved')" })
  local uri = vim.uri_from_bufnr(bufnr)
  -- Poll: on a loaded machine the didChange may still be on its way.
  local read
  for _ = 1, 150 do
    read = client.request_sync("workspace/executeCommand",
      { command = "lich.read", arguments = { { uri = uri } } }, 10000, bufnr)
    if read and read.result and read.result.rows:find("print('unsaved')", 1, true) then
      break
    end
    vim.wait(100)
  end
  assert(read and read.result, "lich.read failed: " .. vim.inspect(read))
  local rows = vim.split(read.result.rows, "\n")
  local anchor = rows[2]:match("^(2:%x%x)|")
  local patch = "@@ hello.py\n= " .. anchor .. ".." .. anchor .. "\n~print('patched by lich')\n"
  local applied = client.request_sync("workspace/executeCommand",
    { command = "lich.applyPatch", arguments = { { patch = patch } } }, 10000, bufnr)
  assert(applied and applied.result, "lich.applyPatch failed: " .. vim.inspect(applied))
  vim.wait(15000, function()
    return vim.api.nvim_buf_get_lines(bufnr, 1, 2, false)[1] == "print('patched by lich')"
  end, 20)
  finish({
    rows = read.result.rows,
    patch = applied.result,
    lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false),
    modified = vim.api.nvim_buf_get_option(bufnr, "modified"),
  })
end)
if not ok then
  finish({ error = tostring(err) })
end
"""


def test_apply_patch_changes_the_neovim_buffer(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "hello.py").write_text("print('hello')\nprint('world')\n", encoding="utf-8")
    script = tmp_path / "lich_test.lua"
    script.write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "LICH_TEST_ROOT": str(root),
        "LICH_TEST_OUT": str(out),
        "LICH_TEST_PYTHON": sys.executable,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-c", f"luafile {script}"],
        env=env,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    assert out.exists(), "nvim wrote no result"
    result = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in result, result["error"]
    assert result["rows"].startswith("1:") and "|print('unsaved')" in result["rows"]
    assert result["patch"]["ok"] is True, result["patch"]
    assert result["lines"] == ["print('unsaved')", "print('patched by lich')"]
    assert result["modified"] is True  # changed in the buffer, not behind it
    assert (root / "hello.py").read_text(encoding="utf-8") == "print('hello')\nprint('world')\n"
