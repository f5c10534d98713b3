"""Server processes for the tests, forked from a process that has already imported them.

`python -m lich_lsp` spends ~1.3 s of CPU before it reads a byte, nearly all of it creating
lsprotocol's hundreds of attrs classes; `python -m lich_acp` ~1.9 s on the ACP SDK's pydantic
models. The suite starts about a hundred such servers on a 2-core machine, so that import alone
was a fifth of the suite's CPU. Here one zygote process per test worker imports those modules
once, and each test's server is a fork of it that runs the module's `__main__` with the test's
arguments, environment, working directory and stdio: the same code over the same pipes, without
the import. The real start-up (`python -m lich_lsp` from nothing) stays covered by the tests that
start the real command (test_lsp_basics, the editor tests) and by `bench`.

`command("lich_lsp", *args)` is a command line to start instead of `python -m lich_lsp *args`.
It runs prefork_launch.py, a stdlib-only script (`python -I -S`, ~20 ms), which hands its stdio
descriptors, environment and working directory to the zygote over a Unix socket, forwards
SIGTERM/SIGINT to the fork and exits as the fork did (a fork killed by a signal: the launcher is
killed by the same signal). When the launcher dies (SIGKILL), the zygote kills its fork.

The zygote: `python tests/support/prefork.py FD` imports the modules, then serves the listening
Unix socket it inherited as FD until its stdin (a pipe from whoever started it) closes, and kills
its forks on the way out. Its starter binds and listens before the zygote starts, so a launcher
may connect at once: its request waits in the backlog until the imports are done.

Under xdist the controller starts the run's one zygote (`share_with_workers`, from
tests/conftest.py) and the workers inherit its socket path in LICH_TEST_ZYGOTE_SOCKET: the
imports are paid once per run instead of once per worker (~2.8 s of CPU each). A run without
xdist starts its zygote on the first `command`.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import importlib
import json
import os
import pkgutil
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

LAUNCHER = Path(__file__).resolve().with_name("prefork_launch.py")
# What the servers import, at start-up or on their first task (the tool runtime imports every
# tool's module); a module left out is imported by each fork as before. Packages are walked.
PRELOAD_PACKAGES = ("lich_core", "lich_lsp", "lich_acp")
PRELOAD_MODULES = (
    "acp",
    "httpx",
    "httpcore._async.http11",
    "anyio._backends._asyncio",
    "pygls.progress",
)
SHARED_SOCKET_ENV = "LICH_TEST_ZYGOTE_SOCKET"  # set by the xdist controller for its workers
REQUEST_MAX_BYTES = 1 << 20  # one start request: argv, environment and working directory as JSON
STDIO_FD_COUNT = 3
LISTEN_BACKLOG = 64  # launchers that may wait at once, while the zygote imports or forks
ZYGOTE_STOP_WAIT_S = 30.0  # its stdin closed, it kills its forks and leaves; killed after this

_zygote: tuple[subprocess.Popen[bytes], str] | None = None
_zygote_lock = threading.Lock()
# Read once: a test that rewrites os.environ must not send its servers to a zygote of their own.
_shared_socket = os.environ.get(SHARED_SOCKET_ENV)


def command(module: str, *args: str) -> list[str]:
    """The command line that starts `python -m <module> <args>` as a fork of this worker's zygote."""
    return [sys.executable, "-I", "-S", str(LAUNCHER), _socket_path(), module, *args]


def share_with_workers() -> None:
    """In the xdist controller: start the run's one zygote and pass its socket to the workers,
    which inherit os.environ when they start. The imports overlap the workers' own start-up."""
    global _zygote, _shared_socket
    with _zygote_lock:
        _zygote = _start_zygote(wait_until_ready=False)
        _shared_socket = os.environ[SHARED_SOCKET_ENV] = _zygote[1]


def _socket_path() -> str:
    global _zygote
    if _shared_socket is not None:
        return _shared_socket
    with _zygote_lock:
        if _zygote is None or _zygote[0].poll() is not None:
            _zygote = _start_zygote(wait_until_ready=True)
        return _zygote[1]


def _start_zygote(*, wait_until_ready: bool) -> tuple[subprocess.Popen[bytes], str]:
    # A short directory of its own: a Unix socket path is limited to ~100 bytes.
    path = os.path.join(tempfile.mkdtemp(prefix="lich-prefork-"), "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(LISTEN_BACKLOG)
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), str(listener.fileno())],
            pass_fds=(listener.fileno(),),
            stdin=subprocess.PIPE,  # its end of life: the zygote leaves when this pipe closes
            stdout=subprocess.PIPE,
            stderr=None,
        )
    atexit.register(_stop_zygote, process, path)
    if wait_until_ready:
        assert process.stdout is not None
        line = process.stdout.readline()  # "ready\n" once the imports are done
        if line != b"ready\n":
            process.kill()
            raise RuntimeError(f"the test zygote did not start (it said {line!r})")
    return process, path


def _stop_zygote(process: subprocess.Popen[bytes], path: str) -> None:
    with contextlib.suppress(OSError):
        assert process.stdin is not None
        process.stdin.close()
    try:
        process.wait(timeout=ZYGOTE_STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
    with contextlib.suppress(OSError):
        os.unlink(path)
        os.rmdir(os.path.dirname(path))


# --- the zygote ------------------------------------------------------------------------------


class _Zygote:
    def __init__(self, listener: socket.socket) -> None:
        self.listener = listener
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, socket.socket] = {}  # fork pid -> its launcher's connection
        self.wakeup_r, self.wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_w, False)

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wakeup_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # the wake-up byte is the news
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wakeup_r, selectors.EVENT_READ, "child")
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
        print("ready", flush=True)
        try:
            while True:
                for key, _ in self.selector.select():
                    if key.data == "stdin":
                        if not os.read(sys.stdin.fileno(), 4096):
                            return  # the test worker has gone
                        continue
                    try:
                        self._handle(key)
                    except Exception:  # noqa: BLE001 - one launcher's trouble never ends the zygote
                        traceback.print_exc()
        finally:
            for pid in list(self.children):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def _handle(self, key: selectors.SelectorKey) -> None:
        if key.data == "accept":
            self._accept()
        elif key.data == "child":
            os.read(self.wakeup_r, 4096)
            self._reap()
        elif key.data in self.children:
            # Not reaped in this same round: `_reap` closes a launcher's connection with its fork.
            self._launcher_spoke(key.fileobj, key.data)  # type: ignore[arg-type]

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            request, fds = _receive_request(conn)
        except (OSError, ValueError) as err:
            with contextlib.suppress(OSError):
                conn.sendall(f"error {err}\n".encode())
            conn.close()
            return
        pid = os.fork()
        if pid == 0:
            self._become_server(conn, request, fds)  # never returns
        for fd in fds:
            os.close(fd)  # the fork holds them now: the pipes end when it (and its launcher) do
        self.children[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, pid)
        with contextlib.suppress(OSError):  # a launcher killed already: its readable socket says so
            conn.sendall(f"pid {pid}\n".encode())

    def _launcher_spoke(self, conn: socket.socket, pid: int) -> None:
        # A launcher sends nothing after its request: readable means it has gone (killed),
        # and a server without its launcher is killed with it, as if it had been the launcher.
        with contextlib.suppress(OSError):
            if conn.recv(1):
                return
        self.selector.unregister(conn)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(conn)
            with contextlib.suppress(OSError):
                conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            conn.close()

    def _become_server(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        code: int = 1
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            self.selector.close()
            self.listener.close()
            for other in self.children.values():
                other.close()
            conn.close()
            os.close(self.wakeup_r)
            os.close(self.wakeup_w)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            # sys.path as `python -m` would start it here: the working directory, then PYTHONPATH.
            extra = [
                entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry
            ]
            sys.path[:1] = [os.getcwd(), *extra]
            sys.argv = [request["module"], *request["args"]]
            code = _run_main(request["module"])
        except BaseException:  # noqa: BLE001 - the fork must never return into the zygote's loop
            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)


def _run_main(module: str) -> int:
    """`python -m module` inside the fork: its exit code, after the interpreter's own exit steps."""
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except BaseException:  # noqa: BLE001 - printed as the interpreter would, status 1
        traceback.print_exc()
        code = 1
    # What interpreter shutdown does before it exits: wait for non-daemon threads, then atexit.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _receive_request(conn: socket.socket) -> tuple[dict, list[int]]:
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(
        REQUEST_MAX_BYTES, socket.CMSG_LEN(STDIO_FD_COUNT * fds.itemsize)
    )
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    while not data.endswith(b"\n"):
        more = conn.recv(REQUEST_MAX_BYTES)
        if not more:
            raise ValueError("the start request ended early")
        data += more
    if len(fds) != STDIO_FD_COUNT:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"expected {STDIO_FD_COUNT} descriptors, got {len(fds)}")
    return json.loads(data), list(fds)


def _preload() -> None:
    names = list(PRELOAD_MODULES)
    for package in PRELOAD_PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if not info.name.endswith("__main__"):  # runpy runs those in the fork, fresh
                names.append(info.name)
    for name in names:
        with contextlib.suppress(ImportError):  # an optional dependency this machine lacks
            importlib.import_module(name)


def _zygote_main(argv: list[str]) -> None:
    from lich_core.startup import quiet_start

    (listener_fd,) = argv
    listener = socket.socket(fileno=int(listener_fd))  # bound and listening already
    with quiet_start():  # the preloaded modules are shared by every fork: no collection walks them
        _preload()
    if threading.active_count() != 1:  # a fork copies only the forking thread: nothing may run
        raise SystemExit(f"prefork: an import started a thread: {threading.enumerate()}")
    _Zygote(listener).serve()


if __name__ == "__main__":
    _zygote_main(sys.argv[1:])
