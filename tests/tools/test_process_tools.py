"""process_list, disk_usage and env_get."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lich_core.tools.builtin import disk_usage, env_get, process_list
from lich_core.tools.builtin.process_list import mask_arguments, read_process
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import ToolContext

PATH = os.environ.get("PATH", "/usr/bin:/bin")


def make_executor(
    work_dir: Path, gate: CapabilityGate | None = None, env: dict[str, str] | None = None
) -> ToolExecutor:
    registry = ToolRegistry()
    for tool in (process_list.TOOL, disk_usage.TOOL, env_get.TOOL):
        registry.register(tool)
    return ToolExecutor(registry, gate=gate, work_dir=work_dir, env=env or {"PATH": PATH})


@pytest.fixture
def sleeper() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A running process with a unique, secret-laden command line."""
    tag = f"lichtest-{uuid.uuid4().hex[:12]}"
    proc = subprocess.Popen(
        [
            "bash",
            "-c",
            "sleep 30; true",
            tag,
            "--password",
            "hunter2",
            "API_TOKEN=abcdef",
            "postgres://bob:pw123@db/x",
        ]
    )
    deadline = time.monotonic() + 3
    while (
        tag.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    yield proc, tag
    proc.kill()
    proc.wait()


# --- process_list ---


async def test_process_list_finds_a_spawned_process_by_filter(tmp_path: Path, sleeper) -> None:
    proc, tag = sleeper
    result = await make_executor(tmp_path).execute("process_list", {"filter": tag.upper()})
    assert result.ok, result.error
    lines = result.output.splitlines()
    assert lines[0].split() == ["PID", "COMMAND"]
    assert re.search(rf"^\s*{proc.pid}\s+bash -c ", result.output, re.MULTILINE)
    assert result.details["pids"] == [proc.pid]


async def test_process_list_masks_secret_arguments(tmp_path: Path, sleeper) -> None:
    _, tag = sleeper
    result = await process_list.TOOL.execute({"filter": tag}, ToolContext(work_dir=tmp_path))
    for secret in ("hunter2", "abcdef", "pw123"):
        assert secret not in result.output
    assert "--password <redacted: 7 chars>" in result.output
    assert "API_TOKEN=<redacted: 6 chars>" in result.output
    assert "postgres://bob:<redacted>@db/x" in result.output


async def test_process_list_masks_password_flags_and_pat_names(tmp_path: Path) -> None:
    tag = f"lichtest-{uuid.uuid4().hex[:12]}"
    # One process that never forks (bash would fork `sleep`, and the child matches the tag until
    # it execs): Python ignores the arguments after its -c program.
    argv = [
        sys.executable,
        "-c",
        "import time; time.sleep(30)",
        tag,
        "mysql",
        "-uroot",
        "-pS3cretPw",
        "--db-pass",
        "pw2ab",
        "GITHUB_PAT=ghxyz",
    ]
    proc = subprocess.Popen(argv)
    try:
        deadline = time.monotonic() + 10
        while (
            b"GITHUB_PAT" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        result = await process_list.TOOL.execute({"filter": tag}, ToolContext(work_dir=tmp_path))
    finally:
        proc.kill()
        proc.wait()
    assert result.ok and result.details["pids"] == [proc.pid]
    for secret in ("S3cretPw", "pw2ab", "ghxyz"):
        assert secret not in result.output
    assert "mysql -uroot -p<redacted: 8 chars>" in result.output
    assert "--db-pass <redacted: 5 chars>" in result.output
    assert "GITHUB_PAT=<redacted: 5 chars>" in result.output


async def test_process_list_limits_results_and_counts_the_rest(tmp_path: Path) -> None:
    result = await process_list.TOOL.execute({"max_results": 1}, ToolContext(work_dir=tmp_path))
    lines = result.output.splitlines()
    assert len(lines) == 3  # header, one process, the overflow note
    assert re.fullmatch(
        r"\[\d+ more processes not shown; raise max_results or narrow filter\]", lines[2]
    )


async def test_process_list_without_match(tmp_path: Path) -> None:
    result = await process_list.TOOL.execute(
        {"filter": "no-such-process-" + uuid.uuid4().hex}, ToolContext(work_dir=tmp_path)
    )
    assert result.ok
    assert result.output.startswith("no processes matching")


async def test_process_list_marks_its_own_process(tmp_path: Path) -> None:
    # This process's own name ("python3.11", ...): under pytest-xdist its command line has no "pytest".
    own_name = Path("/proc/self/comm").read_text(encoding="utf-8").strip()
    args = {"filter": own_name, "max_results": process_list.MAX_PROCESSES}
    result = await process_list.TOOL.execute(args, ToolContext(work_dir=tmp_path))
    assert re.search(rf"^\s*{os.getpid()}\s+.*\(lich\)$", result.output, re.MULTILINE)


def test_vanished_process_reads_as_empty() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert read_process(proc.pid) == ("", "")


def test_mask_arguments() -> None:
    assert mask_arguments(["tool", "--token", "abc", "--verbose", "x"]) == [
        "tool",
        "--token",
        "<redacted: 3 chars>",
        "--verbose",
        "x",
    ]
    assert mask_arguments(["--client-secret=zz", "plain=1"]) == [
        "--client-secret=<redacted: 2 chars>",
        "plain=1",
    ]
    assert mask_arguments(["https://u:p@h/x"]) == ["https://u:<redacted>@h/x"]


async def test_process_list_is_gated_by_process_exec(tmp_path: Path) -> None:
    denied = await make_executor(tmp_path, gate=CapabilityGate(["file/read"])).execute(
        "process_list", {"max_results": 1}
    )
    assert denied.error == "capability_denied: process/exec"
    allowed = await make_executor(tmp_path, gate=CapabilityGate(["process/exec"])).execute(
        "process_list", {"max_results": 1}
    )
    assert allowed.ok


# --- disk_usage ---


def make_tree(root: Path) -> None:
    (root / "big").mkdir()
    (root / "big" / "blob").write_bytes(b"x" * 300_000)
    (root / "big" / "nested").mkdir()
    (root / "big" / "nested" / "more").write_bytes(b"y" * 20_000)
    (root / "small").mkdir()
    (root / "small" / "s").write_bytes(b"z" * 10_000)
    (root / "empty").mkdir()
    (root / "file.bin").write_bytes(b"w" * 50_000)


def rendered_rows(output: str) -> list[tuple[int, str]]:
    rows = []
    for line in output.splitlines()[1:]:
        parts = line.split()
        # "<human> <unit> <bytes> <name>" or "0 B <bytes> <name>"
        if len(parts) >= 4 and parts[2].isdigit():
            rows.append((int(parts[2]), parts[3]))
    return rows


async def test_disk_usage_sorts_largest_first_with_total(tmp_path: Path) -> None:
    make_tree(tmp_path)
    result = await make_executor(tmp_path).execute("disk_usage", {})
    assert result.ok, result.error
    rows = rendered_rows(result.output)
    names = [name for _, name in rows]
    assert names == ["big/", "file.bin", "small/", "empty/", "TOTAL"]
    sizes = [size for size, _ in rows]
    assert sizes[:-1] == sorted(sizes[:-1], reverse=True)
    assert sizes[-1] == sum(sizes[:-1]) == result.details["total_bytes"]
    assert rows[0][0] >= 320_000  # du counted the nested file too
    assert rows[1][0] == 50_000


async def test_disk_usage_max_entries_keeps_the_full_total(tmp_path: Path) -> None:
    make_tree(tmp_path)
    result = await disk_usage.TOOL.execute(
        {"max_entries": 2}, ToolContext(work_dir=tmp_path, env={"PATH": PATH})
    )
    rows = rendered_rows(result.output)
    assert [name for _, name in rows] == ["big/", "file.bin", "TOTAL"]
    assert "[2 smaller entries not shown" in result.output
    assert rows[-1][0] == result.details["total_bytes"] > rows[0][0] + rows[1][0]


async def test_disk_usage_of_a_subdirectory_and_a_file(tmp_path: Path) -> None:
    make_tree(tmp_path)
    ctx = ToolContext(work_dir=tmp_path, env={"PATH": PATH})
    result = await disk_usage.TOOL.execute({"path": "big"}, ctx)
    assert result.output.splitlines()[0].startswith("disk usage of big ")
    assert [name for _, name in rendered_rows(result.output)] == ["blob", "nested/", "TOTAL"]
    result = await disk_usage.TOOL.execute({"path": "file.bin"}, ctx)
    assert rendered_rows(result.output) == [(50_000, "file.bin"), (50_000, "TOTAL")]


@pytest.mark.parametrize("target", ["..", "/", "../outside", "link_out"])
async def test_disk_usage_is_confined(tmp_path: Path, target: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside").mkdir()
    (work / "link_out").symlink_to(tmp_path / "outside")
    result = await disk_usage.TOOL.execute(
        {"path": target}, ToolContext(work_dir=work, env={"PATH": PATH})
    )
    assert result.error.startswith("path_escape:")


async def test_disk_usage_errors(tmp_path: Path) -> None:
    result = await disk_usage.TOOL.execute(
        {"path": "missing"}, ToolContext(work_dir=tmp_path, env={"PATH": PATH})
    )
    assert result.error == "not_found: missing"
    no_du = ToolContext(work_dir=tmp_path, env={"PATH": str(tmp_path / "no-bin")})
    result = await disk_usage.TOOL.execute({}, no_du)
    assert result.error.startswith("du_unavailable:")


async def test_disk_usage_slow_du_is_killed_and_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_du = bin_dir / "du"
    # A du that hangs (a huge tree, a dead network mount) and records its pid first.
    fake_du.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'du.pid'}\nexec sleep 30\n")
    fake_du.chmod(0o755)
    work = tmp_path / "work"
    (work / "big").mkdir(parents=True)
    (work / "small.txt").write_text("abc")
    monkeypatch.setattr(disk_usage, "DU_TIMEOUT_MS", 1_000)
    ctx = ToolContext(work_dir=work, env={"PATH": f"{bin_dir}:{PATH}"})
    result = await disk_usage.TOOL.execute({}, ctx)
    assert result.ok, result.error
    assert "big/  (du timed out after 1 s)" in result.output
    assert "small.txt" in result.output
    pid = int((tmp_path / "du.pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the timed-out du survived"


async def test_process_list_without_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process_list, "PROC_ROOT", tmp_path / "no-proc")
    result = await process_list.TOOL.execute({}, ToolContext(work_dir=tmp_path))
    assert result.error.startswith("proc_unavailable:")


async def test_disk_usage_needs_file_read(tmp_path: Path) -> None:
    result = await make_executor(tmp_path, gate=CapabilityGate(["process/exec"])).execute(
        "disk_usage", {}
    )
    assert result.error == "capability_denied: file/read"
    result = await make_executor(tmp_path, gate=CapabilityGate(["file/read"])).execute(
        "disk_usage", {}
    )
    assert result.ok


# --- env_get ---


ENV = {
    "PATH": PATH,
    "MY_VAR": "hello",
    "MY_OTHER": "world",
    "GITHUB_TOKEN": "ghp_abc",
    "db_password": "secretpw",
    "SSH_AUTH_SOCK": "/tmp/agent",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "DATABASE_URL": "postgres://bob:pw123@db/app",
    "OPENAI_API_KEY": "sk-openai",
    "ANTHROPIC_API_KEY": "sk-ant",
}


def env_ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(work_dir=tmp_path, env=dict(ENV))


async def test_env_values_hidden_by_default(tmp_path: Path) -> None:
    result = await env_get.TOOL.execute({"keys": ["MY_VAR"]}, env_ctx(tmp_path))
    assert result.ok
    assert "MY_VAR=<hidden: 5 chars>" in result.output
    assert "hello" not in result.output


async def test_env_reveal_shows_values_but_never_secrets(tmp_path: Path) -> None:
    result = await env_get.TOOL.execute({"reveal": True}, env_ctx(tmp_path))
    assert "MY_VAR=hello" in result.output
    assert "GITHUB_TOKEN=<redacted: 7 chars>" in result.output
    assert "db_password=<redacted: 8 chars>" in result.output
    assert "SSH_AUTH_SOCK=<redacted: 10 chars>" in result.output
    assert "AWS_SECRET_ACCESS_KEY=<redacted: 10 chars>" in result.output
    assert "DATABASE_URL=postgres://bob:<redacted>@db/app" in result.output
    for secret in (
        "ghp_abc",
        "secretpw",
        "/tmp/agent",
        "aws-secret",
        "pw123",
        "sk-openai",
        "sk-ant",
    ):
        assert secret not in result.output


async def test_env_provider_keys_are_absent(tmp_path: Path) -> None:
    result = await env_get.TOOL.execute({}, env_ctx(tmp_path))
    assert "OPENAI_API_KEY" not in result.output
    assert "ANTHROPIC_API_KEY" not in result.output
    result = await env_get.TOOL.execute(
        {"keys": ["OPENAI_API_KEY"], "reveal": True}, env_ctx(tmp_path)
    )
    assert result.output.splitlines()[0] == "OPENAI_API_KEY (not set)"


async def test_env_prefix_keys_and_missing(tmp_path: Path) -> None:
    result = await env_get.TOOL.execute({"prefix": "MY_", "reveal": True}, env_ctx(tmp_path))
    assert result.output.splitlines() == ["MY_OTHER=world", "MY_VAR=hello"]
    result = await env_get.TOOL.execute(
        {"keys": "MY_VAR, NOPE", "reveal": "true"}, env_ctx(tmp_path)
    )
    assert result.output.splitlines() == ["MY_VAR=hello", "NOPE (not set)"]
    assert result.details["missing"] == ["NOPE"]
    result = await env_get.TOOL.execute({"prefix": "ZZZ_"}, env_ctx(tmp_path))
    assert result.output == "no environment variables starting with 'ZZZ_'"


async def test_env_falls_back_to_process_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LICH_ENV_GET_PROBE", "probe-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    ctx = ToolContext(work_dir=tmp_path)
    result = await env_get.TOOL.execute(
        {"keys": ["LICH_ENV_GET_PROBE", "OPENAI_API_KEY"], "reveal": True}, ctx
    )
    assert result.output.splitlines()[:2] == [
        "LICH_ENV_GET_PROBE=probe-value",
        "OPENAI_API_KEY (not set)",
    ]


async def test_env_get_is_gated_by_process_exec(tmp_path: Path) -> None:
    result = await make_executor(
        tmp_path, gate=CapabilityGate(["file/read"]), env=dict(ENV)
    ).execute("env_get", {"keys": ["MY_VAR"], "reveal": True})
    assert result.error == "capability_denied: process/exec"
    result = await make_executor(tmp_path, env=dict(ENV)).execute(
        "env_get", {"keys": ["MY_VAR"], "reveal": True}
    )
    assert result.output.startswith("MY_VAR=hello")


async def test_env_reveal_masks_pat_passwd_webhook_but_not_the_working_directory(
    tmp_path: Path,
) -> None:
    env = {
        "PATH": PATH,
        "GITHUB_PAT": "github_pat_value",
        "MY_PASSWD": "passwd-value",
        "SLACK_WEBHOOK": "https://hooks.slack.com/services/T0/B0/abc",
        "DB_PASS": "dbpass-value",
        "MYSQL_PWD": "mysqlpwd-value",
        "NOTES": "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "PWD": "/work/dir",
        "OLDPWD": "/old/dir",
    }
    ctx = ToolContext(work_dir=tmp_path, env=env)
    result = await env_get.TOOL.execute({"reveal": True}, ctx)
    for secret in (
        "github_pat_value",
        "passwd-value",
        "hooks.slack.com",
        "dbpass-value",
        "mysqlpwd-value",
        "ghp_abc",
    ):
        assert secret not in result.output
    assert "GITHUB_PAT=<redacted: 16 chars>" in result.output
    assert "MY_PASSWD=<redacted: 12 chars>" in result.output
    assert "SLACK_WEBHOOK=<redacted: 42 chars>" in result.output
    assert "NOTES=<redacted: 34 chars>" in result.output  # the value is a GitHub token
    assert "PWD=/work/dir" in result.output.splitlines()
    assert "OLDPWD=/old/dir" in result.output.splitlines()
    # Asking for a secret by name with reveal does not reveal it either.
    named = await env_get.TOOL.execute(
        {"keys": ["GITHUB_PAT", "SLACK_WEBHOOK"], "reveal": True}, ctx
    )
    assert named.output.splitlines() == [
        "GITHUB_PAT=<redacted: 16 chars>",
        "SLACK_WEBHOOK=<redacted: 42 chars>",
    ]


async def test_env_configured_key_variable_is_absent(tmp_path: Path) -> None:
    settings = {
        "providers": [{"kind": "openai_compat", "model": "m", "api_key_env": "OPENROUTER_KEY"}]
    }
    ctx = ToolContext(
        work_dir=tmp_path, env={"PATH": PATH, "OPENROUTER_KEY": "or-value"}, settings=settings
    )
    result = await env_get.TOOL.execute({"keys": ["OPENROUTER_KEY"], "reveal": True}, ctx)
    assert result.output.splitlines()[0] == "OPENROUTER_KEY (not set)"
    listing = await env_get.TOOL.execute({}, ctx)
    assert "OPENROUTER_KEY" not in listing.output
