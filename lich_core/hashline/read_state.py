"""Which files (and which of their line hashes) the model has seen this session.

Reads and searches arm it; an edit needs the file to have been seen. It never decides whether
an anchor is valid: validation always re-hashes the file's current text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ReadState:
    def __init__(self) -> None:
        self._seen: dict[Path, dict[int, str]] = {}
        # Pending Lisp repair previews by candidate id (apply_patch's accept_repair).
        self.repair_candidates: dict[str, Any] = {}

    def record(self, path: Path, rows: dict[int, str]) -> None:
        """Remember that the model saw these `{line_number: hash}` rows of `path`."""
        self._seen.setdefault(Path(path), {}).update(rows)

    def has_read(self, path: Path) -> bool:
        return Path(path) in self._seen

    def seen_rows(self, path: Path) -> dict[int, str]:
        return dict(self._seen.get(Path(path), {}))

    def forget(self, path: Path) -> None:
        self._seen.pop(Path(path), None)
