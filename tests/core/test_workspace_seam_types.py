"""The Workspace seam is typed in full: a workspace that renames one of its capabilities
(command_host, user_invoked, lines_behind, drain_user_notes, sync_to_disk, report_test_results)
is no longer a Workspace to mypy, where looking the capability up by name would have switched it
off in silence (review notes, test diagnostics, saving buffers before a test run...)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MYPY_TIMEOUT_S = 600
CAPABILITIES = (
    "command_host",
    "user_invoked",
    "lines_behind",
    "drain_user_notes",
    "sync_to_disk",
    "report_test_results",
)


@pytest.mark.timeout(MYPY_TIMEOUT_S + 60)
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is in the test extra")
def test_an_editor_workspace_with_a_renamed_capability_is_a_type_error(tmp_path: Path) -> None:
    source = (ROOT / "lich_lsp" / "workspace.py").read_text(encoding="utf-8")
    # The real EditorWorkspace, copied once as it is (the control) and once per capability with
    # that name renamed throughout the module, as an editor's rename would.
    (tmp_path / "as_is.py").write_text(source, encoding="utf-8")
    uses = [
        "from lich_core.workspace import DiskWorkspace, Workspace",
        "from lich_acp.workspace import AcpWorkspace",
        "import as_is",
        "def disk(w: DiskWorkspace) -> Workspace: return w",
        "def acp(w: AcpWorkspace) -> Workspace: return w",
        "def editor(w: as_is.EditorWorkspace) -> Workspace: return w",
    ]
    lines: dict[str, int] = {}
    for name in CAPABILITIES:
        renamed, count = re.subn(rf"\b{name}\b", f"{name}_renamed", source)
        assert count, f"lich_lsp/workspace.py no longer names {name}"
        (tmp_path / f"renamed_{name}.py").write_text(renamed, encoding="utf-8")
        uses.append(f"import renamed_{name}")
        uses.append(f"def use_{name}(w: renamed_{name}.EditorWorkspace) -> Workspace: return w")
        lines[name] = len(uses)
    (tmp_path / "uses.py").write_text("\n".join(uses) + "\n", encoding="utf-8")

    cache_dir = os.environ.get("LICH_MYPY_CACHE_DIR") or str(tmp_path / "mypy-cache")
    done = subprocess.run(
        # Silent imports: the copies' own findings are not the point, only whether each is a Workspace.
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--cache-dir",
            cache_dir,
            str(tmp_path / "uses.py"),
        ],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT_S,
    )
    report = done.stdout + done.stderr
    errors = {
        int(match[1]): match[0]
        for match in re.finditer(r"^\S*uses\.py:(\d+): error:.*$", report, re.M)
    }
    # The three workspaces as they are are Workspaces...
    assert not {line for line in errors if line <= 6}, report
    # ...and each renamed capability makes the editor's one incompatible, naming what is missing.
    for name, line in lines.items():
        assert line in errors, f"renaming {name} is not a type error:\n{report}"
        assert "Incompatible return value type" in errors[line], report
        assert re.search(rf"uses\.py:{line}: note: +{name}$", report, re.M), report
    assert len(errors) == len(CAPABILITIES), report
