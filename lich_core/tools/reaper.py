"""Kill every process a terminal call left behind, daemons included (Linux).

A process group is not enough: `setsid cmd &`, `setsid -f cmd` or a double fork with
`os.setsid()` leave the group and the session, and their parent exits, so `killpg` misses them and
they would re-parent to init and outlive the call. On Linux each call therefore:

- makes this process a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) while at least one call
  runs, so an orphaned descendant re-parents to us instead of init and stays findable;
- marks its shell's environment with `LICH_CALL_ID=<uuid>`, inherited by everything the command
  starts;
- when the call ends (exit, timeout, cancellation) finds the call's processes in /proc and SIGKILLs
  them, round after round until a scan finds nothing new, then reaps the ones re-parented to us.

A call's processes are: its shell (while the pid still names it); every descendant of ours whose
/proc/PID/environ carries this call's marker; everything still in the shell's session or process
group (that catches `env -i` children that did not leave the session); and every descendant of
those. Processes of other calls carry another marker and live in other sessions, and unrelated
children of this process (the test runner's, another tool's) carry none, so neither is touched.

Subreaper status is reference counted: it is switched off again once no call runs (unless the
process was a subreaper before we started), so unrelated orphans are only adopted during a call.

What is not found: a process that both cleared its environment and left the session
(`setsid -f env -i cmd`), processes started through a daemon outside our tree (`systemd-run`,
`docker run -d`, `at`), and processes we may not signal (another user's). Elsewhere (macOS, other
Unixes) only the process group is killed; see docs/tools.md.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

CALL_ID_ENV = "LICH_CALL_ID"
PROC_ROOT = Path("/proc")
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
# Kill rounds per sweep: each round kills what the previous scan found; a round that finds nothing
# new ends the sweep. A fork bomb is the only thing that needs more than a handful.
MAX_KILL_ROUNDS = 64
# How long to wait for killed processes to die and be reaped before giving up (they are already
# SIGKILLed; this only bounds the wait for one stuck in uninterruptible sleep).
REAP_WAIT_S = 3.0
REAP_POLL_S = 0.005
# A zombie child of ours that nobody reaps for this long is an adopted orphan nobody will reap
# (say `setsid -f true`, gone before the end-of-call scan could tie it to its call). asyncio's child
# watcher reaps its own children within milliseconds, so waiting this long leaves them alone.
STALE_ZOMBIE_GRACE_S = 10.0


# --- /proc ---


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # clock ticks since boot: with the pid, identifies a process across pid reuse

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def read_stat(pid: int) -> ProcInfo | None:
    try:
        raw = (PROC_ROOT / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # `pid (comm) state ppid pgrp session ... starttime(22nd field) ...`; comm may hold spaces and ')'.
    try:
        rest = raw[raw.rindex(b")") + 2 :].split()
        return ProcInfo(
            pid, int(rest[1]), int(rest[2]), int(rest[3]), rest[0].decode(), int(rest[19])
        )
    except (ValueError, IndexError):
        return None


def scan_processes() -> dict[int, ProcInfo]:
    try:
        names = os.listdir(PROC_ROOT)
    except OSError:
        return {}
    processes: dict[int, ProcInfo] = {}
    for name in names:
        if name.isdigit():
            info = read_stat(int(name))
            if info is not None:
                processes[info.pid] = info
    return processes


def environ_has(pid: int, entry: bytes) -> bool:
    """True when `pid`'s initial environment holds exactly `entry` (`NAME=value`)."""
    try:
        data = (PROC_ROOT / str(pid) / "environ").read_bytes()
    except OSError:
        return False  # gone, a zombie (reads empty anyway), or not ours to read
    return b"\0" + entry + b"\0" in b"\0" + data + b"\0"


def _children_map(processes: dict[int, ProcInfo]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for info in processes.values():
        children.setdefault(info.ppid, []).append(info.pid)
    return children


def _closure(seeds: Iterable[int], children: dict[int, list[int]]) -> set[int]:
    found: set[int] = set()
    stack = list(seeds)
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        found.add(pid)
        stack.extend(children.get(pid, ()))
    return found


# --- subreaper ---


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


class Subreaper:
    """Reference-counted PR_SET_CHILD_SUBREAPER for this process (Linux; elsewhere a no-op)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._prctl = None
        self._permanent = False  # already a subreaper before us: never switch it off
        self._probed = False

    def _probe(self) -> None:
        self._probed = True
        if not sys.platform.startswith("linux"):
            return
        libc = _libc()
        prctl = getattr(libc, "prctl", None) if libc is not None else None
        if prctl is None:
            return
        # prctl(int option, unsigned long arg2, ...): declare full-width arguments so no garbage
        # reaches the kernel in a register's upper half.
        prctl.argtypes = [
            ctypes.c_int,
            ctypes.c_ulong,
            ctypes.c_ulong,
            ctypes.c_ulong,
            ctypes.c_ulong,
        ]
        prctl.restype = ctypes.c_int
        self._prctl = prctl
        current = self._get()
        if current is None:
            self._prctl = None  # kernel older than 3.4
            return
        self._permanent = current

    def _get(self) -> bool | None:
        assert self._prctl is not None
        current = ctypes.c_int(0)
        if self._prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(current), 0, 0, 0) != 0:
            return None
        return current.value != 0

    def _set(self, on: bool) -> bool:
        assert self._prctl is not None
        return self._prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0

    def acquire(self) -> bool:
        """Make this process a subreaper (if possible); True when it is one afterwards."""
        with self._lock:
            if not self._probed:
                self._probe()
            if self._prctl is None:
                return False
            if self._count == 0 and not self._permanent and not self._set(True):
                return False
            self._count += 1
            return True

    def release(self) -> None:
        with self._lock:
            if self._count == 0:
                return
            self._count -= 1
            if self._count == 0 and not self._permanent and self._prctl is not None:
                self._set(False)

    def is_set(self) -> bool:
        """What the kernel says right now (False where unsupported)."""
        with self._lock:
            if not self._probed:
                self._probe()
            if self._prctl is None:
                return False
            return bool(self._get())


SUBREAPER = Subreaper()


# --- zombies nobody waits for ---

_zombie_lock = threading.Lock()
_zombie_sightings: dict[tuple[int, int], float] = {}  # (pid, start) -> first seen (monotonic)
_active_shells: set[int] = set()  # shells of running calls: asyncio owns their exit status


def reap_stale_zombies(processes: dict[int, ProcInfo]) -> list[int]:
    """Reap zombie children that stayed unreaped for STALE_ZOMBIE_GRACE_S; returns their pids.

    Only zombies in a session other than ours qualify: an orphan of a call is in the call's
    session or one it made with setsid, never in ours, while a plain subprocess of this process
    (what tests and plugins usually start) is in ours and stays its owner's to wait for.
    """
    own = os.getpid()
    own_sid = os.getsid(0)
    now = time.monotonic()
    reaped: list[int] = []
    with _zombie_lock:
        present = set()
        for info in processes.values():
            if info.ppid != own or info.alive or info.sid == own_sid or info.pid in _active_shells:
                continue
            key = (info.pid, info.start)
            present.add(key)
            if now - _zombie_sightings.setdefault(key, now) < STALE_ZOMBIE_GRACE_S:
                continue
            try:
                if os.waitpid(info.pid, os.WNOHANG)[0]:
                    reaped.append(info.pid)
            except ChildProcessError:
                pass
            present.discard(key)
        for key in list(_zombie_sightings):
            if key not in present:
                del _zombie_sightings[key]
    return reaped


# --- one call ---


def _signal_process(info: ProcInfo) -> bool:
    """SIGKILL `info` if that pid still names the same process (pidfd where available)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    if pidfd_open is not None and send is not None:
        try:
            fd = pidfd_open(info.pid)
        except ProcessLookupError:
            return False
        except OSError:
            fd = None  # pidfd unsupported here: fall back to kill() after the identity check
        if fd is not None:
            try:
                current = read_stat(info.pid)
                if current is None or current.start != info.start:
                    return False  # the pid was reused between the scan and now
                send(fd, signal.SIGKILL)
                return True
            except OSError:
                return False
            finally:
                os.close(fd)
    current = read_stat(info.pid)
    if current is None or current.start != info.start:
        return False
    try:
        os.kill(info.pid, signal.SIGKILL)
        return True
    except OSError:
        return False


@dataclass
class CallReaper:
    """Tracks one terminal call's processes; `kill_leftovers` when the call ends, then `reap`."""

    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    shell_pid: int | None = None
    shell_start: int | None = None
    subreaper: bool = False
    supported: bool = field(
        default_factory=lambda: sys.platform.startswith("linux") and PROC_ROOT.is_dir()
    )
    # (pid, start) of everything identified as this call's, killed or found dead; for reaping.
    members: dict[int, int] = field(default_factory=dict)
    killed: int = 0
    survivors: list[int] = field(default_factory=list)  # found but not ours to signal
    _released: bool = False

    @property
    def marker(self) -> bytes:
        return f"{CALL_ID_ENV}={self.call_id}".encode()

    def start(self) -> None:
        """Before spawning: become a subreaper (Linux) so orphans of the call re-parent to us."""
        if self.supported:
            self.subreaper = SUBREAPER.acquire()

    def mark(self, env: dict[str, str]) -> dict[str, str]:
        env[CALL_ID_ENV] = self.call_id
        return env

    async def started(self, start: Awaitable[T]) -> T:
        """Await the start of the call's process (loop.subprocess_exec).

        Cancelled (or failed) after the process began but before asyncio handed it over, asyncio
        kills the shell alone, not what the shell had started already: those carry the call's
        marker, so they are found and killed here before the error goes on.
        """
        try:
            return await start
        except BaseException:
            self.kill_leftovers()
            self.reap_now()
            raise

    def spawned(self, pid: int) -> None:
        self.shell_pid = pid
        with _zombie_lock:
            _active_shells.add(pid)
        if self.supported:
            info = read_stat(pid)
            self.shell_start = info.start if info is not None else None

    def release(self) -> None:
        if not self._released:
            self._released = True
            with _zombie_lock:
                _active_shells.discard(self.shell_pid)  # type: ignore[arg-type]
            if self.subreaper:
                SUBREAPER.release()

    def call_processes(self, processes: dict[int, ProcInfo]) -> set[int]:
        """The pids in `processes` that belong to this call (alive or zombie)."""
        own = os.getpid()
        children = _children_map(processes)
        seeds: set[int] = set()
        shell = self.shell_pid
        shell_info = processes.get(shell) if shell is not None else None
        # A process under the shell's pid that started at another time is a reused pid: then the
        # session and group ids no longer say anything about this call either.
        shell_trustworthy = shell is not None and (
            shell_info is None or shell_info.start == self.shell_start
        )
        if shell_trustworthy and shell is not None:
            if shell_info is not None:
                seeds.add(shell)
            seeds.update(
                pid
                for pid, info in processes.items()
                if pid != shell and shell in (info.sid, info.pgid)
            )
        # With a subreaper every escaped process is still our descendant; without one it may have
        # been adopted by init, so every readable process is a candidate.
        candidates = _closure(children.get(own, ()), children) if self.subreaper else set(processes)
        marker = self.marker
        seeds.update(pid for pid in candidates if processes[pid].alive and environ_has(pid, marker))
        found = _closure(seeds, children)
        found.discard(own)
        return found

    def kill_leftovers(self) -> int:
        """SIGKILL every process of this call that is still alive; returns how many were signalled.

        Synchronous and bounded (a few /proc scans), so it can run in a `finally` during task
        cancellation. Each round kills what the scan found; SIGKILLed processes can no longer fork,
        so a round that finds nothing new means nothing is left to find.
        """
        if not self.supported:
            return 0
        signalled: set[tuple[int, int]] = set()
        processes: dict[int, ProcInfo] = {}
        for _ in range(MAX_KILL_ROUNDS):
            processes = scan_processes()
            found = self.call_processes(processes)
            new = []
            for pid in found:
                info = processes[pid]
                self.members[pid] = info.start
                if info.alive and (pid, info.start) not in signalled:
                    new.append(info)
            if not new:
                break
            for info in new:
                signalled.add((info.pid, info.start))
                if _signal_process(info):
                    if info.pid != self.shell_pid:
                        self.killed += 1
                else:
                    current = read_stat(info.pid)
                    if current is not None and current.start == info.start and current.alive:
                        # Not ours to signal (another user's): nothing to wait for either.
                        self.survivors.append(info.pid)
                        self.members.pop(info.pid, None)
        reap_stale_zombies(processes)
        return self.killed

    def _reap_once(self) -> bool:
        """Reap the members re-parented to us; True when none is left to wait for."""
        own = os.getpid()
        pending = False
        for pid, start in list(self.members.items()):
            info = read_stat(pid)
            if info is None or info.start != start:
                del self.members[pid]  # gone (reaped by us, init or a parent that was not killed)
                continue
            if pid == self.shell_pid:
                # asyncio's child watcher owns the shell's exit status: never wait for it here.
                if not info.alive:
                    del self.members[pid]
                else:
                    pending = True
                continue
            if info.ppid != own:
                if info.alive or info.ppid in self.members:
                    pending = True  # dying, or its parent is: then it comes to us next
                else:
                    del self.members[
                        pid
                    ]  # a zombie whose parent is outside the call: the parent reaps it
                continue
            try:
                reaped, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                del self.members[pid]
                continue
            if reaped:
                del self.members[pid]
            else:
                pending = True  # SIGKILLed but not dead yet
        return not pending

    def reap_now(self, timeout_s: float = 0.2) -> None:
        """Synchronous, short: for the task-cancellation path, which may not await."""
        deadline = time.monotonic() + timeout_s
        while not self._reap_once() and time.monotonic() < deadline:
            time.sleep(REAP_POLL_S)

    async def reap(self, timeout_s: float = REAP_WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not self._reap_once() and time.monotonic() < deadline:
            await asyncio.sleep(REAP_POLL_S)
