"""A scripted ACP client for the tests: records session updates, answers fs/* from in-memory
buffers (optionally), answers permission requests from a script."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 20.0


class ScriptedClient:
    def __init__(self, *, fs_read: bool = False, fs_write: bool = False) -> None:
        self.fs_read = fs_read
        self.fs_write = fs_write
        self.buffers: dict[str, str] = {}  # absolute path -> unsaved text
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.updates: list[Any] = []
        self.permission_requests: list[Any] = []
        self.answers: list[str | None] = []  # option ids; None = cancelled
        self.on_read: Callable[[str], None] | None = None
        self.changed = asyncio.Event()

    # --- the Client protocol ---

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permission_requests.append((tool_call, options))
        self._changed()
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._changed()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any) -> Any:
        self.reads.append(path)
        if path in self.buffers:
            text = self.buffers[path]
        elif os.path.isfile(path):
            text = Path(path).read_text()
        else:
            raise RequestError.resource_not_found(path)
        if self.on_read is not None:
            self.on_read(path)
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

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

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=self.fs_read, write_text_file=self.fs_write))


def write_user_config(provider_url: str, **extra: Any) -> None:
    """The provider goes into lich's user config (an ACP client cannot pass lich config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ["HOME"], ".config")
    path = Path(base) / "lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "providers": [{"name": "fake", "kind": "openai_compat", "base_url": provider_url + "/v1", "model": "fake-model"}],
        **extra,
    }
    path.write_text(json.dumps(config))


@contextlib.asynccontextmanager
async def acp_agent(client: ScriptedClient) -> AsyncIterator[Any]:
    """`python -m lich_acp` over stdio, initialized; yields the client-side connection."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    async with spawn_agent_process(
        client, sys.executable, "-m", "lich_acp", env=env, cwd=ROOT, transport_kwargs={"stderr": None}
    ) as (conn, _process):
        response = await asyncio.wait_for(
            conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=client.capabilities()), WAIT_S
        )
        conn.initialize_response = response
        yield conn
