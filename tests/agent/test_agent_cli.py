"""The `lich` agent commands against the fake provider server.

Most calls run the CLI in-process (tests/support/cli_runner.py sets up the cwd, environment and
streams a process would have); a one-shot run end to end and Ctrl-C run a real `python -m lich_cli`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from lich_core.config import KEYS, load_config, set_workspace_trust
from tests.support.cli_runner import lich_command, run_lich_subprocess
from tests.support.cli_runner import run_lich as lich


@pytest.fixture
def no_retry_backoff(monkeypatch):
    """Retries of a refused connection happen at once (0.5 s + 1.25 s of backoff otherwise).

    For in-process runs whose assertions do not depend on the wait; the retry path is unchanged.
    """
    from lich_core.providers import chain

    monkeypatch.setattr(chain, "BACKOFF_BASE_MS", 0)
    monkeypatch.setattr(chain, "BACKOFF_STEP_MS", 0)


def server_flags(server) -> list[str]:
    return [
        "--provider-kind",
        "openai_compat",
        "--base-url",
        server.url + "/v1",
        "--model",
        "fake-model",
    ]


def test_one_shot_streams_the_answer_on_stdout(tmp_path, fake_provider):
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo hi"}}]},
        {"text": "All good, it says hi.", "chunks": 5},
    )
    # `python -m lich_cli` end to end, as a shell runs it: streamed text on stdout, exit status 0.
    done = run_lich_subprocess(
        "run",
        "check",
        "the",
        "greeting",
        "--work-dir",
        str(tmp_path),
        *server_flags(fake_provider),
        cwd=tmp_path,
    )
    assert not done.in_process and done.returncode == 0, done.stderr
    assert done.stdout == "All good, it says hi.\n"
    assert "-> terminal" in done.stderr and "ok terminal" in done.stderr
    assert "final after 2 turn(s)" in done.stderr
    assert fake_provider.requests[0]["json"]["model"] == "fake-model"
    user = [m for m in fake_provider.requests[0]["json"]["messages"] if m["role"] == "user"][0]
    assert user["content"] == "check the greeting"
    # The run was saved; `lich sessions` lists it and --resume latest continues it.
    listed = lich("sessions", "--work-dir", str(tmp_path), "--json", cwd=tmp_path)
    sessions = json.loads(listed.stdout)
    assert len(sessions) == 1 and sessions[0]["title"] == "check the greeting"
    fake_provider.script({"text": "Resumed."})
    again = lich(
        "more?",
        "--resume",
        "latest",
        "--work-dir",
        str(tmp_path),
        *server_flags(fake_provider),
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Resumed.\n"
    contents = [m["content"] for m in fake_provider.requests[-1]["json"]["messages"]]
    assert "check the greeting" in contents and contents[-1] == "more?"
    plain = lich("sessions", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert sessions[0]["session_id"] in plain.stdout and "2 run(s)" in plain.stdout


def test_a_retried_stream_says_where_the_answer_restarts(tmp_path, fake_provider):
    fake_provider.script(
        {"text": "partial partial", "chunks": 5, "drop_after_chunks": 3},
        {"text": "The full answer.", "chunks": 2},
    )
    done = lich("say hi", "--work-dir", str(tmp_path), *server_flags(fake_provider), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (
        "failed (network): retrying in 0.5 s (attempt 2 of 3); the answer restarts below"
        in done.stderr
    )
    first, second = done.stdout.split("\n", 1)
    assert first and "partial partial".startswith(first)  # the broken attempt, ended by a newline
    assert second == "The full answer.\n"


def test_budget_exhaustion_exits_1(tmp_path, fake_provider):
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo hi"}}]}
    )
    done = lich(
        "run",
        "loop",
        "--max-turns",
        "1",
        "--work-dir",
        str(tmp_path),
        *server_flags(fake_provider),
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "turn budget exhausted" in done.stderr


def test_unreachable_provider_is_one_line_and_exit_1(tmp_path, no_retry_backoff):
    done = lich(
        "run",
        "hello",
        "--work-dir",
        str(tmp_path),
        "--provider-kind",
        "openai_compat",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("lich: error:")]
    assert len(errors) == 1 and "127.0.0.1:9" in errors[0]


def test_configured_providers_and_record_then_replay(tmp_path, fake_provider, no_retry_backoff):
    (tmp_path / ".lich").mkdir()
    config = {
        "providers": [
            {
                "name": "srv",
                "kind": "openai_compat",
                "base_url": fake_provider.url + "/v1",
                "model": "fake-model",
            }
        ]
    }
    (tmp_path / ".lich" / "config.json").write_text(json.dumps(config))
    # Providers from the workspace file count only once the user trusts it.
    untrusted = lich("run", "hi", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert (
        "ignored settings" in untrusted.stderr
        and fake_provider.url.split("//")[1] in untrusted.stderr
    )
    assert "lich trust" in untrusted.stderr and fake_provider.requests == []
    trusted = lich("trust", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert trusted.returncode == 0
    assert "it changes, from your own settings:\n  providers: send your prompts" in trusted.stdout
    fake_provider.script({"text": "recorded answer"})
    record = tmp_path / "run.jsonl"
    done = lich("run", "hi", "--record", str(record), "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "recorded answer\n"
    replay_config = tmp_path / "replay.json"
    replay_config.write_text(
        json.dumps({"providers": [{"name": "r", "kind": "replay", "path": str(record)}]})
    )
    # --config is read before the workspace file, so its providers win.
    replayed = lich(
        "run", "hi", "--config", str(replay_config), "--work-dir", str(tmp_path), cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "recorded answer\n"
    assert len(fake_provider.requests) == 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_cancels_the_run_cleanly(tmp_path, fake_provider):
    fake_provider.script({"text": "tick " * 100, "chunks": 100, "chunk_delay_s": 0.1})
    proc = subprocess.Popen(
        lich_command("run", "talk", "--work-dir", str(tmp_path), *server_flags(fake_provider)),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        first = proc.stdout.read(5)  # blocks until the stream has started
        assert first == "tick "
        interrupted_at = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert time.perf_counter() - interrupted_at < 5  # the whole stream would take 10 s
    assert proc.returncode == 1
    assert "cancelling" in err and "aborted after 1 turn" in err
    assert "Traceback" not in err


def _wakeup_fd() -> int:
    fd = signal.set_wakeup_fd(-1)  # only readable by setting it
    signal.set_wakeup_fd(fd)
    return fd


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_in_process_run_leaves_sigint_alone(tmp_path, fake_provider):
    """The run's Ctrl-C handler is the run's: after it, SIGINT and the wakeup fd are as they were."""
    handler, wakeup_fd = signal.getsignal(signal.SIGINT), _wakeup_fd()
    fake_provider.script({"text": "done"})
    done = lich(
        "run", "hi", "--work-dir", str(tmp_path), *server_flags(fake_provider), cwd=tmp_path
    )
    assert done.in_process and done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert signal.getsignal(signal.SIGINT) is handler
    assert _wakeup_fd() == wakeup_fd


def test_an_in_process_run_gives_back_a_custom_sigint_handler(tmp_path, fake_provider):
    """An embedding caller's own handler (or SIG_IGN) comes back, not asyncio's default."""

    def custom(signum, frame):  # noqa: ARG001 - a handler's signature
        pass

    previous = signal.signal(signal.SIGINT, custom)
    try:
        fake_provider.script({"text": "done"})
        done = lich(
            "run", "hi", "--work-dir", str(tmp_path), *server_flags(fake_provider), cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert signal.getsignal(signal.SIGINT) is custom
    finally:
        signal.signal(signal.SIGINT, previous)


def test_init_writes_a_loadable_template_and_never_overwrites(tmp_path):
    done = lich("init", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    target = tmp_path / ".lich" / "config.json"
    text = target.read_text()
    assert text.startswith("//") and '// "providers": [{"name": "openai"' in text
    env = {"HOME": str(tmp_path)}
    # No key is set: the template changes nothing (issue #42), every key comes from elsewhere.
    config = load_config(tmp_path, env=env)
    assert not config.problems
    assert [key for key, source in config.sources.items() if source == str(target)] == []
    # Every configuration key is documented in the template, commented out.
    undocumented = [key for key in KEYS if f'"{key}"' not in text]
    assert undocumented == []
    # Every commented-out example key loads too once its // is removed.
    examples = [m for m in (re.match(r'\s*// "(\w+)": ', line) for line in text.splitlines()) if m]
    assert {example.group(1) for example in examples} == set(KEYS) - {"work_dir"}
    for example in examples:
        line = example.string
        target.write_text(text.replace(line, line.replace("// ", "", 1)))
        set_workspace_trust(tmp_path, trust=True, env=env)  # user-side keys count once trusted
        loaded = load_config(tmp_path, env=env)
        assert not loaded.problems, (line, loaded.problems)
        assert loaded.sources[example.group(1)] == str(target), line
    ignored = (tmp_path / ".lich" / ".gitignore").read_text().split()
    assert "sessions/" in ignored and "state/" in ignored
    target.write_text('{"max_turns": 7}')
    again = lich("init", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert again.returncode == 1 and "not overwritten" in again.stderr
    assert target.read_text() == '{"max_turns": 7}'


def test_config_masks_secrets_and_names_sources(tmp_path):
    (tmp_path / ".lich").mkdir()
    config = {
        "max_turns": 9,
        "providers": [
            {
                "name": "p",
                "kind": "openai_compat",
                "base_url": "http://127.0.0.1:1/v1",
                "model": "m",
                "api_key": "sk-super-secret-value",
            }
        ],
    }
    (tmp_path / ".lich" / "config.json").write_text(json.dumps(config))
    untrusted = lich("config", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert (
        "# ignored providers: would send your prompts and workspace content to 127.0.0.1:1 with the API key written in the file"
        in untrusted.stdout
    )
    assert (
        "sk-super-secret-value" not in untrusted.stdout and "run `lich trust`" in untrusted.stdout
    )
    assert lich("trust", "--work-dir", str(tmp_path), cwd=tmp_path).returncode == 0
    done = lich("config", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(trusted)" in done.stdout
    assert "sk-super-secret-value" not in done.stdout
    assert "<redacted" in done.stdout
    max_line = next(line for line in done.stdout.splitlines() if line.startswith("max_turns"))
    assert "9" in max_line and ".lich/config.json" in max_line
    compress_line = next(
        line for line in done.stdout.splitlines() if line.startswith("compress_threshold")
    )
    assert compress_line.endswith("# default")
    as_json = json.loads(lich("config", "--json", "--work-dir", str(tmp_path), cwd=tmp_path).stdout)
    assert as_json["sources"]["max_turns"].endswith("config.json")
    assert "sk-super-secret-value" not in json.dumps(as_json)
