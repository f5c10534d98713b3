"""McpManager: the connections to the configured MCP servers of one tool runtime.

Connections and tasks
---------------------
The SDK's `mcp.Client` is an async context manager whose `__aenter__` starts anyio task groups
(the transport's pipe readers, the session's dispatcher). anyio requires a task group, and every
cancel scope inside it, to be entered and exited by the same task, in LIFO order; a Client opened
in one run's task and closed in another's (or in `close()`) breaks that rule. So each connection
has one long-lived *owner task* (`_own`):

    owner task:  with CancelScope() as scope:          # conn.scope: how anyone stops it
                     async with Client(transport):     # spawn / connect, handshake
                         list the tools                # then conn.ready resolves
                         await conn.lost.wait()        # until lost, or scope.cancel()
                 (leaving the block closes the session and the transport in this task)

Tool calls do not go through the owner: a request is a message on the session's memory streams
and an answer routed back by request id, so `client.call_tool` may be awaited from any task of
the same event loop. Each call (`McpManager.call`) runs `client.call_tool` in its own small task,
raced against the caller's CancelToken and against `conn.lost`:

- cancel (ctx.cancel: the run was stopped, or the executor's deadline fired): the call task is
  cancelled, which makes the SDK send `notifications/cancelled` to the server and forget the
  request id; the connection stays up for every other call. The executor turns a deadline into
  `timeout: ...`.
- connection lost (the server exited, closed its output, or the HTTP endpoint went away): the
  SDK fails pending requests with CONNECTION_CLOSED; the call answers `mcp_unavailable:` and
  marks the server failed. The owner task leaves its Client block and tears the connection down.
  A server that exits between calls is noticed by the transport (end of its output, then up to
  EXIT_SETTLE_S for its exit code) and is failed as well. Nothing restarts in the middle of a
  run: the next `attach()` (the next run) starts it again.

Stopping a connection is `scope.cancel()` on the owner's scope (anyio delivers it to the owner
task), then waiting (bounded) for the owner to finish. stdio servers run in their own process
group (start_new_session) through our own small stdio transport (the SDK's stdio_client does not
expose the process), so the group id is known, and the server's stderr is kept (its last line
explains a crash). After
the owner's teardown, and also when that teardown hangs, `_kill_group` sends SIGTERM to the
group, SIGKILL after a short grace, and waits until no live member is left. A process still
alive at interpreter exit is killed by an atexit hook.

Attach
------
`attach()` starts every server that is not_started or failed, all in parallel, each bounded by
`attach_timeout_s` (15 s). Concurrent callers share one attach task (shielded: one caller's
cancellation does not stop it for the other). Tool names are assigned after the attach, in
config order, so they do not depend on which server answered first; a restarted server keeps
the names its tools had.

Between the transport and the session, answers to tools/list are repaired before the SDK
validates them (see `_ListingRepair`): one tool with an unusable schema must not fail the server.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client._transport import ReadStream, TransportStreams, WriteStream
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from lich_core import __version__
from lich_core.mcp.spec import HTTP, STDIO, McpServerSpec, http_refusal, refusal
from lich_core.mcp.tools import (
    ERROR_PREFIX,
    McpTool,
    assign_names,
    convert_result,
    error,
    parameters_schema,
    unavailable,
)
from lich_core.tools.types import ToolContext
from lich_core.vocabulary import CancelToken, ToolResult

log = logging.getLogger("lich.mcp")

# Server states (status()).
DISABLED = "disabled"
REFUSED = "refused"
NOT_STARTED = "not_started"
CONNECTING = "connecting"
CONNECTED = "connected"
FAILED = "failed"

ATTACH_TIMEOUT_S = 15.0
# stdio shutdown: stdin closed, then this long for the server to exit by itself; then SIGTERM to
# the group and this long before SIGKILL.
STDIN_CLOSE_GRACE_S = 0.5
TERM_GRACE_S = 1.0
# How long close() waits for an owner task's own teardown before killing the group itself.
OWNER_STOP_S = 5.0
# A cancelled call's task gets this long to send the courtesy cancel before it is left behind.
CALL_CANCEL_GRACE_S = 1.0
# How long a gone stdio server's exit may take to be seen: the end of its output waits this long
# before the connection is marked lost, so the reason a status shows is its exit code (the child
# watcher reaps it a moment after the end of its output; on a loaded machine, after status() looked).
EXIT_SETTLE_S = 0.5
POLL_S = 0.02
STDERR_TAIL_BYTES = 4096
# A stdio server's message (one line) may not be longer: a server that never ends its line must
# not fill the memory.
MAX_LINE_BYTES = 64 * 1024 * 1024
# At most this many tools/list pages (a server whose cursor never ends cannot hang the attach).
MAX_LIST_PAGES = 100
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


# --- process groups ---

_LIVE_GROUPS: set[int] = set()


def _kill_leftovers() -> None:
    for pgid in list(_LIVE_GROUPS):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


atexit.register(_kill_leftovers)


def _group_members(pgid: int) -> list[int] | None:
    """Live (not zombie) processes in the group, from /proc; None when /proc cannot tell."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the `(comm)` field: state, ppid, pgrp, ...
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry))
    return members


def _group_alive(pgid: int) -> bool:
    """Whether the group has a live member. Signal 0 first (cheap; ESRCH proves it is gone); then
    /proc, because members that are only zombies (orphans nobody reaps) still answer signal 0."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    members = _group_members(pgid)
    return True if members is None else bool(members)


async def _wait_group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL_S)
    return True


async def _kill_group(pgid: int, term_grace_s: float = TERM_GRACE_S) -> None:
    """SIGTERM the whole group, SIGKILL whatever is left after `term_grace_s`, wait until gone."""
    try:
        if _group_alive(pgid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            if not await _wait_group_gone(pgid, term_grace_s):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                if not await _wait_group_gone(pgid, term_grace_s):
                    log.warning("MCP server process group %d survived SIGKILL", pgid)
                    return
    finally:
        if not _group_alive(pgid):
            _LIVE_GROUPS.discard(pgid)


# --- connections ---


@dataclass
class _Connection:
    """One attempt at a server: its owner task, its session, and how it ended."""

    spec: McpServerSpec
    ready: asyncio.Future[list[mcp_types.Tool]]
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    lost_reason: str = ""
    client: Client | None = None
    scope: anyio.CancelScope | None = None
    stop_requested: bool = False
    task: asyncio.Task[None] | None = None
    process: Any = None  # anyio.abc.Process of a stdio server
    pgid: int | None = None
    stderr_tail: bytearray = field(default_factory=bytearray)
    http_status: int | None = None  # the last HTTP error status an HTTP server answered

    def mark_lost(self, reason: str) -> None:
        if not self.lost.is_set():
            self.lost_reason = reason
            self.lost.set()

    def stop(self) -> None:
        self.stop_requested = True
        if self.scope is not None:
            self.scope.cancel()

    def stderr_line(self) -> str:
        lines = [
            line.strip()
            for line in self.stderr_tail.decode("utf-8", "replace").splitlines()
            if line.strip()
        ]
        return lines[-1][-300:] if lines else ""

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.returncode

    def ended_now(self) -> str:
        """ended() without waiting: what is known at this moment."""
        code = self.exit_code()
        if code is not None:
            what = (
                f"the server exited with code {code}"
                if code >= 0
                else f"the server was killed by signal {-code}"
            )
            line = self.stderr_line()
            return f"{what}: {line}" if line else what
        if self.spec.transport == HTTP and self.http_status is not None:
            return f"HTTP {self.http_status} from {self.spec.url}"
        if self.lost_reason:
            return self.lost_reason
        return (
            "the connection closed"
            if self.spec.transport == STDIO
            else f"the connection to {self.spec.url} closed"
        )

    async def wait_for_exit(self, timeout_s: float = EXIT_SETTLE_S) -> None:
        """Up to `timeout_s` for a stdio server's exit to be seen (its exit code known)."""
        if self.process is not None:
            deadline = time.monotonic() + timeout_s
            while self.process.returncode is None and time.monotonic() < deadline:
                await asyncio.sleep(POLL_S)

    async def ended(self, timeout_s: float = EXIT_SETTLE_S) -> str:
        """Why the connection is gone: the stdio server's exit code and last stderr line if it
        exited (waiting up to `timeout_s` for the exit to be seen), else the recorded reason."""
        await self.wait_for_exit(timeout_s)
        return self.ended_now()


@dataclass
class _Server:
    spec: McpServerSpec
    state: str
    last_error: str | None = None
    conn: _Connection | None = None
    # The server's tools from its last listing, by their own name, and the lich names given.
    remote_tools: dict[str, mcp_types.Tool] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    tools: dict[str, McpTool] = field(default_factory=dict)


class McpManager:
    """The MCP servers of one tool runtime: attach, call, status, close. See the module docstring."""

    def __init__(
        self,
        specs: Sequence[McpServerSpec],
        *,
        work_dir: str | os.PathLike[str],
        tool_env: Mapping[str, str],
        source_env: Mapping[str, str] | None = None,
        reserved_names: Sequence[str] = (),
        attach_timeout_s: float = ATTACH_TIMEOUT_S,
        launch_check: Callable[[McpServerSpec], str | None] | None = None,
    ) -> None:
        """`tool_env`: the tools' (scrubbed) environment, which stdio servers start with (plus
        their entry's env); `source_env`: where `headers_env` variables are read (the process
        environment by default); `reserved_names`: tool names MCP tools must not take;
        `launch_check`: asked before each start of a stdio server, its answer a reason not to
        start it (the workspace changed since the user's yes: lich_core.trust)."""
        self.work_dir = Path(work_dir)
        self.tool_env = dict(tool_env)
        self.source_env = source_env
        self.attach_timeout_s = attach_timeout_s
        self.launch_check = launch_check
        self._reserved = set(reserved_names)
        self._servers: dict[str, _Server] = {}
        for spec in specs:
            reason = refusal(spec)
            if not spec.enabled:
                self._servers[spec.name] = _Server(spec, DISABLED)
            elif reason is not None:
                log.warning("%s", reason)
                self._servers[spec.name] = _Server(spec, REFUSED, reason)
            else:
                self._servers[spec.name] = _Server(spec, NOT_STARTED)
        self._attach_task: asyncio.Future[None] | None = None
        self._closed = False
        self._tools_made = 0

    # --- what the runtime and the language server read ---

    def _refresh(self) -> None:
        """A connected server whose connection is gone (it exited while idle) is failed now."""
        for server in self._servers.values():
            conn = server.conn
            if server.state == CONNECTED and (conn is None or conn.lost.is_set()):
                server.state = FAILED
                server.last_error = (
                    conn.ended_now() if conn is not None else "the connection closed"
                )
                log.warning("MCP server %s is unavailable: %s", server.spec.name, server.last_error)

    def status(self) -> list[dict[str, Any]]:
        """One entry per configured server: name, transport, state, tools, last_error."""
        self._refresh()
        return [
            {
                "name": name,
                "transport": server.spec.transport,
                "state": server.state,
                "tools": len(server.remote_tools) if server.state == CONNECTED else 0,
                "last_error": server.last_error,
            }
            for name, server in self._servers.items()
        ]

    def tools(self) -> list[McpTool]:
        """Every tool made so far (config order, then listing order); the runtime registers new ones."""
        return [tool for server in self._servers.values() for tool in server.tools.values()]

    @property
    def tools_made(self) -> int:
        """How many tools `tools()` lists: it only grows (a tool, once made, stays)."""
        return self._tools_made

    def needs_attach(self) -> bool:
        if self._closed:
            return False
        self._refresh()
        if self._attach_task is not None and not self._attach_task.done():
            return True
        return any(server.state in (NOT_STARTED, FAILED) for server in self._servers.values())

    # --- attach ---

    async def attach(self, cancel: CancelToken | None = None) -> None:
        """Start what is not started or failed (in parallel, each within the attach timeout).

        Safe to call concurrently: callers share one attach. Returns when it is done, or as soon
        as `cancel` fires (the attach goes on for the others). Never raises, except
        CancelledError when the calling task itself is cancelled.
        """
        if not self.needs_attach():
            return
        if self._attach_task is None or self._attach_task.done():
            self._attach_task = asyncio.ensure_future(self._attach_all())
        task = self._attach_task
        if cancel is None:
            await asyncio.shield(task)
            return
        if cancel.cancelled:
            return
        cancel_wait = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({task, cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancel_wait.cancel()

    async def _attach_all(self) -> None:
        try:
            pending = [
                server for server in self._servers.values() if server.state in (NOT_STARTED, FAILED)
            ]
            if pending:
                await asyncio.gather(*(self._attach_one(server) for server in pending))
            self._name_tools()
        except Exception:  # noqa: BLE001 - a bug here must not fail the run
            log.exception("MCP attach failed")

    async def _attach_one(self, server: _Server) -> None:
        old = server.conn
        if old is not None:
            await self._stop(old)
        if self._closed:
            return
        refused = (
            self.launch_check(server.spec)
            if self.launch_check and server.spec.transport == STDIO
            else None
        )
        if refused is not None:
            server.state, server.last_error = FAILED, refused
            log.warning("MCP server %s not started: %s", server.spec.name, refused)
            return
        server.state = CONNECTING
        loop = asyncio.get_running_loop()
        conn = _Connection(server.spec, ready=loop.create_future())
        # Read the outcome even when nobody waits for it any more (no "never retrieved" warning).
        conn.ready.add_done_callback(lambda ready: ready.cancelled() or ready.exception())
        server.conn = conn
        conn.task = asyncio.ensure_future(self._own(server, conn))
        waiters: set[asyncio.Future[Any]] = {conn.ready, conn.task}
        try:
            done, _ = await asyncio.wait(
                waiters, timeout=self.attach_timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if conn.ready in done and not conn.ready.cancelled() and conn.ready.exception() is None:
                listing = conn.ready.result()
                server.remote_tools = {tool.name: tool for tool in listing}
                server.state = CONNECTED
                server.last_error = None
                log.info("MCP server %s connected: %d tools", server.spec.name, len(listing))
                return
            if (
                conn.ready.done()
                and not conn.ready.cancelled()
                and conn.ready.exception() is not None
            ):
                reason = str(conn.ready.exception())
            elif not done:
                reason = f"no answer within {self.attach_timeout_s:g} s of starting"
            else:
                reason = await conn.ended()
        except asyncio.CancelledError:
            await self._stop(conn)
            server.state = FAILED
            server.last_error = "attach cancelled"
            raise
        await self._stop(conn)
        if self._closed:  # stopped by close(), not a failure of the server
            server.state, server.last_error = NOT_STARTED, None
            return
        server.state = FAILED
        server.last_error = reason
        log.warning("MCP server %s failed to attach: %s", server.spec.name, reason)

    def _name_tools(self) -> None:
        """Names for tools no earlier listing had, in config order; existing names are kept."""
        taken = set(self._reserved)
        for server in self._servers.values():
            taken.update(server.names.values())
        for name, server in self._servers.items():
            if server.state != CONNECTED:
                continue
            new = [tool for tool in server.remote_tools if tool not in server.names]
            if new:
                assigned = assign_names(name, new, taken)
                server.names.update(assigned)
                taken.update(assigned.values())
            for remote, tool in server.remote_tools.items():
                if remote in server.tools:
                    continue
                server.tools[remote] = McpTool(
                    server.names[remote],
                    name,
                    remote,
                    tool.description,
                    tool.input_schema,
                    self.call,
                )
                self._tools_made += 1

    # --- the owner task ---

    async def _own(self, server: _Server, conn: _Connection) -> None:
        """Hold one connection open (see the module docstring); never raises."""
        try:
            with anyio.CancelScope() as scope:
                conn.scope = scope
                if conn.stop_requested:
                    scope.cancel()
                async with contextlib.AsyncExitStack() as stack:
                    transport = self._transport(conn)
                    client = Client(
                        transport,
                        cache=None,
                        client_info=mcp_types.Implementation(name="lich", version=__version__),
                    )
                    await stack.enter_async_context(client)
                    listing = await self._list_tools(client)
                    conn.client = client
                    if not conn.ready.done():
                        conn.ready.set_result(listing)
                    await conn.lost.wait()
            if not conn.ready.done():
                conn.ready.set_exception(_AttachError("stopped before it was ready"))
            if (
                not conn.stop_requested
                and server.conn is conn
                and server.state in (CONNECTED, FAILED)
            ):
                # Lost while connected (a crash between calls, or seen by a call): say why.
                reason = await conn.ended()
                if server.conn is conn and server.state in (CONNECTED, FAILED):
                    if server.state == CONNECTED:
                        log.warning("MCP server %s is unavailable: %s", server.spec.name, reason)
                    server.state, server.last_error = FAILED, reason
        except asyncio.CancelledError:
            # A native cancel (close() gave up waiting); the connection is gone either way.
            if not conn.ready.done():
                conn.ready.set_exception(_AttachError("stopped before it was ready"))
        except BaseException as err:  # noqa: BLE001 - the owner reports, it never raises
            reason = await self._failure_reason(conn, err)
            if not conn.ready.done():
                conn.ready.set_exception(_AttachError(reason))
            conn.mark_lost(reason)
            if server.conn is conn and server.state == CONNECTED:
                server.state = FAILED
                server.last_error = reason
            if not isinstance(err, Exception):
                raise
        finally:
            conn.client = None
            conn.mark_lost(conn.lost_reason)
            if conn.pgid is not None:
                await _kill_group(conn.pgid)

    async def _failure_reason(self, conn: _Connection, err: BaseException) -> str:
        errors = _leaf_errors(err)
        for leaf in errors:
            if isinstance(leaf, _AttachError):
                return str(leaf)
        if conn.process is not None and _closed_error(errors):
            return (
                await conn.ended()
            )  # it went away before answering: its exit code and stderr say why
        leaf = errors[0] if errors else err
        if isinstance(leaf, httpx2.HTTPStatusError):
            return f"HTTP {leaf.response.status_code} from {conn.spec.url}"
        if isinstance(leaf, httpx2.TransportError):
            return f"cannot reach {conn.spec.url}: {type(leaf).__name__}: {leaf}"
        text = str(leaf) or type(leaf).__name__
        if not isinstance(leaf, MCPError):
            text = f"{type(leaf).__name__}: {text}"
        if conn.http_status is not None:
            text = f"HTTP {conn.http_status} from {conn.spec.url}: {text}"
        return text

    async def _list_tools(self, client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    @asynccontextmanager
    async def _transport(self, conn: _Connection) -> AsyncIterator[TransportStreams]:
        inner = self._stdio(conn) if conn.spec.transport == STDIO else self._http(conn)
        async with inner as (read_stream, write_stream):
            listings: set[Any] = set()
            yield _ListingRepair(read_stream, listings), _ListingWatch(write_stream, listings)

    @asynccontextmanager
    async def _http(self, conn: _Connection) -> AsyncIterator[TransportStreams]:
        spec = conn.spec
        reason = http_refusal(spec.url)
        if reason is not None:  # refused at construction; checked again here, where it counts
            raise _AttachError(reason)
        source = os.environ if self.source_env is None else self.source_env
        headers: dict[str, str] = {}
        for header, variable in spec.headers_env.items():
            value = source.get(variable)
            if not value:
                raise _AttachError(
                    f"headers_env: the environment variable {variable} (for the {header} header) is not set"
                )
            headers[header] = value

        async def record_status(response: httpx2.Response) -> None:
            if response.status_code >= 400:
                conn.http_status = response.status_code

        # Loopback servers are reached directly, never through a proxy from the environment.
        direct = spec.url.startswith("http://")
        async with httpx2.AsyncClient(
            headers=headers,
            timeout=HTTP_TIMEOUT,
            trust_env=not direct,
            event_hooks={"response": [record_status]},
        ) as http:
            async with streamable_http_client(spec.url, http_client=http) as streams:
                yield streams

    @asynccontextmanager
    async def _stdio(self, conn: _Connection) -> AsyncIterator[TransportStreams]:
        """A stdio transport like the SDK's, that runs the server in a process group we know."""
        spec = conn.spec
        cwd = self.work_dir / spec.cwd if spec.cwd else self.work_dir
        if not cwd.is_dir():
            raise _AttachError(f"cwd {cwd} is not a directory")
        env = {**self.tool_env, **spec.env}
        try:
            process = await anyio.open_process(
                [spec.command, *spec.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as err:
            raise _AttachError(f"cannot start {spec.command}: {err.strerror or err}") from None
        conn.process = process
        conn.pgid = process.pid
        _LIVE_GROUPS.add(process.pid)
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

        async def read_stdout() -> None:
            assert process.stdout is not None
            buffer = bytearray()
            try:
                async with read_send:
                    async for chunk in process.stdout:
                        scan = len(
                            buffer
                        )  # where no newline was before: only the new bytes are searched
                        buffer.extend(chunk)
                        start = 0
                        while (end := buffer.find(b"\n", max(start, scan))) >= 0:
                            line = bytes(buffer[start:end]).strip()
                            start = end + 1
                            if line:
                                await read_send.send(_parse_line(line))
                        del buffer[:start]
                        if len(buffer) > MAX_LINE_BYTES:
                            conn.mark_lost(
                                f"the server sent a message over {MAX_LINE_BYTES // (1024 * 1024)} MiB"
                            )
                            return
                await (
                    conn.wait_for_exit()
                )  # the end of its output: the status then shows the exit code
            except (
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
                anyio.EndOfStream,
                OSError,
            ):
                pass
            finally:
                conn.mark_lost("the server closed its output")

        async def write_stdin() -> None:
            assert process.stdin is not None
            try:
                async with write_recv:
                    async for message in write_recv:
                        data = (
                            message.message.model_dump_json(by_alias=True, exclude_unset=True)
                            + "\n"
                        )
                        await process.stdin.send(data.encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                conn.mark_lost("the server closed its input")
                await read_send.aclose()

        async def read_stderr() -> None:
            assert process.stderr is not None
            with contextlib.suppress(
                anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError
            ):
                async for chunk in process.stderr:
                    conn.stderr_tail.extend(chunk)
                    del conn.stderr_tail[:-STDERR_TAIL_BYTES]
                    if log.isEnabledFor(logging.DEBUG):
                        log.debug(
                            "MCP server %s stderr: %s",
                            spec.name,
                            chunk.decode("utf-8", "replace").rstrip(),
                        )

        async with anyio.create_task_group() as group:
            group.start_soon(read_stdout)
            group.start_soon(write_stdin)
            group.start_soon(read_stderr)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop_process(process)
                group.cancel_scope.cancel()

    # --- calls ---

    async def call(
        self, server_name: str, tool: str, args: dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """Call `tool` on the server; never raises (CancelledError aside)."""
        server = self._servers.get(server_name)
        if server is None:
            return unavailable(server_name, "not configured")
        self._refresh()
        conn = server.conn
        client = conn.client if conn is not None else None
        if server.state != CONNECTED or conn is None or client is None or conn.lost.is_set():
            return unavailable(
                server_name, server.last_error or f"the server is {server.state.replace('_', ' ')}"
            )
        if tool not in server.remote_tools:
            return error(f"{ERROR_PREFIX}: {server_name} no longer lists the tool {tool}")
        cancel = ctx.cancel
        if cancel.cancelled:
            return error("cancelled")
        call = asyncio.ensure_future(client.call_tool(tool, args))
        lost_wait = asyncio.ensure_future(conn.lost.wait())
        cancel_wait = asyncio.ensure_future(cancel.wait())
        try:
            await asyncio.wait({call, lost_wait, cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            lost_wait.cancel()
            cancel_wait.cancel()
        if call.done():
            return await self._call_outcome(server, conn, call)
        call.cancel()
        # Let the SDK send its courtesy cancel and drop the request id; bounded.
        await asyncio.wait({call}, timeout=CALL_CANCEL_GRACE_S)
        if cancel.cancelled:
            return error("cancelled")
        reason = await conn.ended()
        self._mark_failed(server, conn, reason)
        return unavailable(server_name, reason)

    async def _call_outcome(
        self, server: _Server, conn: _Connection, call: asyncio.Future[mcp_types.CallToolResult]
    ) -> ToolResult:
        name = server.spec.name
        if call.cancelled():
            return error("cancelled")
        err = call.exception()
        if err is None:
            return convert_result(call.result())
        if _closed_error([err]) or conn.lost.is_set():
            reason = await conn.ended()
            self._mark_failed(server, conn, reason)
            return unavailable(name, reason)
        if isinstance(err, httpx2.TransportError):
            reason = f"cannot reach {conn.spec.url}: {type(err).__name__}"
            self._mark_failed(server, conn, reason)
            return unavailable(name, reason)
        if isinstance(err, MCPError):
            return error(f"{ERROR_PREFIX}: {err.message} (code {err.code})")
        return error(f"{ERROR_PREFIX}: {type(err).__name__}: {err}")

    def _mark_failed(self, server: _Server, conn: _Connection, reason: str) -> None:
        conn.mark_lost(reason)
        if server.conn is conn and server.state == CONNECTED:
            server.state = FAILED
            server.last_error = reason
            log.warning("MCP server %s is unavailable: %s", server.spec.name, reason)

    # --- stopping ---

    async def _stop(self, conn: _Connection) -> None:
        """Stop one connection: cancel its owner, wait (bounded), kill its group whatever happened."""
        conn.stop()
        task = conn.task
        if task is not None and not task.done():
            done, _ = await asyncio.wait({task}, timeout=OWNER_STOP_S)
            if not done:
                log.warning("MCP server %s: shutdown hangs; killing it", conn.spec.name)
                if conn.pgid is not None:
                    await _kill_group(conn.pgid, term_grace_s=0.2)
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
        if conn.pgid is not None:
            await _kill_group(conn.pgid)

    async def close(self) -> None:
        """Stop every server (stdio ones with their whole process group). Idempotent; never
        raises (CancelledError aside). The manager attaches nothing after it."""
        self._closed = True
        attach = self._attach_task
        if attach is not None and not attach.done():
            for server in self._servers.values():
                if server.conn is not None:
                    server.conn.stop()
            await asyncio.wait({attach}, timeout=OWNER_STOP_S + 2.0)
        conns = [server.conn for server in self._servers.values() if server.conn is not None]
        if conns:
            results = await asyncio.gather(
                *(self._stop(conn) for conn in conns), return_exceptions=True
            )
            for result in results:
                if isinstance(result, BaseException):
                    log.warning("MCP close: %s", result)
        for server in self._servers.values():
            if server.state in (CONNECTED, CONNECTING):
                server.state = NOT_STARTED
            server.conn = None

    @property
    def closed(self) -> bool:
        return self._closed


# --- tool listings the SDK would reject ---
#
# The SDK validates a tools/list result as a whole against the negotiated protocol's schema: one
# tool with a missing or non-object input schema fails the listing, and with it the server.
# Between the transport and the session, the ids of outgoing tools/list requests are noted and
# their answers repaired first: an unusable input schema becomes {"type": "object"} (what lich
# would offer anyway, lich_core.mcp.tools.parameters_schema), an unusable output schema is dropped.


def _repair_listing(result: Any) -> None:
    tools = result.get("tools") if isinstance(result, dict) else None
    if not isinstance(tools, list):
        return
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        schema = tool.get("inputSchema")
        if parameters_schema(schema) is not schema:
            log.info(
                'MCP tool %r: unusable input schema replaced by {"type": "object"}',
                tool.get("name"),
            )
            tool["inputSchema"] = {"type": "object"}
        output = tool.get("outputSchema")
        if output is not None and parameters_schema(output) is not output:
            del tool["outputSchema"]


class _ListingWatch:
    """The session's write stream, noting the ids of tools/list requests (WriteStream protocol)."""

    def __init__(self, inner: WriteStream[SessionMessage], listings: set[Any]) -> None:
        self._inner = inner
        self._listings = listings

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest) and message.method == "tools/list":
            self._listings.add(message.id)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _ListingWatch:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _ListingRepair:
    """The session's read stream, repairing the answers to noted tools/list requests (ReadStream
    protocol; the sender's context passes through as `last_context`)."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], listings: set[Any]) -> None:
        self._inner = inner
        self._listings = listings

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        item = await self._inner.receive()
        if self._listings and isinstance(item, SessionMessage):
            message = item.message
            if isinstance(message, mcp_types.JSONRPCResponse) and message.id in self._listings:
                self._listings.discard(message.id)
                _repair_listing(message.result)
            elif isinstance(message, mcp_types.JSONRPCError):
                self._listings.discard(message.id)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _ListingRepair:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _ListingRepair:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _AttachError(Exception):
    """A reason the attach failed that is worth showing as it is."""


def _parse_line(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as err:
        log.debug("MCP server sent a line that is not JSON-RPC: %r", line[:200])
        return err


async def _stop_process(process: Any) -> None:
    """Close stdin, give the server a moment to exit, then kill its whole group."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    deadline = time.monotonic() + STDIN_CLOSE_GRACE_S
    while process.returncode is None and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)
    await _kill_group(process.pid)
    for stream in (process.stdout, process.stderr):
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()
    # Reap the leader (already dead: the group is gone) so no zombie is left.
    with contextlib.suppress(Exception):
        with anyio.move_on_after(1.0):
            await process.wait()


def _leaf_errors(err: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or `err` itself (Python 3.10 has no
    BaseExceptionGroup builtin: anyio's backport is duck-typed the same way)."""
    inner = getattr(err, "exceptions", None)
    if isinstance(inner, (list, tuple)) and all(isinstance(item, BaseException) for item in inner):
        leaves: list[BaseException] = []
        for item in inner:
            leaves.extend(_leaf_errors(item))
        return leaves or [err]
    return [err]


def _closed_error(errors: Sequence[BaseException]) -> bool:
    return any(
        (isinstance(err, MCPError) and err.code == mcp_types.CONNECTION_CLOSED)
        or isinstance(
            err, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
        )
        for err in errors
    )
