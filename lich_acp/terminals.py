"""ClientTerminals: the terminal tool's commands in the client's terminals (ACP `terminal/*`).

A lich_core.workspace.CommandHost, set on the session's AcpWorkspace when the client declared
the `terminal` capability. One command is one terminal: `terminal/create` (`env -u KEY ...`
removes the provider keys the local tool scrubs, then `SHELL -lc COMMAND` in the tool's working
directory), then `terminal/wait_for_exit` raced against the tool's timeout and its cancellation
(either one: `terminal/kill`), `terminal/output`, and always `terminal/release`. The client keeps
the newest `outputByteLimit` bytes. As soon as the terminal exists, `on_created` lets the session
put it into the tool call's content, so the client shows the output as it comes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from acp.schema import EnvVariable

from lich_acp.events import ClientBridge
from lich_core.vocabulary import CancelToken
from lich_core.workspace import CommandOutcome, CommandRequest

log = logging.getLogger("lich.acp.terminals")

# How long the client may take to answer terminal/create, output, kill and release (not the
# command itself, whose limit is the request's timeout).
CLIENT_CALL_TIMEOUT_S = 30.0
Ended = Literal["exited", "timeout", "cancelled"]


def terminal_command(request: CommandRequest) -> tuple[str, list[str]]:
    """The program and arguments terminal/create gets for a request."""
    run = [request.shell, "-lc", request.command]
    if not request.unset_env:
        return run[0], run[1:]
    unset = [word for name in request.unset_env for word in ("-u", name)]
    return "env", [*unset, *run]


class ClientTerminals:
    def __init__(self, bridge: ClientBridge, on_created: Callable[[str], Awaitable[None]]) -> None:
        self.bridge = bridge
        self.on_created = on_created

    async def _call(self, make: Callable[[], Awaitable[Any]]) -> Any:
        return await asyncio.wait_for(self.bridge.call(make), CLIENT_CALL_TIMEOUT_S)

    async def run_command(self, request: CommandRequest, cancel: CancelToken) -> CommandOutcome:
        conn, session_id = self.bridge.conn, self.bridge.session_id
        program, args = terminal_command(request)
        env = [EnvVariable(name=name, value=value) for name, value in request.env.items()]
        created = await self._call(
            lambda: conn.create_terminal(
                session_id=session_id,
                command=program,
                args=args,
                env=env,
                cwd=str(request.cwd),
                output_byte_limit=request.output_limit,
            )
        )
        terminal_id = str(created.terminal_id)
        released = False
        try:
            await self.on_created(terminal_id)
            ended, exit_code, signal = await self._wait(terminal_id, request.timeout_ms, cancel)
            output = await self._call(
                lambda: conn.terminal_output(session_id=session_id, terminal_id=terminal_id)
            )
            if (
                ended == "exited"
                and exit_code is None
                and signal is None
                and output.exit_status is not None
            ):
                exit_code, signal = output.exit_status.exit_code, output.exit_status.signal
            await self._call(
                lambda: conn.release_terminal(session_id=session_id, terminal_id=terminal_id)
            )
            released = True
            return CommandOutcome(
                output=str(output.output),
                ended=ended,
                exit_code=exit_code,
                signal=signal,
                truncated=bool(output.truncated),
                terminal_id=terminal_id,
            )
        finally:
            if not released:  # a failure or a cancelled task: kill and release without waiting

                async def clean_up() -> None:
                    for method in (conn.kill_terminal, conn.release_terminal):
                        try:
                            await method(session_id=session_id, terminal_id=terminal_id)
                        except Exception as err:  # noqa: BLE001 - best effort
                            log.info("terminal %s: clean-up failed: %s", terminal_id, err)

                self.bridge.post(clean_up)

    async def _wait(
        self, terminal_id: str, timeout_ms: int, cancel: CancelToken
    ) -> tuple[Ended, int | None, str | None]:
        """("exited", code, signal), or ("timeout" | "cancelled", None, None) once killed."""
        conn, session_id = self.bridge.conn, self.bridge.session_id
        exit_wait = asyncio.ensure_future(
            self.bridge.call(
                lambda: conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal_id)
            )
        )
        cancel_wait = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait(
                {exit_wait, cancel_wait},
                timeout=timeout_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            cancel_wait.cancel()
            if not exit_wait.done():
                exit_wait.cancel()
        if exit_wait.done() and not exit_wait.cancelled():
            error = exit_wait.exception()
            if not cancel.cancelled:
                if error is not None:
                    raise error  # the client's error: the tool reports it
                status = exit_wait.result()
                return "exited", status.exit_code, status.signal
        await self._call(lambda: conn.kill_terminal(session_id=session_id, terminal_id=terminal_id))
        return ("cancelled" if cancel.cancelled else "timeout"), None, None
