"""Issue 33: the CLI names the user config file it really reads, and no unknown key is silent.

The conftest points XDG_CONFIG_HOME into a temp home, so every path below is that real path,
not `~/.config/lich/config.json`.
"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest

from lich_cli.agent import CONFIG_TEMPLATE
from lich_core.config import user_config_path
from lich_core.providers import factory
from tests.support.cli_runner import run_lich as lich

UNKNOWN_KEY_LINE = (
    "lich has no such setting and ignores it (the keys are listed in docs/configuration.md)"
)


def user_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_lich_config_names_the_user_config_it_read_and_whether_it_exists(tmp_path: Path) -> None:
    absent = lich("config", cwd=tmp_path)
    assert absent.returncode == 0, absent.stderr
    assert f"# user config: {user_file()} (not found)" in absent.stdout.splitlines()
    user_file().parent.mkdir(parents=True)
    user_file().write_text(json.dumps({"max_turns": 9}), encoding="utf-8")
    present = lich("config", cwd=tmp_path)
    assert f"# user config: {user_file()} (read)" in present.stdout.splitlines()
    assert re.search(
        rf"^max_turns += 9  # {re.escape(str(user_file()))}$", present.stdout, re.MULTILINE
    )
    shown = json.loads(lich("config", "--json", cwd=tmp_path).stdout)
    assert shown["user_config"] == {"path": str(user_file()), "exists": True}
    assert user_config_path() == user_file()


def test_lich_config_names_the_config_file_given(tmp_path: Path) -> None:
    given = tmp_path / "team.json"
    given.write_text("{}", encoding="utf-8")
    done = lich("config", "--config", str(given), cwd=tmp_path)
    assert f"# --config file: {given}" in done.stdout.splitlines()


def test_an_unknown_key_like_no_known_one_is_warned_about_not_listed_as_in_effect(
    tmp_path: Path,
) -> None:
    (tmp_path / ".lich").mkdir()
    workspace_file = tmp_path / ".lich" / "config.json"
    workspace_file.write_text(json.dumps({"modle": "gpt-4o"}), encoding="utf-8")
    ran = lich("tools", cwd=tmp_path)
    assert ran.returncode == 0
    warning = f"{workspace_file.resolve()}: modle: unknown key; {UNKNOWN_KEY_LINE}"
    assert ran.stderr.splitlines() == [f"lich: {warning}"]
    shown = lich("config", cwd=tmp_path).stdout.splitlines()
    (line,) = [line for line in shown if line.startswith("modle ")]
    assert line.endswith("; unknown key: no effect"), line
    assert f"#   {warning}" in shown  # in the dropped section


def test_the_no_provider_hint_names_the_real_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("lich_core.providers.chain.BACKOFF_BASE_MS", 0)
    monkeypatch.setattr("lich_core.providers.chain.BACKOFF_STEP_MS", 0)
    monkeypatch.setitem(factory.DEFAULT_BASE_URLS, "ollama", f"http://127.0.0.1:{closed_port()}")
    done = lich("say hello", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("lich: error:")]
    assert f"configure providers in {user_file()} (or try `lich demo`" in error
    assert "~/.config" not in error


def test_the_init_template_does_not_pretend_the_user_config_is_always_in_home() -> None:
    assert "$XDG_CONFIG_HOME/lich/config.json" in CONFIG_TEMPLATE
