"""Protected path names are compared case-folded on every platform, through `lich tool`.

On a case-insensitive file system (macOS, Windows) `.GIT/config` is `.git/config` and
`.Lich/Config.json` is the agent's config, so the deny list must not let another spelling through.
These run on Linux, where the other spelling is a separate name: it is refused all the same, and
nothing is written under either spelling.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runner import run_lich

VCS_TARGETS = [
    ".GIT/config",
    ".Git/hooks/pre-commit",
    "vendor/.gIt/config",
    ".HG/hgrc",
    ".Svn/entries",
    ".GIT",
]
LICH_TARGETS = [
    ".LICH/config.json",
    ".Lich/approvals.json",
    ".lich/CONFIG.JSON",
    ".LICH/Sessions/x.jsonl",
]
ENV_TARGETS = [".ENV", "sub/.Env.local"]


def tool(root: Path, name: str, args: dict[str, object]) -> tuple[int, str, str]:
    result = run_lich("tool", name, json.dumps(args), "--work-dir", str(root), cwd=root)
    return result.returncode, result.stdout, result.stderr


def files_under(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


@pytest.mark.parametrize("target", VCS_TARGETS)
def test_version_control_folders_in_any_case_are_never_written(tmp_path: Path, target: str) -> None:
    before = files_under(tmp_path)
    code, _, stderr = tool(
        tmp_path, "write_file", {"path": target, "content": "[core]\n\tfsmonitor = ./evil\n"}
    )
    assert code == 1
    assert f"forbidden_path: {target} (" in stderr and "is never written by tools" in stderr
    assert "Traceback" not in stderr
    assert files_under(tmp_path) == before


@pytest.mark.parametrize("target", LICH_TARGETS + ENV_TARGETS)
def test_lich_config_and_env_files_in_any_case_are_never_written(
    tmp_path: Path, target: str
) -> None:
    before = files_under(tmp_path)
    code, _, stderr = tool(tmp_path, "write_file", {"path": target, "content": "{}"})
    assert code == 1
    assert f"forbidden_path: {target} (" in stderr
    assert files_under(tmp_path) == before


def test_edit_and_patch_refuse_another_case_of_git(tmp_path: Path) -> None:
    hooks = tmp_path / ".Git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "x").write_text("#!/bin/sh\ntrue\n")
    code, _, stderr = tool(
        tmp_path, "edit_file", {"path": ".Git/hooks/x", "old_string": "true", "new_string": "evil"}
    )
    assert code == 1 and "forbidden_path: .Git/hooks/x (" in stderr
    code, _, stderr = tool(
        tmp_path, "apply_patch", {"input": "@@ .GIT/hooks/post-checkout\n+\n~evil\n"}
    )
    assert code == 1 and "forbidden_path: .GIT/hooks/post-checkout (" in stderr
    assert (hooks / "x").read_text() == "#!/bin/sh\ntrue\n"
    assert not (tmp_path / ".GIT").exists()
    # Reading stays allowed, as for `.git`.
    code, stdout, stderr = tool(tmp_path, "read_file", {"path": ".Git/hooks/x"})
    assert code == 0, stderr
    assert "true" in stdout


def test_the_agent_config_in_another_case_is_not_readable(tmp_path: Path) -> None:
    config = tmp_path / ".LICH" / "config.json"
    config.parent.mkdir()
    config.write_text('{"secret": "config-text"}')
    code, stdout, stderr = tool(tmp_path, "read_file", {"path": ".LICH/config.json"})
    assert (
        code == 1
        and "forbidden_path: .LICH/config.json (the agent's config is not accessible to tools)"
        in stderr
    )
    assert "config-text" not in stdout
    code, stdout, stderr = tool(tmp_path, "grep_files", {"pattern": "config-text", "path": ".LICH"})
    assert "config-text" not in stdout and "config-text" not in stderr
