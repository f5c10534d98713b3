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
    for value in (str(elsewhere), "..", "/"):
        with pytest.raises(
            ConfigError, match=r"^work_dir: .* is outside the workspace root .*narrow"
        ):
            load_config(work, env=env, overrides={"work_dir": value})
    os.symlink(elsewhere, work / "link")
    with pytest.raises(ConfigError, match="outside the workspace root"):
        load_config(work, env=env, overrides={"work_dir": "link"})


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
        ({"providers": [{"name": "a"}, "b"]}, "providers[1]"),
        ({"models": []}, "models"),
    ],
)
def test_bad_values_name_key_and_file(
    work: Path, xdg: Path, data: dict[str, Any], key_text: str
) -> None:
    path = write_workspace_config(work, data)
    with pytest.raises(ConfigError) as info:
        load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    message = str(info.value)
    assert message.startswith(key_text + ":"), message
    assert str(path) in message


def test_bad_value_in_user_file_and_env_name_their_source(work: Path, xdg: Path) -> None:
    user_file = write_user_config(xdg, {"max_turns": 0})
    with pytest.raises(ConfigError, match="max_turns") as info:
        load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    assert str(user_file) in str(info.value)
    user_file.unlink()
    with pytest.raises(ConfigError, match=r"terminal_timeout_ms.*environment"):
        load_config(work, env={"XDG_CONFIG_HOME": str(xdg), "LICH_TERMINAL_TIMEOUT_MS": "fast"})


def test_invalid_json_names_file_and_position(work: Path, xdg: Path) -> None:
    path = write_workspace_config(work, '{\n  "max_turns": 3,\n  oops\n}')
    with pytest.raises(ConfigError) as info:
        load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    assert str(path) in str(info.value) and "line 3" in str(info.value)


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


def test_approval_and_code_action_values_are_checked() -> None:
    from lich_core.config import validate_values

    with pytest.raises(ConfigError, match=r"approval\.terminal: expected allow, ask or deny"):
        validate_values({"approval": {"terminal": "maybe"}}, "f")
    with pytest.raises(ConfigError, match=r"code_actions\[0\]\.prompt"):
        validate_values({"code_actions": [{"title": "Docstring"}]}, "f")
    ok = validate_values(
        {"approval": {"process/exec": "allow"}, "code_actions": [{"title": "T", "prompt": "P"}]},
        "f",
    )
    assert ok["approval"] == {"process/exec": "allow"}


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
}


def test_every_key_has_a_bad_value_example() -> None:
    assert set(BAD_VALUE_FOR_KEY) == set(KEYS)


@pytest.mark.parametrize("key", sorted(BAD_VALUE_FOR_KEY))
def test_every_key_names_itself_in_its_error(work: Path, xdg: Path, key: str) -> None:
    path = write_workspace_config(work, {key: BAD_VALUE_FOR_KEY[key]})
    with pytest.raises(ConfigError) as info:
        load_config(work, env={"XDG_CONFIG_HOME": str(xdg)})
    message = str(info.value)
    assert message.startswith(key), message
    assert str(path) in message
