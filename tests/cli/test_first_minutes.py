"""The first five minutes of a new user (issue 17), each as they would meet it.

`lich-lsp` typed in a terminal, `lich --help`, the first run's progress lines, a run that could
not reach its provider, a misspelled config key (CLI and server), the replay format as
docs/providers.md shows it, and the README's try-it commands run in a checkout.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from lsprotocol import types

from lich_core.providers import factory
from lich_core.providers.errors import error_from_exception
from lich_lsp.__main__ import WAITING_LINE
from tests.support.cli_runner import run_lich as lich

REPO = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT_S = 60
LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")

sys.path.insert(0, str(REPO / "tests" / "lsp"))  # the pytest-lsp test editor of the LSP tests
from lsp_harness import CLIENTS, start_session, stop_session  # noqa: E402


def repo_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


@pytest.fixture
def no_retry_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Network errors are still retried (the path is unchanged), without the backoff waits."""
    from lich_core.providers import chain

    monkeypatch.setattr(chain, "BACKOFF_BASE_MS", 0)
    monkeypatch.setattr(chain, "BACKOFF_STEP_MS", 0)


@pytest.fixture
def loopback_only_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Name resolution for loopback names only; any other name fails as an unknown host would.

    Nothing in these tests may leave the machine, not even a DNS query for a `.invalid` name
    (a resolver may forward one): httpx resolves through socket.getaddrinfo, replaced here.
    Returns the names that were looked up.
    """
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        name = host.decode() if isinstance(host, bytes) else str(host)
        asked.append(name)
        if name in LOOPBACK_NAMES:
            return real(host, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def closed_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("lich: error:")]


# --- lich-lsp in a terminal ---


def _take_terminal() -> None:
    # Runs in the child: a session of its own whose controlling terminal is the pty on stdin, so
    # the \x03 typed there becomes SIGINT for it, as Ctrl-C in a real terminal does.
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture
def lsp_on_a_terminal() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    master, slave = os.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "lich_lsp"],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=repo_env(),
        preexec_fn=_take_terminal,
    )
    os.close(slave)
    try:
        yield process, master
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=PROCESS_TIMEOUT_S)
        os.close(master)


def _first_stderr_line(process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    ready, _, _ = select.select([process.stderr], [], [], PROCESS_TIMEOUT_S)
    assert ready, "lich-lsp printed nothing on a terminal"
    return process.stderr.readline().decode()


def test_lich_lsp_in_a_terminal_says_what_it_waits_for_and_ctrl_c_exits_0(
    lsp_on_a_terminal,
) -> None:
    process, master = lsp_on_a_terminal
    assert _first_stderr_line(process) == WAITING_LINE + "\n"
    assert "Ctrl-C to quit" in WAITING_LINE and "editor" in WAITING_LINE
    os.write(master, b"\x03")  # Ctrl-C, typed on the terminal
    assert process.wait(timeout=PROCESS_TIMEOUT_S) == 0
    assert process.stderr is not None
    assert "Traceback" not in process.stderr.read().decode()


def test_lich_lsp_in_a_terminal_exits_0_on_sigint_too(lsp_on_a_terminal) -> None:
    process, _ = lsp_on_a_terminal
    assert _first_stderr_line(process) == WAITING_LINE + "\n"
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=PROCESS_TIMEOUT_S) == 0


def test_lich_lsp_started_by_an_editor_prints_nothing() -> None:
    # Pipes, as an editor starts it: no line on stderr; end of input ends it.
    done = subprocess.run(
        [sys.executable, "-m", "lich_lsp"],
        input=b"",
        capture_output=True,
        env=repo_env(),
        timeout=PROCESS_TIMEOUT_S,
    )
    assert WAITING_LINE not in done.stderr.decode()


# --- lich --help, the first run's lines ---


def test_lich_help_lists_the_task_options(tmp_path: Path) -> None:
    shown = lich("--help", cwd=tmp_path)
    assert shown.returncode == 0
    for option in (
        "--max-turns",
        "--resume",
        "--record",
        "--provider-kind",
        "--base-url",
        "--model",
        "--quiet",
        "--work-dir",
    ):
        assert option in shown.stdout, option
    assert shown.stdout.startswith("usage: lich demo")
    # The same options as `lich "x" --help` lists.
    task_help = lich("run", "--help", cwd=tmp_path).stdout
    task_options = [
        o for o in re.findall(r"--[a-z-]+", task_help.split("options:", 1)[1]) if o != "--help"
    ]
    assert task_options == re.findall(
        r"--[a-z-]+", shown.stdout.split("options:", 1)[1].split("Each command", 1)[0]
    )


def test_the_first_line_names_the_provider_and_the_model_behind_it(
    tmp_path: Path, fake_provider
) -> None:
    fake_provider.script({"text": "Hi."})
    url = fake_provider.url + "/v1"
    done = lich(
        "say hi",
        "--work-dir",
        str(tmp_path),
        "--provider-kind",
        "openai_compat",
        "--base-url",
        url,
        "--model",
        "fake-model",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert first == f"lich: provider default (openai_compat fake-model @ {url}), up to 25 turns"


def test_only_a_run_that_got_an_answer_offers_resume(
    tmp_path: Path, fake_provider, no_retry_backoff
) -> None:
    port = closed_port()
    failed = lich(
        "say hello",
        "--work-dir",
        str(tmp_path),
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert failed.returncode == 1
    assert len(error_lines(failed.stderr)) == 1
    assert "--thread" not in failed.stderr and "--resume" not in failed.stderr
    fake_provider.script({"text": "Hello."})
    answered = lich(
        "say hello",
        "--work-dir",
        str(tmp_path),
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert answered.returncode == 0, answered.stderr
    assert re.search(
        r'lich: thread (\S+) \(continue with: lich --thread \1 "\.\.\."\)', answered.stderr
    ), answered.stderr


# --- connection errors say what happened ---


def test_a_dns_failure_with_the_key_set_says_dns_not_server_or_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback_only_dns: list[str], no_retry_backoff
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-sent")
    done = lich("say hello", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    assert "api.openai.com" in loopback_only_dns  # resolution was tried, and failed here
    (error,) = error_lines(done.stderr)
    assert "cannot connect: DNS lookup of api.openai.com failed" in error
    assert "offline" in error
    assert "OPENAI_API_KEY" not in error and "is the server running" not in error


def test_an_unresolvable_invalid_host_is_a_dns_failure(
    tmp_path: Path, loopback_only_dns: list[str], no_retry_backoff
) -> None:
    done = lich(
        "say hello",
        "--work-dir",
        str(tmp_path),
        "--base-url",
        "http://lich-test.invalid/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert "lich-test.invalid" in loopback_only_dns
    (error,) = error_lines(done.stderr)
    assert (
        "DNS lookup of lich-test.invalid failed" in error and "host name in the base URL" in error
    )


def test_a_refused_connection_says_nothing_listens(tmp_path: Path, no_retry_backoff) -> None:
    port = closed_port()
    done = lich(
        "say hello",
        "--work-dir",
        str(tmp_path),
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    (error,) = error_lines(done.stderr)
    assert (
        f"cannot connect: 127.0.0.1:{port} refused the connection (nothing listens there): is the server running?"
        in error
    )
    assert "DNS" not in error


def test_no_key_and_no_provider_says_the_key_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_retry_backoff
) -> None:
    # The fallback to a local Ollama, moved to a loopback port where nothing listens.
    monkeypatch.setitem(factory.DEFAULT_BASE_URLS, "ollama", f"http://127.0.0.1:{closed_port()}")
    done = lich("say hello", "--work-dir", str(tmp_path), cwd=tmp_path)
    (error,) = error_lines(done.stderr)
    assert "refused the connection" in error
    assert (
        "no OPENAI_API_KEY or ANTHROPIC_API_KEY is set and no provider is configured, so lich tried a local Ollama"
        in error
    )


def test_a_404_from_a_base_url_without_v1_names_the_url_and_suggests_v1(
    tmp_path: Path, fake_provider
) -> None:
    # A user config (the conftest's temp XDG_CONFIG_HOME) pointing at a local server by its
    # address alone; it answers 404, as vLLM does for a path it does not serve.
    url = fake_provider.url
    fake_provider.script({"status": 404, "body": '{"detail": "Not Found"}'})
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    provider = {"name": "local", "kind": "openai_compat", "base_url": url, "model": "m"}
    config.write_text(json.dumps({"providers": [provider]}), encoding="utf-8")
    done = lich("say hello", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    (error,) = error_lines(done.stderr)
    assert f"bad_request: HTTP 404 from POST {url}/chat/completions: Not Found" in error
    assert error.endswith(
        f"(the base_url {url} has no /v1: OpenAI-compatible servers usually serve under /v1, "
        f"try {url}/v1)"
    )
    assert [sent["path"] for sent in fake_provider.requests] == ["/chat/completions"]


def test_tls_and_timeout_failures_name_the_step() -> None:
    tls = httpx.ConnectError("handshake failed")
    # As the ssl module raises it for a server with a self-signed certificate.
    tls.__cause__ = ssl.SSLCertVerificationError(
        1,
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)",
    )
    message = str(error_from_exception(tls, provider="p", url="https://models.example.test/v1"))
    assert (
        "the TLS handshake with models.example.test:443 failed ([SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed"
        in message
    )
    assert "is the server running" not in message
    timed_out = str(
        error_from_exception(
            httpx.ConnectTimeout("slow"),
            provider="p",
            url="http://10.1.2.3:8080/v1",
            connect_hint="HINT",
        )
    )
    assert "connection timed out (10.1.2.3:8080): HINT" in timed_out


# --- the replay format, as documented ---


def documented_replay_example() -> str:
    text = (REPO / "docs" / "providers.md").read_text(encoding="utf-8")
    section = text.split("### The replay file format", 1)[1]
    match = re.search(r"```jsonl\n(.*?)```", section, re.DOTALL)
    assert match, "no ```jsonl example in docs/providers.md's replay section"
    return match.group(1)


def test_the_documented_replay_example_plays_its_tool_call(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# sample\n\nA sample project.\n", encoding="utf-8")
    example = documented_replay_example()
    turns = [json.loads(line) for line in example.splitlines() if line.strip()]
    assert any(turn.get("message", {}).get("tool_calls") for turn in turns), (
        "the example has no tool call"
    )
    replay = tmp_path / "explain.jsonl"
    replay.write_text(example, encoding="utf-8")
    config = tmp_path / "replay.json"
    config.write_text(
        json.dumps({"providers": [{"name": "replay", "kind": "replay", "path": str(replay)}]}),
        encoding="utf-8",
    )
    done = lich(
        "explain the README", "--config", str(config), "--work-dir", str(tmp_path), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert '-> read_file {"path": "README.md", "end": 3}' in done.stderr
    assert "ok read_file" in done.stderr
    assert done.stdout.strip().endswith(turns[-1]["message"]["content"])


# --- a misspelled config key ---


def test_a_misspelled_key_warns_with_the_nearest_known_key(tmp_path: Path) -> None:
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(
        json.dumps(
            {"provider": [{"kind": "ollama", "model": "m"}], "Max_Turns": 3, "my_plugin_option": 1}
        ),
        encoding="utf-8",
    )
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"aproval": {"terminal": "ask"}}), encoding="utf-8")
    done = lich("tools", cwd=tmp_path)
    assert done.returncode == 0
    workspace = tmp_path.resolve() / ".lich" / "config.json"
    ignored = (
        "lich has no such setting and ignores it (the keys are listed in docs/configuration.md)"
    )
    assert done.stderr.splitlines() == [
        f"lich: {workspace}: provider: unknown key; did you mean 'providers'?; {ignored}",
        f"lich: {workspace}: Max_Turns: unknown key; did you mean 'max_turns'?; {ignored}",
        # Like no known key: still not silent, since it has no effect either (issue 33).
        f"lich: {workspace}: my_plugin_option: unknown key; {ignored}",
        f"lich: {user}: aproval: unknown key; did you mean 'approval'?; {ignored}",
    ]
    shown = lich("config", cwd=tmp_path).stdout
    assert f"#   {workspace}: provider: unknown key; did you mean 'providers'?" in shown


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_the_server_warns_about_a_misspelled_key(tmp_path: Path, client_name: str) -> None:
    root = tmp_path / "ws"
    (root / ".lich").mkdir(parents=True)
    (root / ".lich" / "config.json").write_text(
        json.dumps({"edit_mod": "review"}), encoding="utf-8"
    )
    client = await start_session(root, client_name, init_options={"max_turn": 3})
    try:
        await client.wait_until(
            lambda: any("'max_turns'" in m.message for m in client.messages),
            what="the warnings",
        )
        # What one read dropped or did not know is one warning, a line per key.
        [warning] = [m for m in client.messages if "unknown key" in m.message]
        ignored = (
            "lich has no such setting and ignores it (the keys are listed in docs/configuration.md)"
        )
        assert sorted(warning.message.splitlines()) == sorted(
            [
                f"lich: the editor's settings: max_turn: unknown key; did you mean 'max_turns'?; {ignored}",
                f"lich: {root.resolve() / '.lich' / 'config.json'}: edit_mod: unknown key; did you mean 'edit_mode'?; {ignored}",
            ]
        )
        assert warning.type == 2  # Warning
        # New settings with one more typo: the new one is shown, the ones shown already are not.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"max_turn": 3, "aproval": {"terminal": "ask"}}
            )
        )
        await client.wait_until(
            lambda: any("aproval:" in m.message for m in client.messages), what="the new warning"
        )
        assert sum("max_turn:" in m.message for m in client.messages) == 1
        assert sum("edit_mod:" in m.message for m in client.messages) == 1
    finally:
        await stop_session(client)
    assert not client.failures, client.failures


# --- the README's try-it commands leave a checkout clean ---


def readme_try_commands() -> list[list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Try it without an editor", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "no ```sh block under 'Try it without an editor' in README.md"
    commands = [
        shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.strip()
    ]
    assert commands and all(argv[0] == "lich" for argv in commands), commands
    return commands


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.timeout(300)
def test_the_readme_try_it_commands_leave_no_untracked_files(tmp_path: Path, fake_provider) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    commands = readme_try_commands()
    assert ["lich", "demo"] in commands
    checkout = tmp_path / "checkout"
    for name in (
        "README.md",
        "pyproject.toml",
        "lich_core/tools/executor.py",
        "lich_core/tools/guard.py",
    ):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, checkout / name)
    git("init", "-q", cwd=checkout)
    git("add", "-A", cwd=checkout)
    git("commit", "-q", "-m", "checkout", cwd=checkout)
    # The one command that needs a provider gets the fake one, through the environment.
    fake_provider.script({"text": "It runs tools."})
    env = repo_env(
        LICH_PROVIDER_KIND="openai_compat",
        LICH_BASE_URL=fake_provider.url + "/v1",
        LICH_MODEL="fake-model",
    )
    for argv in commands:
        done = subprocess.run(
            [sys.executable, "-m", "lich_cli", *argv[1:]],
            cwd=checkout,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{shlex.join(argv)}: {done.stdout}\n{done.stderr}"
    assert len(fake_provider.requests) == 1  # the provider command really ran a task
    assert git("status", "--porcelain", "--untracked-files=all", "--ignored", cwd=checkout) == ""
