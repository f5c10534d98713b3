"""The secret rules env_get and process_list share, and the tool-environment scrub."""

from __future__ import annotations

import pytest

from lich_core.tools.secrets import (
    configured_key_env_names,
    is_secret_name,
    looks_like_secret_value,
    mask_arguments,
    mask_value,
    scrubbed_env,
)


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_PAT",
        "GH_PAT",
        "PAT",
        "githubPat",
        "MY_PASSWD",
        "DB_PASS",
        "SMTP_PASS",
        "PASS",
        "dbPass",
        "DB_PW",
        "MYSQL_PWD",
        "DB_PWD",
        "SLACK_WEBHOOK",
        "SLACK_WEBHOOK_URL",
        "DISCORD_WEBHOOK",
        "SENTRY_DSN",
        "GPG_PASSPHRASE",
        "SESSION_COOKIE",
        "GITHUB_TOKEN",
        "db_password",
        "AWS_SECRET_ACCESS_KEY",
        "SSH_AUTH_SOCK",
        "PGPASSWORD",
        "CREDENTIALS_FILE",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "PWD",
        "OLDPWD",
        "PATH",
        "PYTHONPATH",
        "MANPATH",
        "PATTERN",
        "PASSENGER_ENV",
        "BYPASS_CACHE",
        "COMPASS_HOME",
        "HOME",
        "LANG",
        "PWD_FILE",
        "SHELL",
        "TERM",
        "USER",
        "EDITOR",
    ],
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # mysql-style attached password flags; a bare -p prompts and its next word is the database
        (
            ["mysql", "-uroot", "-pS3cretPw", "app"],
            ["mysql", "-uroot", "-p<redacted: 8 chars>", "app"],
        ),
        (["/usr/bin/mysqldump", "-p", "app"], ["/usr/bin/mysqldump", "-p", "app"]),
        (["sudo", "mariadb", "-pS3cret"], ["sudo", "mariadb", "-p<redacted: 6 chars>"]),
        (
            ["sshpass", "-p", "hunter2", "ssh", "h"],
            ["sshpass", "-p", "<redacted: 7 chars>", "ssh", "h"],
        ),
        (["redis-cli", "-a", "pw1", "ping"], ["redis-cli", "-a", "<redacted: 3 chars>", "ping"]),
        (
            ["curl", "-u", "bob:pw123", "https://x"],
            ["curl", "-u", "bob:<redacted: 5 chars>", "https://x"],
        ),
        (["curl", "--user=bob:pw123"], ["curl", "--user=bob:<redacted: 5 chars>"]),
        (["smbclient", "-U", "bob%pw123"], ["smbclient", "-U", "bob%<redacted: 5 chars>"]),
        (["unzip", "-P", "zippw", "a.zip"], ["unzip", "-P", "<redacted: 5 chars>", "a.zip"]),
        # -p means something else to other programs
        (["ssh", "-p2222", "host"], ["ssh", "-p2222", "host"]),
        (["mkdir", "-p", "a/b"], ["mkdir", "-p", "a/b"]),
        # names: options and assignments
        (
            ["tool", "--pass", "x1", "--db-pwd=y2"],
            ["tool", "--pass", "<redacted: 2 chars>", "--db-pwd=<redacted: 2 chars>"],
        ),
        (
            ["GITHUB_PAT=ghx", "SLACK_WEBHOOK=hook", "PWD=/home/x", "OLDPWD=/tmp"],
            [
                "GITHUB_PAT=<redacted: 3 chars>",
                "SLACK_WEBHOOK=<redacted: 4 chars>",
                "PWD=/home/x",
                "OLDPWD=/tmp",
            ],
        ),
        (["--my-passwd", "zz"], ["--my-passwd", "<redacted: 2 chars>"]),
        # a shell command line in one argument
        (
            ["bash", "-c", "mysql -uroot -pS3cretPw app"],
            ["bash", "-c", "mysql -uroot -p<redacted: 8 chars> app"],
        ),
        (
            ["sh", "-c", "run --token  abc && ls"],
            ["sh", "-c", "run --token  <redacted: 3 chars> && ls"],
        ),
        # well-known token formats anywhere
        (
            ["git", "push", "https://x:ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r"],
            ["git", "push", "https://x:<redacted>@github.com/o/r"],
        ),
        (
            ["notify", "https://hooks.slack.com/services/T000/B000/XXXX"],
            ["notify", "<redacted: 47 chars>"],
        ),
        (["run", "ghp_abcdefghijklmnopqrstuvwxyz0123"], ["run", "<redacted: 34 chars>"]),
    ],
)
def test_mask_arguments(argv: list[str], expected: list[str]) -> None:
    assert mask_arguments(argv) == expected


def test_secret_values() -> None:
    for value in (
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "github_pat_11ABCDEFG0123456789_abcdefghij",
        "xoxb-1234567890-abcdefghij",
        "sk-ant-api03-abcdefghijklmnopqrstuvwx",
        "AKIAABCDEFGHIJKLMNOP",
        "https://hooks.slack.com/services/T0/B0/x",
        "https://discord.com/api/webhooks/1/abc",
        "postgres://bob:pw@db/app",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
    ):
        assert looks_like_secret_value(value), value
    for value in (
        "/usr/bin:/bin",
        "en_US.UTF-8",
        "https://example.com/path",
        "sk-short",
        "xterm-256color",
    ):
        assert not looks_like_secret_value(value), value
    assert (
        mask_value("see https://hooks.slack.com/services/T0/B0/x now")
        == "see <redacted: 40 chars> now"
    )


def test_scrubbed_env_removes_configured_names() -> None:
    env = {"OPENROUTER_KEY": "a", "ACME_API_KEY": "b", "OPENAI_API_KEY": "c", "KEEP": "d"}
    assert scrubbed_env(env) == {"OPENROUTER_KEY": "a", "KEEP": "d"}
    assert scrubbed_env(env, {"OPENROUTER_KEY"}) == {"KEEP": "d"}


def test_configured_key_env_names() -> None:
    config = {
        "providers": [
            {"api_key_env": "OPENROUTER_KEY"},
            {"api_key_env": " GH_TOKEN "},
            {"api_key_env": 3},
            {"api_key": "inline"},
            "junk",
        ]
    }
    assert configured_key_env_names(config) == {"OPENROUTER_KEY", "GH_TOKEN"}
    assert configured_key_env_names({}) == frozenset()
    assert configured_key_env_names({"providers": "nope"}) == frozenset()
