"""apply_patch: the hashline edit tool (kli's `edit`), whole-or-nothing across files.

Every anchor is re-hashed against the file's current workspace text; any problem in any file
rejects the whole patch and nothing is written. A valid patch goes to the Workspace as ONE
change set (in the editor: one undoable WorkspaceEdit made of small TextEdits).

A file that does not exist yet may be created by a section whose ops are all bare inserts
(`+` / `<` with no anchor): there is nothing to have read and nothing to go stale.

Lisp-family files are checked for balanced delimiters after patching. `repair: safe` (default)
writes a repair only when it stays inside the edited lines and keeps the top-level form count;
otherwise, and always with `repair: preview`, the result is a preview with a candidate id and
nothing is written; `apply_patch(accept_repair=ID, path=PATH)` then writes that candidate if
none of its files changed since. `repair: reject` refuses unbalanced output.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.hashline.byte_lines import ByteLines
from lich_core.hashline.edit import (
    FileEdit,
    FileTarget,
    edit_from_texts,
    plan_edits,
    render_edit_result,
)
from lich_core.hashline.lisp import RepairOutcome, dialect_for, is_lisp_path, repair
from lich_core.hashline.patch import parse_patch
from lich_core.tools.file_text import write_changes
from lich_core.tools.guard import (
    capture_errors,
    optional_string_arg,
    relative_to_root,
    require_string_arg,
    resolve_file_for,
)
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult
from lich_core.workspace import FileChange, lines_behind, unsaved_set

REPAIR_POLICIES = ("safe", "preview", "reject")
MAX_OUTPUT_CHARS = 200_000
# From this size on, a file's lines come from its bytes (ByteLines) when the workspace has them:
# below it, splitting the text costs less than indexing the bytes.
BYTE_LINES_MIN_BYTES = 64 * 1024


@dataclass
class _PlannedFile:
    path: Path
    edit: FileEdit


# A pending candidate in ReadState.repair_candidates (JSON-able, so a CLI session can save it):
# {"files": {abs_path: [display, sha256 of the previewed base text or None, new text]},
#  "repaired": [abs_path, ...]}


def _digest(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _current_text(ctx: ToolContext, path: Path, unsaved: set[Path]) -> str | None:
    workspace = ctx.workspace
    assert workspace is not None
    if path not in unsaved and not workspace.exists(path):
        return None
    try:
        return workspace.read_text(path)
    except FileNotFoundError:
        return None


def _targets(ctx: ToolContext, patch_text: str) -> tuple[list[Path], list[FileTarget]]:
    sections = parse_patch(patch_text)
    assert ctx.read_state is not None
    unsaved = unsaved_set(ctx.workspace)  # type: ignore[arg-type]
    by_path: dict[Path, FileTarget] = {}
    for section in sections:
        path = resolve_file_for(ctx, section.path, write=True)
        target = by_path.get(path)
        if target is None:
            display = relative_to_root(ctx.work_dir, path)
            if os.path.isdir(path):
                raise ToolError(
                    f"is_directory: {display} is a directory; a section header names a file"
                )
            text = _current_text(ctx, path, unsaved)
            target = FileTarget(
                display,
                text,
                ctx.read_state.has_read(path),
                lines=_lines_from_bytes(ctx, path, text),
            )
            by_path[path] = target
        target.ops.extend(section.ops)
    return list(by_path), list(by_path.values())


def _lines_from_bytes(ctx: ToolContext, path: Path, text: str | None) -> ByteLines | None:
    """A big file's lines read from the bytes behind its text, when the workspace has them."""
    lines = lines_behind(ctx.workspace, path, text)
    return lines if lines is not None and len(lines.data) >= BYTE_LINES_MIN_BYTES else None


def _record_read(ctx: ToolContext, planned: list[_PlannedFile]) -> None:
    """The result shows rows of every edited file: the model has seen them."""
    assert ctx.read_state is not None
    for item in planned:
        ctx.read_state.record(item.path)


def _changes(planned: list[_PlannedFile]) -> list[FileChange]:
    """Deferred writes: the new text is joined only if the workspace reads it (an editor does; a
    disk write splices the replacements into the file's bytes instead)."""
    return [
        FileChange.deferred(
            item.path, _text_of(item.edit), item.edit.old_text, item.edit.replacements
        )
        for item in planned
    ]


def _text_of(edit: FileEdit) -> Callable[[], str]:
    return lambda: edit.new_text


def _with_text(edit: FileEdit, text: str) -> None:
    """Swap in a repaired text; counts stay those of the patch, regions those of the repair."""
    repaired = edit_from_texts(edit.display, edit.old_text, text)
    edit.new_text = text
    edit.replacements = repaired.replacements
    edit.regions = repaired.regions


def _store_candidate(ctx: ToolContext, planned: list[_PlannedFile], repaired: set[Path]) -> str:
    assert ctx.read_state is not None
    candidate_id = "repair-" + secrets.token_hex(4)
    ctx.read_state.repair_candidates[candidate_id] = {
        "files": {
            str(item.path): [item.edit.display, _digest(item.edit.old_text), item.edit.new_text]
            for item in planned
        },
        "repaired": sorted(str(path) for path in repaired),
    }
    return candidate_id


def _lisp_problem_text(display: str, outcome: RepairOutcome) -> str:
    return f"{display}: " + "; ".join(outcome.problems or ["unbalanced delimiters"])


async def _apply_patch(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    patch_text = require_string_arg(args, "input")
    policy = (optional_string_arg(args, "repair", "safe") or "safe").strip().lower()
    if policy not in REPAIR_POLICIES:
        raise ToolError(
            f"invalid_arg: repair must be one of {', '.join(REPAIR_POLICIES)}, not {policy!r}"
        )
    paths, targets = _targets(ctx, patch_text)
    edits = plan_edits(targets)
    planned = [_PlannedFile(path, edit) for path, edit in zip(paths, edits, strict=True)]

    notes: list[str] = []
    rejected: list[str] = []
    needs_preview: list[tuple[_PlannedFile, RepairOutcome]] = []
    repaired: set[Path] = set()
    for item in planned:
        if not is_lisp_path(item.path):
            continue
        edit = item.edit
        outcome = repair(edit.old_text, edit.new_text, edit.hunks, dialect_for(item.path))
        if outcome.status == "balanced":
            continue
        if outcome.status in ("syntax", "preexisting"):
            why = "not repaired" if outcome.status == "syntax" else "already so before this patch"
            notes.append(f"note: {_lisp_problem_text(edit.display, outcome)} ({why})")
            continue
        if outcome.status == "unrepairable":
            rejected.append(
                f"lisp_unbalanced: {_lisp_problem_text(edit.display, outcome)}; no repair found, fix the patch"
            )
            continue
        if policy == "reject":
            suggestion = (
                f" (a repair would be: {'; '.join(outcome.fixes)})" if outcome.fixes else ""
            )
            rejected.append(
                f"lisp_unbalanced: {_lisp_problem_text(edit.display, outcome)}{suggestion}"
            )
            continue
        _with_text(edit, outcome.text)
        repaired.add(item.path)
        if outcome.status == "repaired" and policy == "safe":
            notes.append(f"repaired {edit.display}: {'; '.join(outcome.fixes)}")
        else:
            needs_preview.append((item, outcome))
    if rejected:
        raise ToolError("\n".join(rejected) + "\nNothing was written.")

    if needs_preview:
        candidate_id = _store_candidate(ctx, planned, repaired)
        first = needs_preview[0][0]
        parts = [f"Repair preview {candidate_id}: nothing was written."]
        for item, outcome in needs_preview:
            why = (
                "requested preview"
                if policy == "preview"
                else "the repair is not local to the edit"
            )
            if outcome.status == "candidate" and policy != "preview":
                why = "the repair reaches outside the edited lines or changes the top-level form count"
            parts.append(f"{item.edit.display}: {'; '.join(outcome.problems)} ({why})")
            parts.append(f"proposed repair: {'; '.join(outcome.fixes)}")
            parts.append(render_edit_result(item.edit, verb="Would edit"))
        parts.append(
            f'Accept it with apply_patch(accept_repair="{candidate_id}", path="{first.edit.display}"), '
            "or send a corrected patch."
        )
        return ToolResult(
            ok=True,
            output="\n".join(parts),
            details={
                "candidate": candidate_id,
                "written": False,
                "paths": [item.edit.display for item in planned],
            },
        )

    assert ctx.workspace is not None
    # Rendered before the write, while the new lines are still in the CPU's caches (after a
    # 2 MiB write they are not: bench_hashline, ~0.2x of the engine's time); it goes out only if
    # the write lands, and a failing render now leaves the file as it was.
    output = "\n\n".join(render_edit_result(item.edit) for item in planned)
    await write_changes(ctx, _changes(planned))
    _record_read(ctx, planned)
    if notes:
        output += "\n\n" + "\n".join(notes)
    return ToolResult(
        ok=True,
        output=output,
        details={
            "written": True,
            "files": [
                {
                    "path": item.edit.display,
                    "added": item.edit.added,
                    "removed": item.edit.removed,
                    "created": item.edit.created,
                    "prior_content": item.edit.old_text,
                }
                for item in planned
            ],
        },
    )


async def _accept_repair(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    candidate_id = require_string_arg(args, "accept_repair").strip()
    target = optional_string_arg(args, "path")
    if not target:
        raise ToolError("missing_arg: path (the file the repair preview is for)")
    path = resolve_file_for(ctx, target, write=True)
    assert ctx.read_state is not None and ctx.workspace is not None
    candidate = ctx.read_state.repair_candidates.get(candidate_id)
    if not isinstance(candidate, dict) or not isinstance(candidate.get("files"), dict):
        raise ToolError(
            f"unknown_candidate: {candidate_id} (no pending repair preview with that id in this session)"
        )
    files: dict[str, list[Any]] = candidate["files"]
    if str(path) not in candidate.get("repaired", []):
        names = ", ".join(
            sorted(files[name][0] for name in candidate.get("repaired", []) if name in files)
        )
        raise ToolError(
            f"invalid_arg: {candidate_id} repairs {names}, not {relative_to_root(ctx.work_dir, path)}"
        )
    unsaved = unsaved_set(ctx.workspace)
    planned: list[_PlannedFile] = []
    for name, (display, base_digest, new_text) in files.items():
        file_path = Path(name)
        resolve_file_for(ctx, display, write=True)  # the deny list may have changed since
        current = _current_text(ctx, file_path, unsaved)
        if _digest(current) != base_digest:
            raise ToolError(
                f"stale_candidate: {display} changed since the preview {candidate_id}; read it again and "
                "send the patch again. Nothing was written."
            )
        planned.append(_PlannedFile(file_path, edit_from_texts(display, current, new_text)))
    await write_changes(ctx, _changes(planned))
    del ctx.read_state.repair_candidates[candidate_id]
    _record_read(ctx, planned)
    output = "\n\n".join(render_edit_result(item.edit) for item in planned)
    return ToolResult(
        ok=True,
        output=f"Accepted {candidate_id}.\n" + output,
        details={
            "written": True,
            "candidate": candidate_id,
            "paths": [item.edit.display for item in planned],
        },
    )


@capture_errors
async def apply_patch(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if args.get("accept_repair"):
        return await _accept_repair(args, ctx)
    return await _apply_patch(args, ctx)


TOOL = FunctionTool(
    name="apply_patch",
    description=(
        "Edit files with a hashline patch (format in the system prompt). Lisp delimiters are repaired per repair; accept_repair + path apply a preview."
    ),
    parameters={
        "type": "object",
        "properties": {
            "input": {
                "type": "string",
            },
            "repair": {
                "type": "string",
                "enum": list(REPAIR_POLICIES),
            },
            "accept_repair": {
                "type": "string",
                "description": "Preview id.",
            },
            "path": {
                "type": "string",
                "description": "With accept_repair.",
            },
        },
        "additionalProperties": False,
    },
    run=apply_patch,
    capability="file/edit",
    max_output_chars=MAX_OUTPUT_CHARS,
)
