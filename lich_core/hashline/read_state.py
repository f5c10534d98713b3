"""Which files the model has seen this session.

Reads, searches and edits arm it; an edit needs the file to have been seen. It never decides
whether an anchor is valid: validation always re-hashes the file's current text, so which lines
were shown is not kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ReadState:
    def __init__(self) -> None:
        self._seen: set[Path] = set()
        # Pending Lisp repair previews by candidate id (apply_patch's accept_repair); values
        # are JSON-able dicts so the state can be saved between CLI invocations.
        self.repair_candidates: dict[str, Any] = {}

    def record(self, path: Path) -> None:
        """Remember that the model saw (part of) `path`."""
        self._seen.add(Path(path))

    def has_read(self, path: Path) -> bool:
        return Path(path) in self._seen

    # --- persistence: `lich tool` runs one tool per process, so a CLI session keeps its read
    # state in a file between calls (read_file, then apply_patch in a later invocation).

    def to_json(self) -> dict[str, Any]:
        return {
            "seen": sorted(str(path) for path in self._seen),
            "repair_candidates": self.repair_candidates,
        }

    @classmethod
    def from_json(cls, data: Any) -> ReadState:
        state = cls()
        if not isinstance(data, dict):
            return state
        seen = data.get("seen")
        # A list of paths; older files map each path to its rows (the keys are the paths).
        if isinstance(seen, (list, dict)):
            state._seen.update(Path(path) for path in seen if isinstance(path, str))
        candidates = data.get("repair_candidates")
        if isinstance(candidates, dict):
            state.repair_candidates = dict(candidates)
        return state
