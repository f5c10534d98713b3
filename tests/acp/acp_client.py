"""A scripted ACP client for the tests: records session updates, answers fs/* from in-memory
buffers (optionally), answers permission requests from a script, and (optionally) runs
terminal/* commands as real subprocesses, as an editor's terminal would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from tests.acp import sdk
from tests.support import prefork

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 20.0
# What the client's terminals add to a command's environment: a command that prints it ran here.
CLIENT_TERMINAL_ENV = {"LICH_TEST_TERMINAL_HOST": "the-test-client"}


class ClientTerminal:
    """One terminal/create: a real subprocess, its output merged and kept up to the byte limit
    (the newest kept, as the ACP spec says)."""

    def __init__(
        self,
        terminal_id: str,
        command: str,
        args: list[str],
        env: dict[str, str],
        cwd: str | None,
        limit: int | None,
    ) -> None:
        self.id = terminal_id
        self.command = command
        self.args = args
        self.env = env
        self.cwd = cwd
        self.limit = limit
        self.output = b""
        self.truncated = False
        self.killed = False
        self.released = False
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            self.command,
            *self.args,
            cwd=self.cwd,
            env={**os.environ, **CLIENT_TERMINAL_ENV, **self.env},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while chunk := await self.process.stdout.read(4096):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                self.output = self.output[-self.limit :]
                self.truncated = True

    async def wait(self) -> sdk.TerminalExitStatus:
        assert self.process is not None and self._reader is not None
        code = await self.process.wait()
        await self._reader
        if code < 0:
            return sdk.TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
        return sdk.TerminalExitStatus(exit_code=code)

    def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def status(self) -> sdk.TerminalExitStatus | None:
        if self.process is None or self.process.returncode is None:
            return None
        code = self.process.returncode
        if code < 0:
            return sdk.TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
        return sdk.TerminalExitStatus(exit_code=code)


class ScriptedClient:
    def __init__(
        self, *, fs_read: bool = False, fs_write: bool = False, terminal: bool = False
    ) -> None:
        self.fs_read = fs_read
        self.fs_write = fs_write
        self.terminal = terminal
        self.terminals: dict[str, ClientTerminal] = {}
        self.terminal_calls: list[tuple[str, str]] = []  # (method, terminal id)
        self.buffers: dict[str, str] = {}  # absolute path -> unsaved text
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.updates: list[Any] = []
        self.permission_requests: list[Any] = []
        self.answers: list[str | None] = []  # option ids; None = cancelled
        self.on_read: Callable[[str], None] | None = None
        self.changed = asyncio.Event()

    # --- the Client protocol ---

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        self.permission_requests.append((tool_call, options))
        self._changed()
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return sdk.RequestPermissionResponse(outcome=sdk.DeniedOutcome(outcome="cancelled"))
        return sdk.RequestPermissionResponse(
            outcome=sdk.AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._changed()

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        self.reads.append(path)
        if path in self.buffers:
            text = self.buffers[path]
        elif os.path.isfile(path):
            text = Path(path).read_text()
        else:
            raise sdk.RequestError.resource_not_found(path)
        if self.on_read is not None:
            self.on_read(path)
        return sdk.ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append((path, content))
        self.buffers[path] = content
        return sdk.WriteTextFileResponse()

    # terminal/* (the SDK routes them whether or not the capability was declared)

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        terminal_id = f"term-{len(self.terminals) + 1}"
        variables = {item.name: item.value for item in env or []}
        terminal = ClientTerminal(
            terminal_id, command, list(args or []), variables, cwd, output_byte_limit
        )
        await terminal.start()
        self.terminals[terminal_id] = terminal
        self.terminal_calls.append(("create", terminal_id))
        self._changed()
        return sdk.CreateTerminalResponse(terminal_id=terminal_id)

    def _terminal(self, terminal_id: str) -> ClientTerminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None or terminal.released:
            raise sdk.RequestError.invalid_params({"terminalId": f"no terminal {terminal_id}"})
        return terminal

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = self._terminal(terminal_id)
        self.terminal_calls.append(("output", terminal_id))
        self._changed()
        return sdk.TerminalOutputResponse(
            output=terminal.output.decode("utf-8", "replace"),
            truncated=terminal.truncated,
            exit_status=terminal.status(),
        )

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = self._terminal(terminal_id)
        self.terminal_calls.append(("wait_for_exit", terminal_id))
        self._changed()
        status = await terminal.wait()
        return sdk.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = self._terminal(terminal_id)
        self.terminal_calls.append(("kill", terminal_id))
        terminal.kill()
        self._changed()
        return sdk.KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        terminal = self._terminal(terminal_id)
        self.terminal_calls.append(("release", terminal_id))
        terminal.kill()
        terminal.released = True
        self._changed()
        return sdk.ReleaseTerminalResponse()

    def on_connect(self, conn: Any) -> None:
        pass

    # --- helpers ---

    def _changed(self) -> None:
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], Any], timeout_s: float = WAIT_S) -> Any:
        async def loop() -> Any:
            while True:
                value = predicate()
                if value:
                    return value
                self.changed.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 0.2)

        return await asyncio.wait_for(loop(), timeout_s)

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))

    def capabilities(self) -> sdk.ClientCapabilities:
        return sdk.ClientCapabilities(
            fs=sdk.FileSystemCapabilities(
                read_text_file=self.fs_read, write_text_file=self.fs_write
            ),
            terminal=self.terminal,
        )


def write_user_config(provider_url: str, **extra: Any) -> None:
    """The provider goes into lich's user config (an ACP client cannot pass lich config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ["HOME"], ".config")
    path = Path(base) / "lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": provider_url + "/v1",
                "model": "fake-model",
            }
        ],
        **extra,
    }
    path.write_text(json.dumps(config))


@contextlib.asynccontextmanager
async def acp_agent(client: ScriptedClient) -> AsyncIterator[Any]:
    """`python -m lich_acp` over stdio (forked from the test zygote: tests/support/prefork.py),
    initialized; yields the client-side connection."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    async with sdk.spawn_agent_process(
        client, *prefork.command("lich_acp"), env=env, cwd=ROOT, transport_kwargs={"stderr": None}
    ) as (conn, _process):
        response = await asyncio.wait_for(
            conn.initialize(
                protocol_version=sdk.PROTOCOL_VERSION, client_capabilities=client.capabilities()
            ),
            WAIT_S,
        )
        conn.initialize_response = response
        try:
            yield conn
        finally:
            for terminal in client.terminals.values():  # whatever the agent left running
                terminal.kill()
