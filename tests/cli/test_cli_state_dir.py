"""The `lich` CLI (a real subprocess) with a planted link in the user state dir (issue #31): a
pre-made `workspaces/<key>/sessions` -> elsewhere used to receive the session log."""

from __future__ import annotations

from pathlib import Path

from lich_core.agent.sessions import SESSIONS_DIR_NAME
from lich_core.userstate import workspace_state_dir
from tests.support.cli_runner import run_lich, run_lich_subprocess


def test_a_linked_sessions_dir_gets_no_log_and_the_run_still_completes(
    tmp_path: Path, fake_provider
) -> None:
    work = tmp_path / "ws"
    work.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    state = workspace_state_dir(work)
    state.mkdir(parents=True, mode=0o700)
    link = state / SESSIONS_DIR_NAME
    link.symlink_to(outside, target_is_directory=True)
    fake_provider.script({"text": "Hello from the model."})

    done = run_lich_subprocess(
        "say hello",
        "--work-dir",
        str(work),
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "m",
        cwd=work,
    )

    assert done.returncode == 0, done.stderr
    assert "Hello from the model." in done.stdout
    assert list(outside.iterdir()) == []  # nothing written through the link
    assert link.is_symlink()  # and the link is the user's to remove, not lich's
    refusals = [line for line in done.stderr.splitlines() if "state_dir_refused:" in line]
    assert len(refusals) == 1, done.stderr
    assert (
        str(link) in refusals[0]
        and "symbolic link" in refusals[0]
        and "session log is not kept" in refusals[0]
    )
    assert "Traceback" not in done.stderr

    # Listing and resuming say why instead of reading sessions from wherever the link points.
    (outside / "planted.jsonl").write_text(
        '{"type": "meta", "title": "planted"}\n', encoding="utf-8"
    )
    listed = run_lich("sessions", "--work-dir", str(work), cwd=work)
    assert listed.returncode == 0 and "planted" not in listed.stdout
    assert "state_dir_refused:" in listed.stderr and "Traceback" not in listed.stderr
    resumed = run_lich(
        "go on",
        "--resume",
        "latest",
        "--work-dir",
        str(work),
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "m",
        cwd=work,
    )
    assert resumed.returncode != 0
    assert "session_unreadable:" in resumed.stderr and "state_dir_refused:" in resumed.stderr
    assert "Traceback" not in resumed.stderr
