"""The program python_eval's interpreter runs (the "live image"): `python python_image_child.py IN OUT`.

It runs under the workspace's own Python, so it imports nothing from lich_core and only the
standard library. IN and OUT are pipe descriptors the parent created; every message on them is a
frame: a 4-byte big-endian length, then that many bytes of UTF-8 JSON. The user's code never sees
those descriptors through sys.stdout, so nothing it prints can corrupt the protocol.

Parent to child: {"id": N, "code": "..."}.
Child to parent: {"type": "hello", "pid": P, "python": "3.x.y"} once at start; while a request runs
{"type": "out", "id": N, "text": "..."} (captured output, in order); then one
{"type": "result", "id": N, "ok": bool, "value": str | None, "error": str | None,
"traceback": str | None, "dropped": int, "interrupted": bool}.

Output: sys.stdout and sys.stderr are replaced by writers into one capture sink, and file
descriptors 1 and 2 point to a pipe a thread reads into the same sink, so a subprocess's or a C
extension's output is caught too. The sink forwards at most MAX_OUTPUT_CHARS per request; past that
it only counts what it drops. SIGINT raises KeyboardInterrupt only while user code runs; elsewhere
(reading a request, writing a frame) it is ignored, so the parent's interrupt cannot break a frame.
"""

from __future__ import annotations

import ast
import codecs
import io
import json
import linecache
import os
import reprlib
import signal
import struct
import sys
import threading
import time
import traceback
from typing import Any

MAX_OUTPUT_CHARS = 1_048_576
FLUSH_CHARS = 65_536
FLUSH_INTERVAL_S = 0.05
MAX_TRACEBACK_FRAMES = 8
MAX_TRACEBACK_CHARS = 4_000
MAX_VALUE_CHARS = 20_000
# reprlib calls visited by one bounded repr; past it every part prints as "...".
MAX_REPR_NODES = 5_000
SYNC_WAIT_S = 0.5
FILENAME_PREFIX = "<python_eval-"


# --- frames ---


class Interrupts:
    """SIGINT raises KeyboardInterrupt only while user code runs, and never inside a frame write."""

    def __init__(self) -> None:
        self.armed = False
        self.shielded = 0
        self.pending = False
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        if not self.armed:
            return
        if self.shielded:
            self.pending = True
            return
        self.armed = False
        raise KeyboardInterrupt

    def shield(self) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        self.shielded += 1
        return True

    def unshield(self) -> None:
        self.shielded -= 1
        if not self.shielded and self.pending and self.armed:
            self.pending = False
            self.armed = False
            raise KeyboardInterrupt


class Channel:
    def __init__(self, in_fd: int, out_fd: int, interrupts: Interrupts) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.interrupts = interrupts
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False).encode("utf-8", "replace")
        frame = struct.pack(">I", len(data)) + data
        shielded = self.interrupts.shield()
        try:
            with self.lock:
                view = memoryview(frame)
                while view:
                    written = os.write(self.out_fd, view)
                    view = view[written:]
        finally:
            if shielded:
                self.interrupts.unshield()

    def _read_exact(self, size: int) -> bytes | None:
        chunks: list[bytes] = []
        while size:
            chunk = os.read(self.in_fd, size)
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> dict[str, Any] | None:
        header = self._read_exact(4)
        if header is None:
            return None
        body = self._read_exact(struct.unpack(">I", header)[0])
        if body is None:
            return None
        message = json.loads(body.decode("utf-8"))
        return message if isinstance(message, dict) else None


# --- captured output ---


class Sink:
    """Collects what a request prints and forwards it in frames, up to MAX_OUTPUT_CHARS."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.lock = threading.RLock()
        self.request_id: int | None = None
        self.buffer: list[str] = []
        self.buffered = 0
        self.forwarded = 0
        self.dropped = 0
        self.full = False
        self.last_flush = time.monotonic()

    def begin(self, request_id: int) -> None:
        with self.lock:
            self.request_id = request_id
            self.buffer, self.buffered, self.forwarded, self.dropped = [], 0, 0, 0
            self.full = False

    def end(self) -> int:
        with self.lock:
            self.flush()
            self.request_id = None
            return self.dropped

    def write(self, text: str) -> None:
        if not text:
            return
        with self.lock:
            room = MAX_OUTPUT_CHARS - self.forwarded - self.buffered
            if room <= 0:
                self.full = True
                self.dropped += len(text)
                return
            if len(text) >= room:
                self.full = True
                self.dropped += len(text) - room
                text = text[:room]
            self.buffer.append(text)
            self.buffered += len(text)
            if (
                self.buffered >= FLUSH_CHARS
                or time.monotonic() - self.last_flush >= FLUSH_INTERVAL_S
            ):
                self.flush()

    def flush(self) -> None:
        with self.lock:
            self.last_flush = time.monotonic()
            if not self.buffer:
                return
            text = "".join(self.buffer)
            self.buffer, self.buffered = [], 0
            self.forwarded += len(text)
            if self.request_id is not None:
                self.channel.send({"type": "out", "id": self.request_id, "text": text})
            # Output printed between requests (a thread the user started) is forwarded with the
            # next request's frames, where the parent ignores frames of other ids: dropped.


class StreamWriter(io.TextIOBase):
    """sys.stdout / sys.stderr: text into the sink."""

    def __init__(self, sink: Sink, name: str, fd: int) -> None:
        self.sink = sink
        self._name = name
        self._fd = fd

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd

    def write(self, text: Any) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        sink = self.sink
        if sink.full:  # the fast path of a print flood past the cap: count and drop
            sink.dropped += len(text)
        else:
            sink.write(text)
        return len(text)

    def flush(self) -> None:
        self.sink.flush()


class FdCapture:
    """fd 1 and 2 into a pipe; a thread decodes what arrives into the sink.

    sync() writes a marker through the same pipe and waits until the thread has read it, so
    everything written to the descriptors before the end of a request lands in that request.
    """

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 1)
        os.dup2(write_fd, 2)
        os.close(write_fd)
        self.read_fd = read_fd
        self.synced = threading.Condition()
        self.seen = 0
        self.sequence = 0
        threading.Thread(target=self._pump, name="python_eval-fd-capture", daemon=True).start()

    @staticmethod
    def marker(n: int) -> bytes:
        return b"\x00\x1blich-sync-%d\x1b\x00" % n

    def sync(self) -> None:
        self.sequence += 1
        n = self.sequence
        try:
            os.write(1, self.marker(n))
        except OSError:
            return
        with self.synced:
            self.synced.wait_for(lambda: self.seen >= n, timeout=SYNC_WAIT_S)

    def _pump(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = b""
        while True:
            try:
                chunk = os.read(self.read_fd, 65_536)
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            while True:
                start = pending.find(b"\x00\x1blich-sync-")
                if start < 0:
                    # Keep a possible marker prefix at the end for the next read.
                    keep = pending.rfind(b"\x00")
                    if keep < 0 or len(pending) - keep > 32:
                        keep = len(pending)
                    self.sink.write(decoder.decode(pending[:keep]))
                    pending = pending[keep:]
                    break
                end = pending.find(b"\x1b\x00", start + 2)
                if end < 0:
                    self.sink.write(decoder.decode(pending[:start]))
                    pending = pending[start:]
                    if len(pending) > 64:  # not a marker after all
                        self.sink.write(decoder.decode(pending))
                        pending = b""
                    break
                self.sink.write(decoder.decode(pending[:start]))
                number = pending[start + len(b"\x00\x1blich-sync-") : end]
                pending = pending[end + 2 :]
                with self.synced:
                    try:
                        self.seen = max(self.seen, int(number))
                    except ValueError:
                        pass
                    self.synced.notify_all()


def _flusher(sink: Sink) -> None:
    while True:
        time.sleep(FLUSH_INTERVAL_S)
        try:
            sink.flush()
        except Exception:  # noqa: BLE001 - a broken pipe ends the process elsewhere
            return


# --- bounded repr ---


class BoundedRepr(reprlib.Repr):
    """reprlib with kli's bounds: 100 items, 100 characters, depth 20, cycles as [...]."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 20
        self.maxtuple = self.maxlist = self.maxarray = self.maxdict = 100
        self.maxset = self.maxfrozenset = self.maxdeque = 100
        self.maxstring = self.maxlong = self.maxother = 100
        self.active: set[int] = set()
        self.nodes = 0

    def repr1(self, x: Any, level: int) -> str:
        self.nodes += 1
        if self.nodes > MAX_REPR_NODES:
            return "..."
        key = id(x)
        if isinstance(x, (list, dict, set, tuple, frozenset)) or hasattr(x, "__dict__"):
            if key in self.active:
                return (
                    "[...]"
                    if isinstance(x, list)
                    else "{...}"
                    if isinstance(x, (dict, set))
                    else "(...)"
                )
            self.active.add(key)
            try:
                return super().repr1(x, level)
            finally:
                self.active.discard(key)
        return super().repr1(x, level)


def bounded_repr(value: Any) -> str:
    try:
        text = BoundedRepr().repr(value)
    except RecursionError:
        text = f"<{type(value).__name__}: repr too deep>"
    except Exception as err:  # noqa: BLE001 - a broken __repr__ is the user's, not ours
        text = f"<{type(value).__name__}: repr failed: {type(err).__name__}: {err}>"
    if len(text) > MAX_VALUE_CHARS:
        text = text[:MAX_VALUE_CHARS] + "..."
    return text


# --- evaluation ---


def short_traceback(err: BaseException) -> str:
    """The user's frames only (not this module's), the last MAX_TRACEBACK_FRAMES of them, bounded."""
    frames = [
        frame for frame in traceback.extract_tb(err.__traceback__) if frame.filename != __file__
    ]
    frames = frames[-MAX_TRACEBACK_FRAMES:]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.StackSummary.from_list(frames).format()
    lines += traceback.format_exception_only(type(err), err)
    text = "".join(lines)
    if len(text) > MAX_TRACEBACK_CHARS:
        text = text[: MAX_TRACEBACK_CHARS // 2] + "\n...\n" + text[-MAX_TRACEBACK_CHARS // 2 :]
    return text


def describe(err: BaseException) -> str:
    message = str(err)
    if len(message) > 500:
        message = message[:500] + "..."
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def evaluate(
    code: str, request_id: int, namespace: dict[str, Any], interrupts: Interrupts
) -> dict[str, Any]:
    filename = f"{FILENAME_PREFIX}{request_id}>"
    result: dict[str, Any] = {
        "ok": True,
        "value": None,
        "error": None,
        "traceback": None,
        "interrupted": False,
    }
    try:
        tree = ast.parse(code, filename, "exec")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        return {
            **result,
            "ok": False,
            "error": describe(err),
            "traceback": "".join(traceback.format_exception_only(type(err), err)),
        }
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    body = tree.body
    try:
        for index, statement in enumerate(body):
            last = index == len(body) - 1
            if last and isinstance(statement, ast.Expr):
                compiled = compile(ast.Expression(statement.value), filename, "eval")
                interrupts.armed = True
                try:
                    value = eval(compiled, namespace)
                finally:
                    interrupts.armed = False
                if value is not None:
                    namespace["_"] = value
                    result["value"] = bounded_repr(value)
            else:
                compiled = compile(ast.Module([statement], type_ignores=[]), filename, "exec")
                interrupts.armed = True
                try:
                    exec(compiled, namespace)
                finally:
                    interrupts.armed = False
    except KeyboardInterrupt as err:
        result.update(
            ok=False, error=describe(err), traceback=short_traceback(err), interrupted=True
        )
    except BaseException as err:  # noqa: BLE001 - SystemExit included: the image keeps running
        result.update(ok=False, error=describe(err), traceback=short_traceback(err))
    return result


def main(argv: list[str]) -> int:
    interrupts = Interrupts()
    channel = Channel(int(argv[1]), int(argv[2]), interrupts)
    sink = Sink(channel)
    capture = FdCapture(sink)
    sys.stdout = StreamWriter(sink, "<stdout>", 1)
    sys.stderr = StreamWriter(sink, "<stderr>", 2)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the process
    threading.Thread(target=_flusher, args=(sink,), name="python_eval-flusher", daemon=True).start()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.path.insert(0, os.getcwd())
    channel.send({"type": "hello", "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        request = channel.receive()
        if request is None:
            return 0
        request_id = int(request.get("id", 0))
        sink.begin(request_id)
        try:
            result = evaluate(str(request.get("code", "")), request_id, namespace, interrupts)
        except BaseException as err:  # noqa: BLE001 - never lose the reply (a late interrupt)
            result = {
                "ok": False,
                "value": None,
                "error": describe(err),
                "traceback": None,
                "interrupted": True,
            }
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001, S110 - the user may have replaced sys.stdout
            pass
        capture.sync()
        dropped = sink.end()
        channel.send({"type": "result", "id": request_id, "dropped": dropped, **result})


if __name__ == "__main__":
    sys.exit(main(sys.argv))
