"""The interpreters python_eval talks to: one child Python (the "live image") per agent run.

Session identity. A run's ToolContext is cloned per call (ToolContext.with_cancel), but every
clone shares the run's `read_state` object, and nothing else the context carries is per run: so
the image registry is keyed by that object. The registry holds it weakly (a weakref.finalize per
key): when the run is over and its ReadState is collected, its image is stopped. Because a caller
may keep a ReadState alive long after its run (the CLI's `lich tool` loads one per process, the
editor's commands keep one per session), an image also stops after IDLE_TIMEOUT_S without a call,
and every image is stopped when this process exits (atexit). No hook in the agent loop is needed.

Process rules. The child runs python_image_child.py under the user's interpreter (sys.executable);
the root's .venv/bin/python (or venv/bin/python) only once the workspace is trusted, since that
file is the repository's and runs whatever the repository put there. It runs in the root, in its
own session and process group, with the scrubbed tool environment (tool_process_env) and stdin
from /dev/null. It talks to us over two pipes made for it (length-prefixed JSON frames; see the
child's docstring), never over its stdout. Stopping an image kills its whole tree the way the
terminal tool does (lich_core/tools/reaper.py): its group, and every process carrying the image's
LICH_CALL_ID marker, so `setsid -f` daemons the code started do not outlive the image.

One call at a time per image (a lock). A call that overruns its budget, or is cancelled, gets a
SIGINT (KeyboardInterrupt in the user's code); if the child does not answer within a short grace
the group is killed and a fresh interpreter started. A child that died between calls is restarted
at the next call, which says so.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lich_core.settings import settings_of
from lich_core.tools.reaper import CallReaper

CHILD_SCRIPT = Path(__file__).with_name("python_image_child.py")
VENV_PYTHONS = (".venv/bin/python", "venv/bin/python")
IDLE_TIMEOUT_S = 600.0
# How long a fresh interpreter may take to say hello.
START_TIMEOUT_S = 30.0
# After a SIGINT, how long the child has to report back before its group is killed.
INTERRUPT_GRACE_S = 2.0
# On cancellation the whole stop must fit in a second.
CANCEL_GRACE_S = 0.5
MAX_FRAME_BYTES = 64 * 1024 * 1024
# The parent's own cap on forwarded output (the child caps at the same size).
MAX_OUTPUT_CHARS = 1_048_576

RESTARTED_NOTE = "the interpreter was restarted; earlier state is gone"


class ImageError(Exception):
    """The interpreter could not be started or stopped talking."""


def workspace_trusted(settings: Mapping[str, Any]) -> bool:
    """Whether the user trusted this workspace's config (lich_core.trust): a loaded Config says so
    in `trust`; plain settings (a direct tool call) are untrusted."""
    return settings_of(settings).workspace_trusted


def repository_python(root: Path) -> Path | None:
    """The root's virtualenv Python (.venv, then venv) when there is an executable one."""
    for rel in VENV_PYTHONS:
        candidate = root / rel
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def interpreter_for(root: Path, *, trusted: bool) -> str:
    """The Python a tool starts for `root`: the repository's virtualenv Python only in a trusted
    workspace (an untrusted repository's `.venv/bin/python` is its own program), else the user's
    (the one lich runs on)."""
    if trusted:
        venv = repository_python(root)
        if venv is not None:
            return str(venv)
    return sys.executable


@dataclass
class EvalOutcome:
    """What one evaluation came to: ok, an eval error, interrupted (deadline or cancel), or lost."""

    ok: bool = False
    output: str = ""
    dropped: int = 0
    value: str | None = None
    error: str | None = None
    traceback: str | None = None
    # The deadline/cancel interrupt: "answered" (the child reported back) or "killed" (it did not).
    interrupted: str | None = None
    # The child died during the call (os._exit, a crash): state is gone.
    died: bool = False
    notes: list[str] = field(default_factory=list)


class PythonImage:
    """One child interpreter, bound to the event loop that started it."""

    def __init__(self, python: str, root: Path, env: Mapping[str, str]) -> None:
        self.python = python
        self.root = root
        self.env = dict(env)
        self.lock = asyncio.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.reader: asyncio.StreamReader | None = None
        self.transport: asyncio.BaseTransport | None = None
        self.write_fd: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ids = itertools.count(1)
        self.last_used = time.monotonic()
        self.starts = 0
        # The running child's tree (its marker, its pid); a new one per start.
        self.reaper: CallReaper | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and self.reader is not None

    async def start(self) -> None:
        self.stop()
        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        reaper = CallReaper()
        try:
            self.process = subprocess.Popen(  # noqa: S603 - our own script under the workspace's Python
                [self.python, "-u", str(CHILD_SCRIPT), str(child_in), str(child_out)],
                cwd=self.root,
                env=reaper.mark(dict(self.env)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(child_in, child_out),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as err:
            for fd in (child_in, parent_out, parent_in, child_out):
                os.close(fd)
            raise ImageError(f"could not start {self.python}: {err.strerror or err}") from err
        reaper.spawned(self.process.pid)
        self.reaper = reaper
        os.close(child_in)
        os.close(child_out)
        self.write_fd = parent_out
        self.loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES)
        self.transport, _ = await self.loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(parent_in, "rb", 0)
        )
        self.reader = reader
        self.starts += 1
        try:
            await asyncio.wait_for(self._read_frame(), START_TIMEOUT_S)  # its hello
        except (asyncio.TimeoutError, ImageError) as err:
            code = self.process.poll()
            self.stop()
            raise ImageError(
                f"the interpreter {self.python} did not start (exit code {code})"
            ) from err

    def stop(self) -> None:
        """SIGKILL the child's whole tree and release the pipes; safe to call from any thread, any
        number of times."""
        process, self.process = self.process, None
        reaper, self.reaper = self.reaper, None
        if process is not None:
            if process.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
            if reaper is not None:
                # No subreaper is held for the image's lifetime (it may live for minutes), so what
                # left the group went to init; the marker in its environment still finds it.
                reaper.kill_leftovers()
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                process.wait(timeout=2)
        if reaper is not None:
            reaper.reap_now()
            reaper.release()
        transport, self.transport = self.transport, None
        if transport is not None:
            loop = self.loop
            try:
                if loop is not None and not loop.is_closed():
                    if _on_loop(loop):
                        transport.close()
                    else:
                        loop.call_soon_threadsafe(transport.close)
            except RuntimeError:
                pass
        self.reader = None
        fd, self.write_fd = self.write_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    async def _read_frame(self) -> dict[str, Any]:
        reader = self.reader
        if reader is None:
            raise ImageError("the interpreter is not running")
        try:
            header = await reader.readexactly(4)
            size = struct.unpack(">I", header)[0]
            if size > MAX_FRAME_BYTES:
                raise ImageError(f"protocol error: a {size}-byte frame")
            body = await reader.readexactly(size)
        except asyncio.IncompleteReadError as err:
            raise ImageError("the interpreter exited") from err
        message = json.loads(body.decode("utf-8", "replace"))
        if not isinstance(message, dict):
            raise ImageError("protocol error: a frame that is not an object")
        return message

    def _send(self, message: dict[str, Any]) -> None:
        fd = self.write_fd
        if fd is None:
            raise ImageError("the interpreter is not running")
        data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
        view = memoryview(struct.pack(">I", len(data)) + data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as err:
            raise ImageError("the interpreter exited") from err

    def interrupt(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGINT)

    async def evaluate(self, code: str, timeout_s: float, cancelled: asyncio.Event) -> EvalOutcome:
        """Run `code`; interrupt at `timeout_s` or when `cancelled` is set (then answer within a second).

        Raises asyncio.CancelledError when the awaiting task is cancelled, after the same
        interrupt-or-kill cleanup (bounded by CANCEL_GRACE_S).
        """
        async with self.lock:
            outcome = EvalOutcome()
            if self.loop is not None and self.loop is not asyncio.get_running_loop():
                self.stop()  # started on a loop that is gone (a test's, a previous asyncio.run)
            if not self.alive():
                if self.starts:
                    outcome.notes.append(f"the interpreter had exited; {RESTARTED_NOTE}")
                await self.start()
            self.last_used = time.monotonic()
            request_id = next(self.ids)
            self._send({"id": request_id, "code": code})
            chunks: list[str] = []
            kept = 0

            async def collect() -> dict[str, Any]:
                nonlocal kept
                while True:
                    frame = await self._read_frame()
                    if frame.get("id") != request_id:
                        continue  # a stale frame of an earlier, abandoned request
                    if frame.get("type") == "out":
                        text = str(frame.get("text", ""))
                        room = MAX_OUTPUT_CHARS - kept
                        if len(text) > room:
                            outcome.dropped += len(text) - room
                            text = text[: max(room, 0)]
                        if text:
                            chunks.append(text)
                            kept += len(text)
                    elif frame.get("type") == "result":
                        return frame

            work = asyncio.ensure_future(collect())
            stop_wait = asyncio.ensure_future(cancelled.wait())
            try:
                try:
                    done, _ = await asyncio.wait(
                        {work, stop_wait}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
                    )
                except asyncio.CancelledError:
                    await self._interrupt_or_kill(work, CANCEL_GRACE_S, outcome)
                    raise
                if work in done:
                    self._take_result(work, outcome)
                else:
                    grace = CANCEL_GRACE_S if cancelled.is_set() else INTERRUPT_GRACE_S
                    await self._interrupt_or_kill(work, grace, outcome)
            finally:
                stop_wait.cancel()
                if not work.done():
                    work.cancel()
                self.last_used = time.monotonic()
            outcome.output = "".join(chunks)
            return outcome

    def _take_result(self, work: asyncio.Future[dict[str, Any]], outcome: EvalOutcome) -> None:
        err = work.exception()
        if err is not None:
            outcome.died = True
            code: int | None = None
            if self.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    code = self.process.wait(timeout=1)
            self.stop()
            outcome.error = f"the interpreter exited during the call (exit code {code}); a fresh one starts at the next call"
            return
        frame = work.result()
        outcome.ok = bool(frame.get("ok"))
        outcome.value = frame.get("value")
        outcome.error = frame.get("error")
        outcome.traceback = frame.get("traceback")
        outcome.dropped += int(frame.get("dropped") or 0)

    async def _interrupt_or_kill(
        self, work: asyncio.Future[dict[str, Any]], grace_s: float, outcome: EvalOutcome
    ) -> None:
        self.interrupt()
        done, _ = await asyncio.wait({work}, timeout=grace_s)
        if work in done and work.exception() is None:
            self._take_result(work, outcome)
            outcome.interrupted = "answered"
            return
        outcome.interrupted = "killed"
        self.stop()


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


# --- the registry: one image per run ---


class ImageRegistry:
    def __init__(self) -> None:
        self._images: dict[int, PythonImage] = {}
        self._finalizers: dict[int, weakref.finalize[Any, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: object, python: str, root: Path, env: Mapping[str, str]) -> PythonImage:
        """The image of `key` (a run's ReadState), made on first use; idle images are stopped first."""
        self.stop_idle()
        ident = id(key)
        with self._lock:
            image = self._images.get(ident)
            if image is None or image.python != python or image.root != root:
                if image is not None:
                    image.stop()
                image = PythonImage(python, root, env)
                self._images[ident] = image
                if ident not in self._finalizers:
                    try:
                        self._finalizers[ident] = weakref.finalize(key, self._forget, ident)
                    except (
                        TypeError
                    ):  # not weakly referenceable: the idle timeout and atexit stop it
                        pass
            image.env = dict(env)
            return image

    def _forget(self, ident: int) -> None:
        with self._lock:
            image = self._images.pop(ident, None)
            self._finalizers.pop(ident, None)
        if image is not None:
            image.stop()

    def stop_idle(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [
                image
                for image in self._images.values()
                if image.process is not None
                and not image.lock.locked()
                and now - image.last_used > IDLE_TIMEOUT_S
            ]
        for image in idle:
            image.stop()

    def images(self) -> list[PythonImage]:
        with self._lock:
            return list(self._images.values())

    def stop_all(self) -> None:
        with self._lock:
            images = list(self._images.values())
            self._images.clear()
            finalizers = list(self._finalizers.values())
            self._finalizers.clear()
        for finalizer in finalizers:
            finalizer.detach()
        for image in images:
            image.stop()


REGISTRY = ImageRegistry()
atexit.register(REGISTRY.stop_all)
