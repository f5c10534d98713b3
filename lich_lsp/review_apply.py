"""Answering the review (see lich_lsp.review): accepting hunks (one versioned WorkspaceEdit, all or
nothing, through lich_lsp.workspace's send_changes) and rejecting them, each told to the model."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from lsprotocol import types

from lich_core.errors import EditRejected, ToolError
from lich_core.workspace import FileChange
from lich_lsp.review_hunks import (
    Hunk,
    ReviewFile,
    applied_text,
    preview,
    task_title,
    without_overlaps,
)
from lich_lsp.review_tracking import ReviewTracking

log = logging.getLogger("lich.lsp.review")

# Accepts lich stopped waiting for, kept per file to recognise the editor applying one late.
MAX_UNANSWERED_ACCEPTS = 8


class ReviewApply(ReviewTracking):
    """Accept and reject over the tracked hunks."""

    async def accept(self, hunk_ids: Iterable[str]) -> dict[str, Any]:
        """Apply these hunks (one WorkspaceEdit over their files, all or nothing).

        The editor's answer is awaited as long as send_changes allows (lich_lsp.workspace
        APPLY_EDIT_TIMEOUT_S); meanwhile the hunks cannot be rejected (hunk_busy). A cancel
        ($/cancelRequest) stops the wait: the hunks stay pending unless the editor answered applied.
        """
        wanted = list(dict.fromkeys(hunk_ids))
        chosen, missing, refused = self._collect(wanted)
        if not chosen:
            return self._unavailable(missing, refused)
        store = self._documents
        async with store.locked(f.path for f in chosen):
            changes: list[FileChange] = []
            plan: list[tuple[ReviewFile, list[Hunk], str]] = []
            for review_file, hunks in chosen.items():
                self.sync(review_file)
                live = [h for h in hunks if h in review_file.hunks]
                for hunk in hunks:
                    if hunk not in live:
                        if hunk.hunk_id in self._refused:
                            refused.append(hunk.hunk_id)
                        else:
                            missing.append(hunk.hunk_id)
                live = without_overlaps(live)
                if not live:
                    continue
                new_text, replacements = applied_text(review_file.text, live)
                changes.append(
                    FileChange(
                        review_file.path, "write", new_text, review_file.text, tuple(replacements)
                    )
                )
                plan.append((review_file, live, new_text))
            if not changes:
                if refused:
                    return self._unavailable(missing, refused)
                return _failure(
                    f"not_found: no pending change {', '.join(missing)} (the file changed; see the log)"
                )
            label = plan[0][1][0].label if len(plan) == 1 else "lich: accept reviewed changes"
            ids = [h.hunk_id for _, hunks, _ in plan for h in hunks]
            landed = False

            def applied(_: Sequence[FileChange]) -> None:
                # Called as soon as the editor says applied, also when this accept was cancelled meanwhile.
                nonlocal landed
                landed = True
                self._journal(changes, plan)

            for review_file, _, _ in plan:
                review_file.busy = True
            self._accepting.update(ids)
            try:
                await self._send(
                    changes,
                    label,
                    on_applied=applied,
                    on_late_apply=lambda late: self._accepted_late(late, changes, plan),
                )
            except ToolError as err:
                reason = err.reason if isinstance(err, EditRejected) else str(err)
                if reason.startswith("edit_timeout:"):
                    self._remember_unanswered(plan)
                self.notes.add(
                    f"Your proposed change {', '.join(ids)} could not be applied when the user accepted it: {reason}"
                )
                self._messages.show_message(
                    f"lich: could not apply {', '.join(ids)}: {reason}", types.MessageType.Warning
                )
                return _failure(str(err))
            except asyncio.CancelledError:
                if landed:
                    self._settle_all(plan)
                else:
                    self._remember_unanswered(plan)
                    self._messages.show_message(
                        f"lich: accepting {', '.join(ids)} was cancelled before the editor applied it; "
                        "the changes are still pending",
                        types.MessageType.Warning,
                    )
                raise
            finally:
                for review_file, _, _ in plan:
                    review_file.busy = False
                self._accepting.difference_update(ids)
        self._settle_all(plan)
        edited = [review_file.uri for review_file, _, _ in plan]
        result: dict[str, Any] = {
            "ok": True,
            "accepted": ids,
            "edited": edited,
            "pending": len(self.pending()),
        }
        if missing:
            result["missing"] = missing
        if refused:
            result["refused"] = self._refusals(refused)
        return result

    def _settle_all(self, plan: Sequence[tuple[ReviewFile, list[Hunk], str]]) -> None:
        for review_file, live, new_text in plan:
            review_file.busy = False
            self._settle_accepted(review_file, live, new_text)

    def _remember_unanswered(self, plan: Sequence[tuple[ReviewFile, list[Hunk], str]]) -> None:
        for review_file, live, new_text in plan:
            review_file.unanswered.append((list(live), review_file.text, new_text))
            del review_file.unanswered[:-MAX_UNANSWERED_ACCEPTS]

    def _accepted_late(
        self,
        late: Sequence[FileChange],
        changes: Sequence[FileChange],
        plan: Sequence[tuple[ReviewFile, list[Hunk], str]],
    ) -> None:
        """The editor applied an accept after lich stopped waiting (its editor part `late`):
        journal it, count its hunks as accepted if still pending, and tell the model."""
        keys = {self._key(c.path) for c in late}
        part = [
            (c, step) for c, step in zip(changes, plan, strict=True) if self._key(c.path) in keys
        ]
        if not part:
            return
        self._journal([c for c, _ in part], [step for _, step in part])
        for review_file, live, new_text in (step for _, step in part):
            entry = next(
                (u for u in review_file.unanswered if u[0] == live and u[2] == new_text), None
            )
            if entry is not None and all(h in review_file.hunks for h in live):
                review_file.unanswered.remove(entry)
                if review_file.text == entry[1]:
                    self._settle_accepted(review_file, live, new_text)
        ids = ", ".join(h.hunk_id for _, (_, live, _) in part for h in live)
        self.notes.add(
            f"Your proposed change {ids} was applied after all: the editor applied it after lich had stopped "
            "waiting for its answer. Read the file again before editing near it."
        )

    def _journal(
        self, changes: list[FileChange], plan: list[tuple[ReviewFile, list[Hunk], str]]
    ) -> None:
        """Accepted hunks become part of their task's undo (lich.undoTask takes them back too).

        `changes` and `plan` are parallel, one entry per file; a file's change goes to the task of
        its first accepted hunk (hunks of two tasks accepted at once in one file: the older one).
        """
        by_task: dict[str, list[FileChange]] = {}
        for change, (_, live, _) in zip(changes, plan, strict=True):
            by_task.setdefault(live[0].task_id, []).append(change)
        for task_id, task_changes in by_task.items():
            try:
                self._record_accepted(task_id, task_changes)
            except Exception:  # noqa: BLE001 - the edit is applied; only its undo step is lost
                log.warning("could not journal accepted hunks of %s", task_id, exc_info=True)

    def reject(self, hunk_ids: Iterable[str]) -> dict[str, Any]:
        """Drop these hunks and tell the model. A hunk whose accept is on its way to the editor is
        not rejected (`hunk_busy`): the editor may be applying it this moment."""
        wanted = list(dict.fromkeys(hunk_ids))
        chosen, missing, refused = self._collect(wanted)
        busy = [
            h.hunk_id for hunks in chosen.values() for h in hunks if h.hunk_id in self._accepting
        ]
        chosen = {
            f: kept
            for f, hunks in chosen.items()
            if (kept := [h for h in hunks if h.hunk_id not in busy])
        }
        if not chosen:
            if busy:
                return _failure(_busy_error(busy))
            return self._unavailable(missing, refused)
        rejected: list[str] = []
        for review_file, hunks in chosen.items():
            rel = self._rel(review_file.path)
            for hunk in hunks:
                review_file.hunks.remove(hunk)
                rejected.append(hunk.hunk_id)
                self.notes.add(
                    "\n".join(
                        [
                            f"The user rejected your proposed change {hunk.hunk_id} to {rel} ({hunk.summary()}, "
                            f'from the task "{task_title(hunk.label)}"). It would have replaced:',
                            *(preview(hunk.old_text, "  ") or ["  (nothing)"]),
                            "with:",
                            *(preview(hunk.new_text, "  ") or ["  (nothing)"]),
                            "Do not make this change again unless the user asks for it.",
                        ]
                    )
                )
            self._forget_if_empty(review_file)
            self.publish(review_file)
        result: dict[str, Any] = {"ok": True, "rejected": rejected, "pending": len(self.pending())}
        if missing:
            result["missing"] = missing
        if busy:
            result["busy"] = busy
            result["busy_error"] = _busy_error(busy)
        if refused:
            result["refused"] = self._refusals(refused)
        return result

    def _collect(
        self, hunk_ids: Sequence[str]
    ) -> tuple[dict[ReviewFile, list[Hunk]], list[str], list[str]]:
        """(pending hunks by file, ids not pending, ids refused because their file is unreadable)."""
        chosen: dict[ReviewFile, list[Hunk]] = {}
        missing: list[str] = []
        refused: list[str] = []
        for hunk_id in hunk_ids:
            found = self.find(hunk_id)
            if found is None:
                (refused if hunk_id in self._refused else missing).append(hunk_id)
                continue
            review_file, hunk = found
            chosen.setdefault(review_file, []).append(hunk)
        return chosen, missing, refused

    def _refusals(self, refused: Sequence[str]) -> list[dict[str, str]]:
        return [
            {"hunk_id": hunk_id, "error": self._refused.get(hunk_id, "not_found")}
            for hunk_id in refused
        ]

    def _unavailable(self, missing: Sequence[str], refused: Sequence[str]) -> dict[str, Any]:
        """The failure when none of the hunks asked for can be answered: a refused one's reason
        (`path_escape: ...`) first, else not_found."""
        if refused:
            result = _failure(f"{self._refused[refused[0]]} (proposed change {refused[0]})")
            result["refused"] = self._refusals(refused)
            if missing:
                result["missing"] = list(missing)
            return result
        return _failure(
            f"not_found: no pending change {', '.join(missing)} (already accepted, rejected or dropped)"
        )


def _failure(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


def _busy_error(busy: Sequence[str]) -> str:
    return (
        f"hunk_busy: {', '.join(busy)} {'is' if len(busy) == 1 else 'are'} being applied (accepted, the editor has "
        "not answered yet); nothing rejected there"
    )
