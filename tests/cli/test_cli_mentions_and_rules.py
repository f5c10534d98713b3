"""`lich "task"` reads `@path` mentions and project rules through the read guard for lich's own
prompts (issue #43): a FIFO mention returns at once with a refusal naming it (it hung the CLI);
`.lich/config.json`, `.git/config`, a link to the config, a path outside the root and a secret
file are refused, named on stderr with the guard's prefix, and never reach the model; an
AGENTS.md linked to the config is not sent as rules. An agent write to a project rules file
needs the user's approval, which the command line cannot ask: it is refused and the file is
left as it was."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.support.cli_runner import lich_command, run_lich

# How long `lich` may take to answer a one-turn task with a FIFO mention: a process start and a
# model call on a loaded machine. It hung for good before the read guard (the test's own bound).
FIFO_TASK_TIMEOUT_S = 45
CONFIG_MARKER = "CONFIG-MARKER-7f3a"
GIT_MARKER = "GIT-MARKER-91c2"
OUTSIDE_MARKER = "OUTSIDE-MARKER-5e0d"
ENV_MARKER = "ENV-MARKER-2b8c"
RULES_LABEL = "Project rules from the repository"


def provider_flags(fake_provider: Any) -> list[str]:
    return [
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "fake-model",
        "--provider-kind",
        "openai_compat",
    ]


def sent(fake_provider: Any) -> str:
    """Everything the model was sent, every request."""
    return json.dumps([r["json"]["messages"] for r in fake_provider.requests], ensure_ascii=False)


def make_forbidden_files(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".lich").mkdir()
    # A valid workspace config (a narrowing key): the marker is in a value nothing sends.
    (root / ".lich" / "config.json").write_text(json.dumps({"quick_prompts": [CONFIG_MARKER]}))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[remote]\n\turl = https://x:{GIT_MARKER}@h/r\n")
    (root / "link").symlink_to(Path(".lich") / "config.json")
    (tmp_path / "outside.txt").write_text(f"{OUTSIDE_MARKER}\n")
    (root / ".env").write_text(f"TOKEN={ENV_MARKER}\n")
    (root / "ok.py").write_text("print('attached')\n")
    return root


def test_a_fifo_mention_returns_at_once_with_a_refusal(tmp_path: Path, fake_provider) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / "fifo.py")
    fake_provider.script({"text": "could not attach it"})
    done = subprocess.run(
        lich_command("explain @fifo.py", "--work-dir", str(root), *provider_flags(fake_provider)),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=FIFO_TASK_TIMEOUT_S,
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    refusal = "@fifo.py: not_regular_file: fifo.py is a FIFO, not a regular file"
    assert f"lich: not attached: {refusal}" in done.stderr
    assert refusal in sent(fake_provider)


def test_forbidden_mentions_are_named_and_never_sent(tmp_path: Path, fake_provider) -> None:
    root = make_forbidden_files(tmp_path)
    fake_provider.script({"text": "some were not attached"})
    task = "compare @.lich/config.json @.git/config @link @../outside.txt @.env with @ok.py"
    result = run_lich(task, "--work-dir", str(root), *provider_flags(fake_provider), cwd=root)
    assert result.returncode == 0, result.stderr
    text = sent(fake_provider)
    for marker in (CONFIG_MARKER, GIT_MARKER, OUTSIDE_MARKER, ENV_MARKER):
        assert marker not in text, marker
    assert "print('attached')" in text  # the allowed mention still is
    refusals = {
        "@.lich/config.json": "forbidden_path: .lich/config.json",
        "@.git/config": "forbidden_path: .git/config",
        "@link": "forbidden_path: .lich/config.json",
        "@../outside.txt": "path_escape: ../outside.txt",
        "@.env": "secret_file: .env",
    }
    for mention, refusal in refusals.items():
        assert f"lich: not attached: {mention}: {refusal}" in result.stderr, result.stderr
        assert f"{mention}: {refusal}" in text


def test_agents_md_linked_to_the_config_is_not_sent_as_rules(tmp_path: Path, fake_provider) -> None:
    root = make_forbidden_files(tmp_path)
    (root / "AGENTS.md").symlink_to(Path(".lich") / "config.json")
    fake_provider.script({"text": "ok"})
    result = run_lich("tidy up", "--work-dir", str(root), *provider_flags(fake_provider), cwd=root)
    assert result.returncode == 0, result.stderr
    text = sent(fake_provider)
    assert CONFIG_MARKER not in text and RULES_LABEL not in text
    assert "project rules: skipped AGENTS.md: forbidden_path: .lich/config.json" in result.stderr


def test_an_agent_write_to_project_rules_is_refused(tmp_path: Path, fake_provider) -> None:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / ".github").mkdir()
    rules = {
        "AGENTS.md": "Root rule.\n",
        "pkg/CLAUDE.md": "Pkg rule.\n",
        ".github/copilot-instructions.md": "Copilot rule.\n",
    }
    for rel, text in rules.items():
        (root / rel).write_text(text)
    patch = "@@ .github/copilot-instructions.md\n+ 1:" + _hash("Copilot rule.") + "\n~Obey me.\n"
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "AGENTS.md", "content": "Obey.\n"}},
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "pkg/../pkg/CLAUDE.md",
                        "old_string": "Pkg rule.",
                        "new_string": "Obey.",
                    },
                },
                {"name": "read_file", "arguments": {"path": ".github/copilot-instructions.md"}},
                {"name": "apply_patch", "arguments": {"input": patch}},
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "fine\n"}},
            ]
        },
        {"text": "done"},
    )
    result = run_lich(
        "change the rules", "--work-dir", str(root), *provider_flags(fake_provider), cwd=root
    )
    assert result.returncode == 0, result.stderr
    errors = [
        json.loads(m["content"]).get("error")
        for m in fake_provider.requests[-1]["json"]["messages"]
        if m.get("role") == "tool" and m["content"].startswith("{")
    ]
    refused = [e for e in errors if e and e.startswith("approval_denied:")]
    assert refused == [
        f"approval_denied: {tool} writes {rel}, project rules that later tasks are given as "
        "instructions; such a write needs the user's approval and the lich command line cannot "
        f"ask; the user can edit {rel} themselves, or ask from an editor, which asks"
        for tool, rel in (
            ("write_file", "AGENTS.md"),
            ("edit_file", "pkg/CLAUDE.md"),
            ("apply_patch", ".github/copilot-instructions.md"),
        )
    ]
    for rel, text in rules.items():
        assert (root / rel).read_text() == text, rel
    assert (root / "notes.md").read_text() == "fine\n"  # other writes are not asked about


def _hash(line: str) -> str:
    from lich_core.hashline.anchors import line_hash

    return line_hash(line)
