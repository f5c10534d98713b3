"""Issue 33's seed-parity leftovers seen from the `lich` CLI: what an agent run gives its tools'
processes, and how a broken plugin is reported (lich's seed: /work/shared/seeds/lich-*.txt)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.cli_runner import run_lich as lich


def replay_config(tmp_path: Path, calls: list[dict], **settings: object) -> Path:
    """A replay provider whose first turn makes `calls`, then answers "Finished."."""
    turns = [
        {"message": {"role": "assistant", "content": "", "tool_calls": calls}},
        {"message": {"role": "assistant", "content": "Finished."}},
    ]
    replay = tmp_path / "model.jsonl"
    replay.write_text("".join(json.dumps(turn) + "\n" for turn in turns), encoding="utf-8")
    config = tmp_path / "lich.json"
    config.write_text(
        json.dumps(
            {"providers": [{"name": "replay", "kind": "replay", "path": str(replay)}], **settings}
        ),
        encoding="utf-8",
    )
    return config


def test_an_agent_run_gives_its_commands_the_configured_terminal_timeout(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    call = {
        "id": "c1",
        "name": "terminal",
        "arguments": {"command": 'printf %s "$LICH_TERMINAL_TIMEOUT_MS" > seen.txt'},
    }
    config = replay_config(tmp_path, [call], terminal_timeout_ms=4321)
    done = lich(
        "run", "note the timeout", "--config", str(config), "--work-dir", str(work), cwd=work
    )
    assert done.returncode == 0, done.stderr
    assert (work / "seen.txt").read_text() == "4321"


def test_the_tools_see_the_default_timeout_when_none_is_configured(tmp_path: Path) -> None:
    done = lich(
        "tool",
        "terminal",
        json.dumps({"command": 'echo "t=$LICH_TERMINAL_TIMEOUT_MS"'}),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "t=60000" in done.stdout


def test_broken_plugins_are_one_summary_warning(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "raises.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    config = replay_config(tmp_path, [], plugins=["raises.py", "missing.py"])
    done = lich("run", "say hi", "--config", str(config), "--work-dir", str(work), cwd=work)
    assert done.returncode == 0, done.stderr
    summary = (
        f"lich: warning: plugin load errors (2): plugin {tmp_path / 'raises.py'}: import failed: RuntimeError: boom; "
        f"plugin {tmp_path / 'missing.py'}: file not found: {tmp_path / 'missing.py'}"
    )
    mentions = [
        line for line in done.stderr.splitlines() if "raises.py" in line or "missing.py" in line
    ]
    assert mentions == [summary]
    # `lich tools` starts no run: it prints the same one line.
    listed = lich("tools", "--config", str(config), "--work-dir", str(work), cwd=work)
    assert [line for line in listed.stderr.splitlines() if "plugin" in line] == [summary]


def test_a_relative_plugin_path_in_the_user_config_resolves_against_its_folder(
    tmp_path: Path,
) -> None:
    user_dir = Path(os.environ["XDG_CONFIG_HOME"]) / "lich"
    user_dir.mkdir(parents=True)
    (user_dir / "config.json").write_text(
        json.dumps({"plugins": ["plugins/absent.py"]}), encoding="utf-8"
    )
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "absent.py").write_text(
        "x = 1\n", encoding="utf-8"
    )  # the repository's: not it
    listed = lich("tools", cwd=tmp_path)
    expected = user_dir / "plugins" / "absent.py"
    assert (
        f"lich: warning: plugin load errors (1): plugin {expected}: file not found: {expected}"
        in listed.stderr.splitlines()
    )
