"""Config loading: precedence, validation naming key and source, comments, secret masking."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from lich_core.config import (
    KEYS,
    load_config,
    mask_secrets,
    read_config_file,
    set_workspace_trust,
    user_config_path,
)
from lich_core.errors import ConfigError


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def xdg(tmp_path: Path) -> Path:
    folder = tmp_path / "xdg"
    folder.mkdir()
    return folder


def write_workspace_config(work: Path, data: Any) -> Path:
    path = work / ".lich" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def write_user_config(xdg: Path, data: Any) -> Path:
    path = xdg / "lich" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_defaults_for_every_key(work: Path, xdg: Path) -> None:
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    for key, spec in KEYS.items():
        if key != "work_dir":
            assert config[key] == spec.default, key
            assert config.sources[key] == "default"
    assert config["tools_enabled"] == "all"
    assert config["capabilities"] is None
    assert config["terminal_timeout_ms"] == 60_000
    assert config["work_dir"] == str(work.resolve())


def test_precedence_workspace_over_user_over_env_over_default(work: Path, xdg: Path) -> None:
    env = {
        "XDG_CONFIG_HOME": str(xdg),
        "LICH_TERMINAL_TIMEOUT_MS": "1000",
        "LICH_MAX_TURNS": "7",
        "LICH_EDIT_MODE": "review",
        "LICH_TOOLS_ENABLED": "read_file, list_dir",
    }
    user_file = write_user_config(xdg, {"terminal_timeout_ms": 2000, "max_turns": 8})
    workspace_file = write_workspace_config(work, {"terminal_timeout_ms": 1500})
    config = load_config(work, env=env)
    assert (
        config["terminal_timeout_ms"] == 1500
    )  # workspace file wins (it narrows, so no trust needed)
    assert config.sources["terminal_timeout_ms"] == str(workspace_file)
    assert config["max_turns"] == 8  # user file beats env
    assert config.sources["max_turns"] == str(user_file)
    assert config["edit_mode"] == "review"  # env beats default
    assert config.sources["edit_mode"] == "environment"
    assert config["tools_enabled"] == ["read_file", "list_dir"]  # comma list from env
    assert config["compress_threshold"] == 0.8 and config.sources["compress_threshold"] == "default"


def test_overrides_and_explicit_file_go_on_top(work: Path, xdg: Path, tmp_path: Path) -> None:
    workspace_file = write_workspace_config(
        work, {"terminal_timeout_ms": 3000, "max_turns": 3, "edit_mode": "review"}
    )
    explicit = tmp_path / "explicit.json"
    explicit.write_text(json.dumps({"max_turns": 4, "terminal_timeout_ms": 4000}))
    env = {"XDG_CONFIG_HOME": str(xdg)}

    def load() -> Any:
        return load_config(
            work, env=env, config_file=explicit, overrides={"terminal_timeout_ms": 5000}
        )

    # Untrusted, the workspace file still narrows what the trusted layers say.
    untrusted = load()
    assert untrusted["terminal_timeout_ms"] == 3000 and untrusted.sources[
        "terminal_timeout_ms"
    ] == str(workspace_file)
    assert untrusted["max_turns"] == 3
    # Trusted, it is one layer among the others again, below overrides and --config.
    set_workspace_trust(work, trust=True, env=env)
    config = load()
    assert (
        config["terminal_timeout_ms"] == 5000
        and config.sources["terminal_timeout_ms"] == "overrides"
    )
    assert config["max_turns"] == 4 and config.sources["max_turns"] == str(explicit)
    assert config["edit_mode"] == "review"


def test_none_override_does_not_mask_lower_layers(work: Path, xdg: Path) -> None:
    write_workspace_config(work, {"max_turns": 3})
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)}, overrides={"max_turns": None})
    assert config["max_turns"] == 3


def test_user_config_path_follows_xdg_then_home(tmp_path: Path) -> None:
    assert user_config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "lich" / "config.json"
    assert (
        user_config_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "lich" / "config.json"
    )


def test_work_dir_may_only_narrow_to_a_folder_inside_the_root(
    work: Path, xdg: Path, tmp_path: Path
) -> None:
    env = {"XDG_CONFIG_HOME": str(xdg)}
    (work / "src").mkdir()
    inside = load_config(work, env=env, overrides={"work_dir": str(work / "src")})
    assert inside["work_dir"] == str((work / "src").resolve())
    # A relative value resolves against the root, not the process's current directory.
    relative = load_config(work, env={**env, "LICH_WORK_DIR": "src"})
    assert relative["work_dir"] == str((work / "src").resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, work / "link")
    for value in (str(elsewhere), "..", "/", "link"):
        config = load_config(work, env=env, overrides={"work_dir": value})
        assert config["work_dir"] == str(work.resolve())  # never wider than the root
        [problem] = config.problems
        assert problem.path == "work_dir" and "is outside the workspace root" in problem.detail


@pytest.mark.parametrize(
    ("data", "key_text"),
    [
        ({"terminal_timeout_ms": "soon"}, "terminal_timeout_ms"),
        ({"terminal_timeout_ms": 999_999}, "terminal_timeout_ms"),
        ({"terminal_timeout_ms": True}, "terminal_timeout_ms"),
        ({"tools_enabled": 5}, "tools_enabled"),
        ({"tools_enabled": ["read_file", 3]}, "tools_enabled[1]"),
        ({"capabilities": ["file/read", "root"]}, "capabilities[1]"),
        ({"edit_mode": "yolo"}, "edit_mode"),
        ({"compress_threshold": 5}, "compress_threshold"),
        ({"providers": [{"name": "a"}, "b"]}, "providers[0].kind"),
        ({"models": []}, "models"),
    ],
)
def test_bad_values_name_key_and_file(
    work: Path, xdg: Path, data: dict[str, Any], key_text: str
) -> None:
    path = write_workspace_config(work, {**data, "max_turns": 3})
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    problem = config.problems[0]
    assert problem.path == key_text and problem.source == str(path), problem
    assert config["max_turns"] == 3  # the rest of the file still applies


def test_bad_value_in_user_file_and_env_name_their_source(work: Path, xdg: Path) -> None:
    user_file = write_user_config(xdg, {"max_turns": 0, "terminal_timeout_ms": 2000})
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg), "LICH_MAX_TURNS": "9"})
    [problem] = config.problems
    assert (problem.source, problem.path) == (str(user_file), "max_turns")
    assert "out of range" in problem.detail and "1 to 1000" in problem.detail
    assert config["max_turns"] == 9 and config.sources["max_turns"] == "environment"
    assert config["terminal_timeout_ms"] == 2000
    user_file.unlink()
    config = load_config(
        work, env={"XDG_CONFIG_HOME": str(xdg), "LICH_TERMINAL_TIMEOUT_MS": "fast"}
    )
    [problem] = config.problems
    assert (problem.source, problem.path) == ("environment", "terminal_timeout_ms")
    assert config["terminal_timeout_ms"] == KEYS["terminal_timeout_ms"].default


def test_invalid_workspace_json_is_ignored_whole_naming_file_and_line(
    work: Path, xdg: Path
) -> None:
    path = write_workspace_config(work, '{\n  "max_turns": 3,\n  oops\n}')
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    [problem] = config.problems
    assert problem.source == str(path) and "line 3" in problem.detail
    assert config.trust.state == "untrusted" and config["max_turns"] == KEYS["max_turns"].default
    assert not config.broken_files  # lich still knows the user's restrictions
    assert set_workspace_trust(work, trust=True, env={"XDG_CONFIG_HOME": str(xdg)}).after.state == (
        "untrusted"
    )


def test_invalid_user_json_leaves_the_agent_reading_only(work: Path, xdg: Path) -> None:
    user_file = write_user_config(xdg, '{\n  "approval": {"process/exec": "deny"},,\n}')
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)}, overrides={"max_turns": 4})
    [broken] = config.broken_files
    assert broken.source == str(user_file) and "line 2" in broken.detail
    assert config["capabilities"] == ["file/read"]
    assert config["max_turns"] == 4  # the other sources still apply
    narrowed = load_config(
        work, env={"XDG_CONFIG_HOME": str(xdg)}, overrides={"capabilities": ["file/edit"]}
    )
    assert narrowed["capabilities"] == []  # never wider than what the editor granted


def test_top_level_must_be_an_object(work: Path, tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="top level must be an object"):
        read_config_file(path)


def test_missing_and_empty_files_are_empty(tmp_path: Path) -> None:
    assert read_config_file(tmp_path / "absent.json") == {}
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    assert read_config_file(empty) == {}


def test_line_comments_are_allowed_outside_strings(work: Path, xdg: Path) -> None:
    write_workspace_config(
        work,
        """// lich config
{
  // how long terminal commands may run
  "terminal_timeout_ms": 1234, // trailing comment
  "system_prompt": "see https://example.test/a//b and \\"quoted // text\\"",
  "tools_enabled": ["read_file"]
}
""",
    )
    set_workspace_trust(
        work, trust=True, env={"XDG_CONFIG_HOME": str(xdg)}
    )  # system_prompt needs trust
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    assert config["terminal_timeout_ms"] == 1234
    assert config["system_prompt"] == 'see https://example.test/a//b and "quoted // text"'
    assert config["tools_enabled"] == ["read_file"]


def test_unknown_keys_are_kept_for_plugins(work: Path, xdg: Path) -> None:
    write_workspace_config(work, {"my_plugin_setting": {"x": 1}})
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    assert config["my_plugin_setting"] == {"x": 1}


def test_mask_secrets() -> None:
    value = {
        "providers": [
            {
                "name": "p",
                "api_key": "sk-123456",
                "api_key_env": "OPENAI_API_KEY",
                "base_url": "http://x",
            },
            {"name": "q", "headers": {"Authorization": "Bearer abc", "X-Trace": "1"}},
        ],
        "db_password": "hunter2",
        "token_count": 5,
        "models": {"chat": ["p"]},
    }
    masked = mask_secrets(value)
    first, second = masked["providers"]
    assert first["api_key"] == "<redacted: 9 chars>"
    assert first["api_key_env"] == "OPENAI_API_KEY"  # the variable's name is not a secret
    assert first["base_url"] == "http://x"
    assert second["headers"] == {"Authorization": "<redacted: 10 chars>", "X-Trace": "1"}
    assert masked["db_password"] == "<redacted: 7 chars>"
    assert masked["token_count"] == 5  # only string values are masked
    assert masked["models"] == {"chat": ["p"]}
    assert value["providers"][0]["api_key"] == "sk-123456"  # the input is not modified


def test_approval_and_code_action_entries_are_checked_one_by_one(work: Path, xdg: Path) -> None:
    path = write_workspace_config(
        work,
        {
            "approval": {"terminal": "maybe", "net/fetch": "deny", "proces/exec": "ask"},
            "code_actions": [{"title": "Docstring"}, {"title": "T", "prompt": "P"}],
        },
    )
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    texts = {problem.path: problem.text() for problem in config.problems}
    assert "expected allow, ask or deny" in texts["approval.terminal"]
    assert "did you mean 'process/exec'?" in texts["approval.proces/exec"]
    assert "code_actions[0].prompt" in texts and str(path) in texts["code_actions[0].prompt"]
    assert config["approval"] == {"net/fetch": "deny"}
    assert config["code_actions"] == [{"title": "T", "prompt": "P"}]


def test_a_bad_restriction_from_a_trusted_source_fails_closed(work: Path, xdg: Path) -> None:
    write_user_config(
        xdg,
        {
            "approval": {"process/exec": "denyy", "file/write": "ask"},
            "workspace_trust": "nevr",
            "capabilities": 7,
        },
    )
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    assert config["approval"] == {"process/exec": "deny", "file/write": "ask"}
    assert config["workspace_trust"] == "never"
    assert config["capabilities"] == ["file/read"]
    texts = " ".join(config.warnings)
    assert "did you mean 'deny'?" in texts and "did you mean 'never'?" in texts


def test_nested_typos_are_named_with_a_close_match(work: Path, xdg: Path) -> None:
    user_file = write_user_config(
        xdg,
        {
            "providers": [
                {"name": "a", "kind": "openai_compat", "baseurl": "http://x/v1", "model": "m"},
                {"name": "b", "kind": "openai_compat", "base_url": "http://y/v1", "model": "m"},
            ],
            "completion": {"kind": "ollama", "modle": "qwen"},
            "mcp_servers": {"ok": {"command": "srv"}, "bad": {"comand": "srv"}},
            "plugins": [{"path": "p.py", "setings": {}}],
            "models": {"chat": ["b"], "compres": ["b"]},
        },
    )
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    texts = {problem.path: problem.text() for problem in config.problems}
    assert "did you mean 'base_url'?" in texts["providers[0].baseurl"]
    assert str(user_file) in texts["providers[0].baseurl"]
    assert "did you mean 'model'?" in texts["completion.modle"]
    assert "did you mean 'command'?" in texts["mcp_servers.bad.comand"]
    assert "did you mean 'settings'?" in texts["plugins[0].setings"]
    assert "did you mean 'compress'?" in texts["models.compres"]
    assert [entry["name"] for entry in config["providers"]] == ["b"]  # the broken entry alone
    assert config["completion"] is None  # a broken completion turns completions off
    assert list(config["mcp_servers"]) == ["ok"]
    assert config["plugins"] == [] and config["models"] == {"chat": ["b"]}


def test_empty_lists_in_a_workspace_file_never_shadow_the_users(work: Path, xdg: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(xdg)}
    provider = {"name": "mine", "kind": "ollama", "model": "m"}
    write_user_config(
        xdg, {"providers": [provider], "code_actions": [{"title": "T", "prompt": "P"}]}
    )
    write_workspace_config(
        work, {"providers": [], "plugins": [], "code_actions": [], "capabilities": []}
    )
    set_workspace_trust(work, trust=True, env=env)
    config = load_config(work, env=env)
    assert config.trust.state == "trusted"
    assert config["providers"] == [provider]
    assert config["code_actions"] == [{"title": "T", "prompt": "P"}]
    assert config["capabilities"] == []  # an empty narrowing list still narrows


# One wrong value per key; a key added to KEYS without an entry here fails the coverage test.
BAD_VALUE_FOR_KEY: dict[str, Any] = {
    "work_dir": 42,
    "tools_enabled": {"read_file": True},
    "capabilities": ["net/teleport"],
    "terminal_timeout_ms": 0,
    "providers": {"name": "p"},
    "models": ["p"],
    "max_turns": "many",
    "system_prompt": ["be", "brief"],
    "context_budget_tokens": 10,
    "compress_threshold": "most",
    "session_dir": False,
    "threads_max": -1,
    "show_transcript": "yes",
    "plugins": "a.py",
    "mcp_servers": {"files": {"command": 3}},
    "web_search": {"kind": "google"},
    "test_command": ["pytest"],
    "docs_dir": 7,
    "edit_mode": "auto",
    "review_style": "per-file",
    "approval": {"terminal": "sometimes"},
    "code_actions": [{"title": "no prompt"}],
    "quick_prompts": [1, 2],
    "disk_write_policy": "never",
    "workspace_trust": "sometimes",
    "project_rules": "no",
    "completion": {"kind": "ollama", "model": "m", "base_url": "localhost:11434"},
    "completion_debounce_ms": 5000,
    "completion_prefix_chars": -1,
    "completion_suffix_chars": "lots",
    "next_edit": {"kind": "anthropic", "model": "m", "format": "zeta"},
}


def test_every_key_has_a_bad_value_example() -> None:
    assert set(BAD_VALUE_FOR_KEY) == set(KEYS)


# What is left of a bad value whose entries are dropped one by one, when something is left.
LEFT_OF_BAD_VALUE: dict[str, Any] = {"capabilities": []}


@pytest.mark.parametrize("key", sorted(BAD_VALUE_FOR_KEY))
def test_every_key_names_itself_and_drops_only_its_value(work: Path, xdg: Path, key: str) -> None:
    other = "terminal_timeout_ms" if key != "terminal_timeout_ms" else "max_turns"
    rest = {other: 12}
    env = {"XDG_CONFIG_HOME": str(xdg)}
    write_workspace_config(
        work, {**rest, **({key: LEFT_OF_BAD_VALUE[key]} if key in LEFT_OF_BAD_VALUE else {})}
    )
    expected = load_config(work, env=env)
    path = write_workspace_config(work, {key: BAD_VALUE_FOR_KEY[key], **rest})
    config = load_config(work, env=env)
    problems = [p for p in config.problems if p.path.startswith(key)]
    assert problems and all(p.source == str(path) for p in problems), config.problems
    assert config[other] == 12
    assert dict(config) == dict(expected)


def test_a_user_whose_every_provider_was_dropped_gets_an_error_not_the_default(
    work: Path, xdg: Path
) -> None:
    from lich_core.providers.factory import role_specs

    env = {"XDG_CONFIG_HOME": str(xdg), "OPENAI_API_KEY": "sk-test"}
    write_user_config(
        xdg, {"providers": [{"kind": "openai_compat", "baseurl": "http://h/v1", "model": "m"}]}
    )
    config = load_config(work, env=env)
    with pytest.raises(ConfigError, match=r"every configured provider entry was dropped .*baseurl"):
        role_specs(config, "chat", env)
    # An untrusted workspace file's providers never count, broken or not: the default stays.
    (xdg / "lich" / "config.json").unlink()
    write_workspace_config(work, {"providers": [{"kind": "nope"}]})
    config = load_config(work, env=env)
    assert config.problems and role_specs(config, "chat", env)[0].from_env


def test_a_bad_secret_value_is_named_without_echoing_it(work: Path, xdg: Path) -> None:
    write_user_config(
        xdg,
        {
            "providers": [
                {"kind": "openai_compat", "model": "m", "api_key": ["sk-live-123456"]},
            ],
            "completion": {"kind": "ollama", "model": "m", "api_key": {"v": "sk-live-654321"}},
        },
    )
    config = load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    texts = " ".join(config.warnings)
    assert "providers[0].api_key: expected a string, got a value not shown" in texts
    assert "completion.api_key" in texts
    assert "sk-live" not in texts
