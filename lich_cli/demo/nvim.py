"""`lich demo --editor nvim`: the same demo in a real Neovim, with lich's Neovim plugin.

Neovim starts clean (`--clean`: none of the user's config or plugins), with the plugin on its
runtimepath and a generated script (demo.lua, beside the workspace) that sets the plugin up with
the demo's settings (the replay provider, the approval policy), opens the sample file, opens the
transcript, and asks the recorded prompt once the lich client is attached. From there it is the
plugin as a user has it: the edits land in the buffer, the approval question is Neovim's own,
and the user quits when they have seen enough. The server gets the demo's own config and state
dirs through the environment, as in the headless demo.

The plugin comes with the package (`lich_cli/demo/nvim_plugin`, a link to editors/nvim that the
wheel build copies in); `--nvim-plugin DIR` or LICH_NVIM_PLUGIN points at another copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lich_cli.demo.headless import server_env, server_options
from lich_cli.demo.sample_files import DemoSetup

PLUGIN_ENV = "LICH_NVIM_PLUGIN"
BUNDLED_PLUGIN = Path(__file__).resolve().parent / "nvim_plugin"
# In a source checkout the plugin is also at its own place, should the link be missing
# (a checkout on a file system without symlinks).
CHECKOUT_PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"
PLUGIN_ENTRY = Path("lua") / "lich" / "init.lua"
ATTACH_WAIT_MS = 30_000

DEMO_LUA = r"""-- Written by `lich demo --editor nvim`: set up lich.nvim for the demo and ask the recorded prompt.
local demo = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("LICH_DEMO_SETTINGS")), "\n"))
local lich = require("lich")
-- Room for the plugin's final message and the demo's own line below it, so neither waits for a
-- "Press ENTER" (Neovim 0.7 prompts when messages outgrow the command line).
vim.o.cmdheight = 4
lich.setup({ cmd = demo.cmd, init_options = demo.init_options })
-- The approval is Neovim's own question, and the one step of the demo that waits for the viewer.
local ask_user = vim.lsp.handlers["window/showMessageRequest"]
vim.lsp.handlers["window/showMessageRequest"] = function(err, params, ctx, config)
  params.message = "lich demo: this question is yours to answer (1 = Allow once); the demo waits for you.\n"
    .. params.message
  return ask_user(err, params, ctx, config)
end
vim.cmd("edit " .. vim.fn.fnameescape(demo.file))
local buf = vim.api.nvim_get_current_buf()
vim.g.lich_demo_done = false
local timer = vim.loop.new_timer()
local waited = 0
timer:start(100, 100, vim.schedule_wrap(function()
  waited = waited + 100
  if lich.get_client(buf) == nil and waited < demo.attach_wait_ms then
    return
  end
  timer:stop()
  timer:close()
  if lich.get_client(buf) == nil then
    vim.notify("lich demo: the lich client did not attach; see :messages and :LspInfo", vim.log.levels.ERROR)
    return
  end
  lich.open_transcript()
  vim.cmd("wincmd p")
  vim.notify("lich demo: asking: " .. demo.prompt)
  lich.ask({
    prompt = demo.prompt,
    bufnr = buf,
    on_done = function(err, result)
      vim.g.lich_demo_done = true
      if err == nil then
        vim.cmd("redraw")
        vim.api.nvim_echo({ { "lich demo: done. u undoes an edit, :LichTranscript shows every step, :qa quits." } }, false, {})
      end
    end,
  })
end))
"""


class NvimUnavailable(Exception):
    """Neovim or the plugin cannot be found; the message says what to do."""


def find_nvim() -> str:
    found = shutil.which("nvim")
    if not found:
        raise NvimUnavailable(
            "lich demo: --editor nvim needs Neovim (0.7 or later), and `nvim` is not on PATH. "
            "Install it (Debian/Ubuntu: apt install neovim; macOS: brew install neovim; "
            "https://neovim.io), or run `lich demo` without --editor to see the demo here."
        )
    return found


def find_plugin(explicit: str | None = None) -> Path:
    candidates = [Path(p) for p in (explicit, os.environ.get(PLUGIN_ENV)) if p] + [
        BUNDLED_PLUGIN,
        CHECKOUT_PLUGIN,
    ]
    for candidate in candidates:
        if (candidate / PLUGIN_ENTRY).is_file():
            return candidate.resolve()
    raise NvimUnavailable(
        "lich demo: cannot find lich's Neovim plugin (looked in "
        + ", ".join(str(c) for c in candidates)
        + f"); pass --nvim-plugin /path/to/lich-lsp/editors/nvim or set {PLUGIN_ENV}."
    )


def write_demo_script(setup: DemoSetup) -> tuple[Path, Path]:
    """demo.lua and the settings it reads (JSON, so no value is ever spliced into Lua code)."""
    settings = {
        "cmd": [sys.executable, "-m", "lich_lsp"],
        "init_options": server_options(setup),
        "file": str(setup.workspace / setup.open_file),
        "prompt": setup.prompt,
        "attach_wait_ms": ATTACH_WAIT_MS,
    }
    settings_path = setup.root / "demo-nvim.json"
    settings_path.write_text(json.dumps(settings), encoding="utf-8")
    script = setup.root / "demo.lua"
    script.write_text(DEMO_LUA, encoding="utf-8")
    return script, settings_path


def nvim_invocation(
    nvim: str, setup: DemoSetup, plugin: Path, *, extra: list[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment; paths travel in the environment, so no quoting."""
    script, settings = write_demo_script(setup)
    env = server_env(setup)
    env.update(
        {
            "LICH_DEMO_NVIM_PLUGIN": str(plugin),
            "LICH_DEMO_SCRIPT": str(script),
            "LICH_DEMO_SETTINGS": str(settings),
        }
    )
    command = [
        nvim,
        "--clean",
        "-n",
        "-i",
        "NONE",
        "--cmd",
        "lua vim.opt.rtp:prepend(os.getenv('LICH_DEMO_NVIM_PLUGIN'))",
        "-c",
        "lua dofile(os.getenv('LICH_DEMO_SCRIPT'))",
        *(extra or []),
    ]
    return command, env


def require_terminal() -> None:
    """Neovim needs the terminal it runs in: refuse before starting it without one."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise NvimUnavailable(
            "lich demo: --editor nvim needs a terminal (its standard input and output are not one here); "
            "run it in a terminal, or run `lich demo` without --editor to see the demo here."
        )


def run_in_nvim(setup: DemoSetup, plugin_dir: str | None = None) -> int:
    """Run Neovim on the demo in this terminal (require_terminal first); its exit status is the demo's."""
    nvim = find_nvim()
    plugin = find_plugin(plugin_dir)
    command, env = nvim_invocation(nvim, setup, plugin)
    return subprocess.call(command, cwd=str(setup.workspace), env=env)
