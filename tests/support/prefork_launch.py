"""`python -I -S prefork_launch.py SOCKET MODULE ARGS...`: run `python -m MODULE ARGS...` as a
fork of the test zygote at SOCKET (tests/support/prefork.py) and stand in for it.

The fork gets this process's stdin, stdout and stderr, environment and working directory. This
process forwards SIGTERM and SIGINT to it and exits as it did, so whoever started this one sees
the server's exit. Stdlib only and no site: it starts in ~20 ms.
"""

import array
import json
import os
import signal
import socket
import sys

STDIO_FDS = (0, 1, 2)


def main() -> None:
    path, module, *args = sys.argv[1:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = json.dumps(
        {"module": module, "args": args, "env": dict(os.environ), "cwd": os.getcwd()}
    )
    fds = array.array("i", STDIO_FDS)
    conn.sendmsg(
        [request.encode() + b"\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())]
    )
    replies = conn.makefile("rb")
    first = replies.readline().decode().split()
    if not first or first[0] != "pid":
        sys.stderr.write(f"prefork_launch: the zygote refused the start: {' '.join(first)}\n")
        sys.exit(1)
    pid = int(first[1])

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    # Only the fork may hold the pipes' ends now: a reader of its stdout sees the end when it ends.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in STDIO_FDS:
        os.dup2(devnull, fd)
    last = replies.readline().decode().split()
    code = int(last[1]) if len(last) == 2 and last[0] == "exit" else 1
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


if __name__ == "__main__":
    main()
