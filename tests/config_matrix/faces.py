"""The three faces driven the way their users drive them, each run observed the same way.

A run: the workspace's `.lich/config.json` holds a case's content (or its baseline's); the face is
asked for a task; the scripted model calls four tools at once that need, in turn, file/read
(read_file), file/edit (edit_file), file/write (write_file) and process/exec (terminal), then
answers. Observed:

- the tools offered: the tool names in the model requests' `tools`;
- what became of each call: `allowed` (it ran), `asked` (the user was asked, and said no; the
  command line, which cannot ask, refuses saying so) or `error:<prefix>` (refused by a gate, or
  run and failed: edit_file quotes text the file does not have, so an allowed edit changes
  nothing and reports `old_string_not_found`, and every run finds the same file);
- the provider: which fake server (the editor's or the workspace's) got each request, and the model.

One process per face and profile serves every case: the language server re-reads the files on
`workspace/didChangeConfiguration` (and the test waits until `lich.status` shows the content's
problems), `lich acp` reads them at each `session/new`; the CLI runs in this process
(tests/support/cli_runner.py), one call per case.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.cli_runner import run_lich
from tests.support.fake_provider import FakeProviderServer

# The language-server harness sits in tests/lsp, which has no __init__.py (see its conftest).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))
from lsp_harness import bounded, start_session, stop_session  # noqa: E402

EDITOR_MODEL = "editor-model"
WAIT_S = 20.0
TASK = "fail-closed matrix"
HELLO = "print('hello')\n"
NOT_IN_FILE = "text hello.py does not have"
TOOL_CALLS = [
    {"name": "read_file", "arguments": {"path": "hello.py"}},
    {
        "name": "edit_file",
        "arguments": {"path": "hello.py", "old_string": NOT_IN_FILE, "new_string": "edited"},
    },
    {"name": "write_file", "arguments": {"path": "matrix-out.txt", "content": "matrix\n"}},
    {"name": "terminal", "arguments": {"command": "echo matrix"}},
]
SCRIPT = ({"tool_calls": TOOL_CALLS}, {"text": "done"})
ASKED = "asked"
ALLOWED = "allowed"
APPROVAL_QUESTION = "lich wants to run "


def editor_provider(url: str) -> dict[str, Any]:
    return {
        "name": "editor",
        "kind": "openai_compat",
        "base_url": url + "/v1",
        "model": EDITOR_MODEL,
    }


@dataclass(frozen=True)
class Profile:
    """Restrictions from the editor and the user, as each face takes them."""

    name: str
    editor: dict[str, Any]  # the editor's settings (LSP initializationOptions)
    user: dict[str, Any]  # the user's config file
    # else the editor's settings (LSP) or the flags (CLI); ACP takes it from the user's config
    provider_in_user_config: bool


PROFILES = {
    # VS Code's Restricted Mode: what its extension sends in an untrusted window.
    "restricted": Profile(
        "restricted", {"capabilities": ["file/read"], "workspace_trust": "never"}, {}, True
    ),
    # The user grants reads, edits and commands, and denies commands.
    "deny-exec": Profile(
        "deny-exec",
        {},
        {
            "capabilities": ["file/read", "file/edit", "process/exec"],
            "approval": {"process/exec": "deny"},
        },
        False,
    ),
}


@dataclass(frozen=True)
class Observation:
    tools: tuple[tuple[str, ...], ...]  # per model request, the tool names offered (sorted)
    calls: tuple[tuple[str, str], ...]  # (tool, allowed | asked | error:<prefix>)
    provider: tuple[tuple[str, str], ...]  # per model request: (which fake, model)


@dataclass
class Run:
    observation: Observation
    shown: str  # what the face said about the configuration during this run


@dataclass
class Fakes:
    """The editor's model server and the workspace's (which a bad value must never bring in);
    each holds one run's script, so a run that goes to the other one leaves it for the next."""

    editor: FakeProviderServer
    workspace: FakeProviderServer
    marks: dict[str, int] = field(default_factory=dict)

    def _named(self) -> tuple[tuple[str, FakeProviderServer], ...]:
        return (("editor", self.editor), ("workspace", self.workspace))

    def mark(self) -> None:
        for name, fake in self._named():
            left = fake.pending_turns
            if left == 0:
                fake.script(*SCRIPT)
            assert left in (0, len(SCRIPT)), f"a run left {left} of its turns at the {name} model"
            self.marks[name] = len(fake.requests)

    def observe(self) -> Observation:
        requests = [
            (name, request)
            for name, fake in self._named()
            for request in fake.requests[self.marks[name] :]
        ]
        tools = tuple(
            tuple(sorted(tool["function"]["name"] for tool in request["json"].get("tools") or []))
            for _, request in requests
        )
        provider = tuple((name, str(request["json"].get("model"))) for name, request in requests)
        last = requests[-1][1]["json"]["messages"] if requests else []
        return Observation(tools, call_outcomes(last), provider)


def call_outcomes(messages: list[dict[str, Any]]) -> tuple[tuple[str, str], ...]:
    names = {
        call["id"]: call["function"]["name"]
        for message in messages
        for call in message.get("tool_calls") or []
    }
    outcomes = []
    for message in messages:
        if message.get("role") != "tool":
            continue
        outcomes.append((names.get(message.get("tool_call_id"), "?"), outcome(message["content"])))
    return tuple(outcomes)


def outcome(content: Any) -> str:
    try:
        error = json.loads(content).get("error") if str(content).startswith("{") else None
    except (ValueError, AttributeError):
        error = None
    if not error:
        return ALLOWED
    if error.startswith("approval_denied: the user denied") or "command line cannot ask" in error:
        return ASKED
    return "error:" + error.split(":", 1)[0]


def write_json(path: Path, content: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")


def user_config_path() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"


def workspace_config_path(root: Path) -> Path:
    return root / ".lich" / "config.json"


class Face:
    """One face under one profile; `run(content)` writes the workspace file and runs a task."""

    def __init__(self, root: Path, profile: Profile, fakes: Fakes) -> None:
        self.root = root
        self.profile = profile
        self.fakes = fakes
        self.ws_file = workspace_config_path(root)

    def started(self, first: dict[str, Any]) -> contextlib.AbstractAsyncContextManager[Any]:
        """The face's process (if any) up, with `first` as the workspace file's content."""
        raise NotImplementedError

    async def run(self, content: dict[str, Any], named: str | None) -> Run:
        """Run the task with `content` in the workspace file; `named`: the key path of the
        case's bad value (None for a baseline)."""
        raise NotImplementedError

    def user_config(self, with_editor_settings: bool, with_provider: bool) -> dict[str, Any]:
        config = dict(self.profile.user)
        if with_editor_settings:
            config.update(self.profile.editor)
        if with_provider:
            config["providers"] = [editor_provider(self.fakes.editor.url)]
        return config


class LspFace(Face):
    """`lich-lsp` over stdio behind the pytest-lsp test editor (VS Code's capabilities): the
    editor's settings are its initializationOptions, and pushed again with each
    didChangeConfiguration; approval questions are answered Deny, the trust question Not now."""

    def editor_settings(self) -> dict[str, Any]:
        settings = dict(self.profile.editor)
        if not self.profile.provider_in_user_config:
            settings["providers"] = [editor_provider(self.fakes.editor.url)]
        return settings

    @contextlib.asynccontextmanager
    async def started(self, first: dict[str, Any]) -> AsyncIterator[LspFace]:
        write_json(
            user_config_path(),
            self.user_config(False, with_provider=self.profile.provider_in_user_config),
        )
        write_json(self.ws_file, first)
        self.client = await start_session(self.root, init_options=self.editor_settings())
        self.questions: list[str] = []

        def answer(params: Any) -> Any:
            from lsprotocol import types

            self.questions.append(params.message)
            if params.message.startswith(APPROVAL_QUESTION):
                return types.MessageActionItem(title="Deny")
            return None  # the trust question: dismissed is "Not now"

        self.client.handle_message_request = answer  # type: ignore[method-assign]
        self.content = first
        self.problems: frozenset[tuple[str, str]] = frozenset()
        try:
            yield self
        finally:
            await stop_session(self.client)
        assert not self.client.failures, self.client.failures

    def _problems(self, status: dict[str, Any]) -> frozenset[tuple[str, str]]:
        """The workspace file's problems in the status: (key path, what is wrong)."""
        return frozenset(
            (problem["key"], problem["detail"])
            for problem in status["config"]["problems"]
            if problem["source"] == str(self.ws_file)
        )

    async def run(self, content: dict[str, Any], named: str | None) -> Run:
        client = self.client
        seen_messages = len(client.messages)
        if content != self.content:
            await self._reread(content, named)
        if named:
            await client.wait_until(
                lambda: any(
                    f"{self.ws_file}: {named}:" in message.message
                    for message in client.messages[seen_messages:]
                ),
                what=f"a window/showMessage naming {named}",
            )
        asked_before = len(self.questions)
        self.fakes.mark()
        result = await client.command("lich.ask", {"prompt": TASK})
        assert result["stopped_reason"] == "final", result
        observation = self.fakes.observe()
        approvals = [q for q in self.questions[asked_before:] if q.startswith(APPROVAL_QUESTION)]
        _check_asked(observation, len(approvals))
        shown = "\n".join(message.message for message in client.messages[seen_messages:])
        return Run(observation, shown)

    async def _reread(self, content: dict[str, Any], named: str | None) -> None:
        """Write the content, tell the server, and wait until it has read it: its problems are
        in lich.status (a case's name `named`; a baseline has none), and they differ from the
        previous content's, which is how a re-read is told from none."""
        assert named or self.problems, "two baselines in a row: their reads cannot be told apart"
        write_json(self.ws_file, content)
        self.client.workspace_did_change_configuration(
            _change_params({"lich": self.editor_settings()})
        )
        previous = self.problems

        def read(status: dict[str, Any]) -> bool:
            problems = self._problems(status)
            if problems == previous:
                return False
            return any(key == named for key, _ in problems) if named else not problems

        self.problems = self._problems(await self.client.wait_for_status(read))
        self.content = content


def _change_params(settings: dict[str, Any]) -> Any:
    from lsprotocol import types

    return types.DidChangeConfigurationParams(settings=settings)


def _check_asked(observation: Observation, questions: int) -> None:
    """Every `asked` outcome was a question the client saw, and no question was left out."""
    asked = sum(1 for _, result in observation.calls if result == ASKED)
    assert asked == questions, f"{questions} approval questions for {observation.calls}"


class CliFace(Face):
    """`lich TASK --work-dir ROOT` (tests/support/cli_runner.py: lich_cli's main in this process),
    one call per run; the restrictions in the user's config file, the provider there or in
    --provider-kind/--base-url/--model."""

    def __init__(self, root: Path, profile: Profile, fakes: Fakes) -> None:
        super().__init__(root, profile, fakes)
        write_json(
            user_config_path(),
            self.user_config(True, with_provider=profile.provider_in_user_config),
        )
        self.flags: list[str] = []
        if not profile.provider_in_user_config:
            url = fakes.editor.url + "/v1"
            self.flags = [
                "--provider-kind",
                "openai_compat",
                "--base-url",
                url,
                "--model",
                EDITOR_MODEL,
            ]

    @contextlib.asynccontextmanager
    async def started(self, first: dict[str, Any]) -> AsyncIterator[CliFace]:
        write_json(self.ws_file, first)
        yield self

    async def run(self, content: dict[str, Any], named: str | None) -> Run:
        write_json(self.ws_file, content)
        self.fakes.mark()
        result = await asyncio.to_thread(
            run_lich, TASK, "--work-dir", str(self.root), *self.flags, cwd=self.root
        )
        assert result.returncode == 0, result.stderr
        return Run(self.fakes.observe(), result.stderr)


class AcpFace(Face):
    """One `lich acp` process (tests/acp/acp_client.py: forked from the test zygote); a new
    session per run, which reads the config files; permission requests are answered by
    cancelling (a denial). The restrictions and the provider are in the user's config file (an
    ACP client has no way to pass lich settings). ACP names a session's config problems in its
    first answer."""

    @contextlib.asynccontextmanager
    async def started(self, first: dict[str, Any]) -> AsyncIterator[AcpFace]:
        from tests.acp.acp_client import ScriptedClient, acp_agent

        write_json(user_config_path(), self.user_config(True, with_provider=True))
        write_json(self.ws_file, first)
        self.client = ScriptedClient()
        async with acp_agent(self.client) as conn:
            self.conn = conn
            yield self

    async def run(self, content: dict[str, Any], named: str | None) -> Run:
        from tests.acp import sdk

        write_json(self.ws_file, content)
        client = self.client
        updates, asked_before = len(client.updates), len(client.permission_requests)
        self.fakes.mark()
        session = await bounded(
            self.conn.new_session(cwd=str(self.root), mcp_servers=[]), WAIT_S, "session/new"
        )
        response = await bounded(
            self.conn.prompt(session_id=session.session_id, prompt=[sdk.text_block(TASK)]),
            WAIT_S,
            "session/prompt",
        )
        assert response.stop_reason == "end_turn", response
        observation = self.fakes.observe()
        _check_asked(observation, len(client.permission_requests) - asked_before)
        answer = "".join(
            update.content.text
            for update in client.updates[updates:]
            if update.session_update == "agent_message_chunk"
        )
        return Run(observation, answer)


FACES = {"lsp": LspFace, "cli": CliFace, "acp": AcpFace}
