"""Issue #42, the CLI side: configuration fails closed, per value.

- A user config that cannot be parsed stops every command that loads the config, with exit
  status 2 and one line naming the file and the line (lich cannot know the user's settings).
- One bad value is named once on stderr and dropped alone; the command runs with the rest.
- `lich config` shows every key's effective value and source, and every dropped value and why.
- `lich init` writes a template that sets nothing, so it never narrows the user's settings.
- `lich trust` lists exactly what the workspace file changes from the user's own settings.

The conftest gives every test its own HOME, XDG_CONFIG_HOME and XDG_STATE_HOME.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_runner import run_lich as lich
from tests.support.cli_runner import run_lich_subprocess

CONFIG_ERROR_EXIT = 2
BROKEN_USER_TEXT = '{"max_turns": 50,\n  oops}\n'
BROKEN_DETAIL = "invalid JSON at line 2 column 3: Expecting property name enclosed in double quotes"
IGNORED_KEY = (
    "lich has no such setting and ignores it (the keys are listed in docs/configuration.md)"
)
USER_PROVIDER = {
    "name": "mine",
    "kind": "openai_compat",
    "base_url": "https://llm.user.example/v1",
    "model": "m",
    "api_key": "sk-user-secret-value",
}


def user_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"


def write_user(content: dict[str, Any] | str) -> Path:
    path = user_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def write_workspace(root: Path, content: dict[str, Any]) -> Path:
    path = root / ".lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")
    return path.resolve()


def shown_config(root: Path) -> dict[str, Any]:
    done = lich("config", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# --- a user config that cannot be parsed: exit 2, naming the file and the line ---

CONFIG_COMMANDS = [
    pytest.param(["config"], id="config"),
    pytest.param(["config", "--json"], id="config-json"),
    pytest.param(["tools"], id="tools"),
    pytest.param(["tool", "list_dir", "{}"], id="tool"),
    pytest.param(["trust"], id="trust"),
    pytest.param(["trust", "--revoke"], id="trust-revoke"),
    pytest.param(["threads"], id="threads"),
    pytest.param(["sessions"], id="sessions"),
    pytest.param(["mcp", "list"], id="mcp-list"),
    pytest.param(["do x"], id="task"),
    pytest.param(["run", "do", "x"], id="run"),
    pytest.param(["--thread", "latest", "go on"], id="thread"),
]


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
def test_a_user_config_that_does_not_parse_stops_the_command_naming_file_and_line(
    tmp_path: Path, command: list[str]
) -> None:
    write_workspace(tmp_path, {"system_prompt": "be terse"})
    broken = write_user(BROKEN_USER_TEXT)
    done = lich(*command, cwd=tmp_path)
    assert done.returncode == CONFIG_ERROR_EXIT, (done.stdout, done.stderr)
    assert done.stderr == f"lich: config error: {broken}: {BROKEN_DETAIL}\n"
    assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lich"]  # nothing ran here
    assert broken.read_text(encoding="utf-8") == BROKEN_USER_TEXT
    # Nothing was trusted (nor revoked) on the way.
    write_user({"max_turns": 50})
    assert shown_config(tmp_path)["trust"]["state"] == "untrusted"


def test_a_broken_user_config_is_exit_status_2_from_the_real_process(tmp_path: Path) -> None:
    broken = write_user(BROKEN_USER_TEXT)
    done = run_lich_subprocess("tools", cwd=tmp_path)
    assert done.returncode == CONFIG_ERROR_EXIT
    assert done.stderr == f"lich: config error: {broken}: {BROKEN_DETAIL}\n"
    assert done.stdout == ""


def test_a_user_config_that_is_not_an_object_is_a_config_error(tmp_path: Path) -> None:
    broken = write_user("[1, 2]")
    done = lich("tools", cwd=tmp_path)
    assert done.returncode == CONFIG_ERROR_EXIT
    assert done.stderr == f"lich: config error: {broken}: the top level must be an object\n"


# --- one bad value: named once, dropped alone, the command runs with the rest ---

BAD_MAX_TURNS = "max_turns: expected an integer from 1 to 1000, got str 'many'"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["tools"], id="tools"),
        pytest.param(["tool", "list_dir", "{}"], id="tool"),
        pytest.param(["threads"], id="threads"),
        pytest.param(["sessions"], id="sessions"),
        pytest.param(["mcp", "list"], id="mcp-list"),
        pytest.param(["trust"], id="trust"),
    ],
)
def test_a_bad_value_in_the_user_config_is_named_once_and_the_command_runs(
    tmp_path: Path, command: list[str]
) -> None:
    user = write_user({"max_turns": "many", "tools_enabled": ["list_dir", "read_file"]})
    done = lich(*command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    problem = f"lich: {user}: {BAD_MAX_TURNS}; the value is dropped; the rest of {user} applies"
    assert done.stderr.splitlines() == [problem]
    # The rest of the file applies; the bad key takes the next source's value (the default).
    config = shown_config(tmp_path)
    assert config["config"]["tools_enabled"] == ["list_dir", "read_file"]
    assert config["sources"]["tools_enabled"] == str(user)
    assert (config["config"]["max_turns"], config["sources"]["max_turns"]) == (25, "default")


def test_a_task_runs_with_the_rest_of_a_config_with_bad_values(
    tmp_path: Path, fake_provider
) -> None:
    provider = {
        "name": "srv",
        "kind": "openai_compat",
        "base_url": fake_provider.url + "/v1",
        "model": "fake-model",
    }
    user = write_user({"max_turns": "many", "providers": [provider, {"name": "bad", "kind": "x"}]})
    fake_provider.script({"text": "done"})
    done = lich("say hi", "--max-turns", "0", "--work-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    problems = [
        line for line in done.stderr.splitlines() if ": max_turns: " in line or "[1]" in line
    ]
    assert problems == [
        "lich: command-line flags: max_turns: 0 is out of range (allowed: 1 to 1000); "
        "the value is dropped; the rest of command-line flags applies",
        f"lich: {user}: {BAD_MAX_TURNS}; the value is dropped; the rest of {user} applies",
        f"lich: {user}: providers[1].kind: expected one of openai_compat, anthropic, ollama, "
        "replay, got 'x'; the entry is dropped; the others apply",
    ]
    assert "up to 25 turns" in done.stderr  # neither bad value applied; nothing else fell back
    assert len(fake_provider.requests) == 1


# --- lich config: effective values and sources, and what was dropped ---


def test_lich_config_shows_each_value_its_source_and_each_dropped_value(tmp_path: Path) -> None:
    user = write_user(
        {
            "max_turns": 50,
            "providers": [USER_PROVIDER, {"name": "bad", "kind": "nope", "api_key": "sk-x"}],
            "approval": {"terminal": "maybe"},
        }
    )
    workspace = write_workspace(tmp_path, {"edit_mode": "x", "modle": 1, "max_turns": 5})
    done = lich("config", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the problems are this command's output
    lines = done.stdout.splitlines()
    assert "sk-user-secret-value" not in done.stdout
    (providers,) = [line for line in lines if line.startswith("providers ")]
    assert '"api_key": "<redacted: 20 chars>"' in providers and providers.endswith(f"# {user}")
    (max_turns,) = [line for line in lines if line.startswith("max_turns ")]
    assert max_turns.split() == ["max_turns", "=", "5", "#", str(workspace)]
    (approval,) = [line for line in lines if line.startswith("approval ")]
    assert approval.split("  # ") == ['approval                = {"terminal": "deny"}', str(user)]
    at = lines.index("# dropped (4): values not applied as written, and why")
    assert lines[at + 1 : at + 5] == [
        f"#   {workspace}: edit_mode: expected one of apply, review, got 'x'; "
        f"the value is dropped; the rest of {workspace} applies",
        f"#   {workspace}: modle: unknown key; {IGNORED_KEY}",
        f"#   {user}: providers[1].kind: expected one of openai_compat, anthropic, ollama, "
        "replay, got 'nope'; the entry is dropped; the others apply",
        f"#   {user}: approval.terminal: expected allow, ask or deny, got 'maybe'; "
        "it restricts the agent, so lich uses 'deny' for it",
    ]
    shown = shown_config(tmp_path)
    assert shown["broken_files"] == []
    assert [(p["source"], p["key"]) for p in shown["problems"]] == [
        (str(workspace), "edit_mode"),
        (str(workspace), "modle"),
        (str(user), "providers[1].kind"),
        (str(user), "approval.terminal"),
    ]
    edit_mode = shown["problems"][0]
    assert edit_mode["detail"] == "expected one of apply, review, got 'x'"
    assert edit_mode["outcome"] == f"the value is dropped; the rest of {workspace} applies"
    assert edit_mode["message"] == "lich: " + lines[at + 1].removeprefix("#   ")
    assert shown["config"]["providers"][0]["api_key"] == "<redacted: 20 chars>"
    assert shown["sources"]["providers"] == str(user)
    assert "sk-user-secret-value" not in json.dumps(shown)


def test_lich_config_without_problems_has_no_dropped_section(tmp_path: Path) -> None:
    write_user({"max_turns": 50})
    done = lich("config", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    assert "# dropped" not in done.stdout
    assert shown_config(tmp_path)["problems"] == []


# --- lich init: a template that sets nothing ---

USER_SETTINGS = {
    "providers": [USER_PROVIDER],
    "max_turns": 50,
    "tools_enabled": ["read_file", "terminal"],
    "terminal_timeout_ms": 120000,
    "edit_mode": "review",
    "disk_write_policy": "editor",
    "compress_threshold": 0.5,
    "context_budget_tokens": 200000,
}


def test_init_then_trust_keeps_every_user_setting_and_changes_nothing(tmp_path: Path) -> None:
    user = write_user(USER_SETTINGS)
    before = shown_config(tmp_path)
    assert lich("init", cwd=tmp_path).returncode == 0
    workspace = (tmp_path / ".lich" / "config.json").resolve()
    for stage in ("untrusted", "trusted"):
        shown = shown_config(tmp_path)
        assert shown["trust"]["state"] == stage
        assert shown["config"] == before["config"], stage
        assert shown["sources"] == before["sources"], stage
        assert str(workspace) not in shown["sources"].values()
        assert shown["sources"]["providers"] == str(user)
        assert shown["config"]["providers"][0]["base_url"] == USER_PROVIDER["base_url"]
        assert shown["problems"] == []
        if stage == "untrusted":
            trusted = lich("trust", cwd=tmp_path)
            assert trusted.returncode == 0, trusted.stderr
            assert trusted.stdout == (
                f"lich: trusted {workspace}; it changes nothing: every setting is your own\n"
            )
    answer = json.loads(lich("trust", "--json", cwd=tmp_path).stdout)
    assert answer["state"] == "trusted" and answer["keys"] == [] and answer["changes"] == []
    assert answer["message"].startswith(f"lich: already trusted {workspace}; it changes nothing")


# --- lich trust: exactly what the workspace file changes ---


def test_trust_names_the_destination_of_the_workspace_files_provider(tmp_path: Path) -> None:
    write_user({"providers": [USER_PROVIDER]})
    workspace = write_workspace(
        tmp_path,
        {
            "providers": [
                {
                    "name": "theirs",
                    "kind": "openai_compat",
                    "base_url": "https://llm.repo.example/v1",
                    "model": "x",
                    "api_key_env": "REPO_KEY",
                }
            ]
        },
    )
    effect = "send your prompts and workspace content to llm.repo.example with the key in $REPO_KEY"
    assert shown_config(tmp_path)["trust"]["keys"] == [{"key": "providers", "what": effect}]
    done = lich("trust", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["state"] == "trusted"
    assert answer["keys"] == [{"key": "providers", "what": effect}]
    assert answer["changes"] == [{"key": "providers", "what": effect, "before_trust": False}]
    assert answer["message"] == (
        f"lich: trusted {workspace}; it changes, from your own settings:\n  providers: {effect}"
    )
    shown = shown_config(tmp_path)
    assert shown["sources"]["providers"] == str(workspace)
    assert shown["config"]["providers"][0]["name"] == "theirs"


def test_trust_says_what_a_narrowing_changes_from_the_users_value(tmp_path: Path) -> None:
    write_user({"max_turns": 50})
    workspace = write_workspace(tmp_path, {"max_turns": 5})
    done = lich("trust", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"lich: trusted {workspace}; it changes, from your own settings:\n"
        "  max_turns: 50 → 5 (in effect before trust too: an untrusted file may narrow it)\n"
    )
    answer = json.loads(lich("trust", "--json", cwd=tmp_path).stdout)
    assert answer["changes"] == [{"key": "max_turns", "what": "50 → 5", "before_trust": False}]
    assert answer["message"].startswith(f"lich: already trusted {workspace}; it changes")
    revoked = lich("trust", "--revoke", cwd=tmp_path)
    assert revoked.returncode == 0
    assert revoked.stdout.endswith(
        "; untrusted, it still changes, from your own settings:\n  max_turns: 50 → 5\n"
    )


def test_trust_lists_a_raised_value_it_now_allows_and_a_narrowing_together(
    tmp_path: Path,
) -> None:
    write_user({"max_turns": 50, "terminal_timeout_ms": 10000})
    workspace = write_workspace(
        tmp_path, {"max_turns": 5, "terminal_timeout_ms": 20000, "system_prompt": "be terse"}
    )
    done = lich("trust", "--json", cwd=tmp_path)
    answer = json.loads(done.stdout)
    assert answer["changes"] == [
        {"key": "terminal_timeout_ms", "what": "10000 → 20000", "before_trust": False},
        {"key": "max_turns", "what": "50 → 5", "before_trust": True},
        {
            "key": "system_prompt",
            "what": "replace the agent's system prompt",
            "before_trust": False,
        },
    ]
    # `keys`: what trusting applied that `lich config` listed as ignored until then.
    assert [item["key"] for item in answer["keys"]] == ["terminal_timeout_ms", "system_prompt"]
    assert answer["message"].splitlines()[0] == (
        f"lich: trusted {workspace}; it changes, from your own settings:"
    )


def test_trust_names_a_bad_value_of_the_file_it_trusts(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path, {"max_turns": 5, "edit_mode": "x"})
    done = lich("trust", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        f"lich: {workspace}: edit_mode: expected one of apply, review, got 'x'; "
        f"the value is dropped; the rest of {workspace} applies"
    ]
    assert "max_turns: 25 → 5" in done.stdout
