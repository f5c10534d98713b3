"""Review per hunk in a real headless Neovim (editors/nvim) against the real lich-lsp server:
accept one hunk and reject another through vim.lsp.buf.code_action(), after typing above them.

The scenario is tests/editors/nvim/review_hunks.lua; the harness, the Neovim binaries and the
skip rules are test_nvim.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.editors.test_nvim import NVIMS, _version, assert_passed, run_scenario
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.nvim

CALC = "".join(f"v{n} = {n}\n" for n in range(8))


@pytest.fixture(params=NVIMS or [None], ids=[_version(b) for b in NVIMS] or ["no-nvim"])
def nvim(request: pytest.FixtureRequest) -> str:
    import os

    binary = request.param
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no `nvim` binary on PATH under CI=true (CI installs Debian's neovim)")
        pytest.skip(
            "no `nvim` binary on PATH: install Neovim (Debian: apt-get install neovim) to run"
        )
    return binary


def write_config(tmp_path: Path, provider: FakeProviderServer) -> None:
    """The fake provider and review mode in the user's config (run_scenario's XDG_CONFIG_HOME)."""
    config = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": provider.url + "/v1",
                "model": "fake-model",
            }
        ],
        "edit_mode": "review",
    }
    path = tmp_path / "config" / "lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")


def test_accept_one_hunk_and_reject_one(
    nvim: str, tmp_path: Path, fake_provider: FakeProviderServer
) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    calc = workspace / "calc.py"
    calc.write_text(CALC, encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "calc.py",
                        "old_string": "v2 = 2",
                        "new_string": "v2 = 20",
                    },
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "calc.py",
                        "old_string": "v6 = 6",
                        "new_string": "v6 = 60",
                    },
                }
            ]
        },
        {"text": "Bumped both."},
        {"text": "Nothing else."},
    )
    write_config(tmp_path, fake_provider)
    data = {
        "file": str(calc),
        "first_line": 2,
        "second_line": 6,
        "typed": "# typed by the user",
        "accepted_text": "v2 = 20",
        "original_second": "v6 = 6",
    }
    result = run_scenario(nvim, "review_hunks", workspace, tmp_path, data)
    assert_passed(result)
    expected = CALC.replace("v2 = 2\n", "# typed by the user\nv2 = 20\n")
    assert result["values"]["final_text"] + "\n" == expected
    # The second task's first model request told the model what the user rejected.
    assert len(fake_provider.requests) == 4
    second_task = json.dumps(fake_provider.requests[3]["json"]["messages"])
    assert "The user rejected your proposed change t1-2 to calc.py" in second_task
    assert "v6 = 60" in second_task
    assert "dropped" not in second_task  # typing above moved the hunks, it did not hit them
