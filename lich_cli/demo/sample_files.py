"""The demo's bundled files (package data): the sample workspace and the recorded conversation.

`prepare()` copies them into a fresh temp dir laid out as

    <root>/workspace/        the sample project, where the agent works
    <root>/recording.jsonl   the replay the model plays
    <root>/config/, state/   the server's own XDG config and state dirs (empty at the start)

so the bundled copy is never edited, and removing <root> leaves nothing of the demo behind.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

PACKAGE = "lich_cli.demo"
SAMPLE_DIR = "sample"
RECORDING = "recording.jsonl"
# The file the demo opens before asking (the one the prompt is about).
OPEN_FILE = "stats.py"


@dataclass(frozen=True)
class DemoSetup:
    root: Path
    workspace: Path
    recording: Path
    config_home: Path
    state_home: Path
    prompt: str
    open_file: str = OPEN_FILE
    recording_name: str = f"lich_cli/demo/{RECORDING}"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def bundled() -> Traversable:
    return resources.files(PACKAGE)


def recorded_prompt(text: str) -> str:
    """The prompt the recording was made with: the `prompt` of its first line that has one."""
    for line in text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if isinstance(record, dict) and isinstance(record.get("prompt"), str):
            return str(record["prompt"])
    raise ValueError(f"{RECORDING} names no prompt")


def _copy_tree(source: Traversable, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name == "__pycache__":
            continue
        if item.is_dir():
            _copy_tree(item, target / item.name)
        else:
            (target / item.name).write_bytes(item.read_bytes())


def prepare(parent: str | None = None) -> DemoSetup:
    """A fresh copy of the sample workspace and the recording in a new temp dir."""
    root = Path(tempfile.mkdtemp(prefix="lich-demo-", dir=parent)).resolve()
    package = bundled()
    workspace = root / "workspace"
    _copy_tree(package / SAMPLE_DIR, workspace)
    recording_text = (package / RECORDING).read_text(encoding="utf-8")
    recording = root / RECORDING
    recording.write_text(recording_text, encoding="utf-8")
    config_home, state_home = root / "config", root / "state"
    config_home.mkdir()
    state_home.mkdir()
    return DemoSetup(
        root=root,
        workspace=workspace,
        recording=recording,
        config_home=config_home,
        state_home=state_home,
        prompt=recorded_prompt(recording_text),
    )
