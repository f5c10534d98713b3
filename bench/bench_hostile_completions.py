"""A hostile completion server (#43): what the editor sees while one attacks. A real
`python -m lich_lsp` over stdio, its completion model pointed at a loopback server in a process
of its own (so its work does not take this process's GIL from the client timing the requests),
temp HOME/XDG dirs. The attacks, switched on that server between measurements: a gzip bomb
(64 MiB of newlines as `Content-Encoding: gzip`), headers never sent, headers dripped a line at
a time, a body stalled after its head, a body dripped (a space of text every 50 ms, no end), a
Content-Length larger than the body then a close, a blank answer (blank lines only, forever).

Per attack:

- `$/cancelRequest` for a pending inline completion: from sending the cancel to the request's
  answer, worst and median (target <= 100 ms); a request that the attack had already ended when
  the cancel came is counted apart;
- `textDocument/codeAction` round trips p50/p99 while inline completions are kept under attack
  one after another (target p99 <= 50 ms), against the same requests before any completion;
- information: how long an attacked completion took to answer (empty), against its timeout_ms
  (TIMEOUT_MS here, to keep the run short; the default is 5 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.bench_completions import (
    LSP_TIMEOUT_S,
    STATUS_POLL_S,
    _code_action_rounds,
    _finish,
    _holds,
    _inline_params,
    _percentile,
    _start,
    _status,
)
from bench.run import Figure, user_dirs_in

CANCEL_TARGET_MS = 100.0
CODE_ACTION_P99_TARGET_MS = 50.0
TIMEOUT_MS = 1_000
CANCELS = 10
CANCELS_QUICK = 4
CODE_ACTIONS = 300
CODE_ACTIONS_QUICK = 100
ATTACKS = (
    "gzip_bomb",
    "headers_never_sent",
    "headers_dripped",
    "body_stalled",
    "body_dripped",
    "content_length_larger_then_close",
    "blank_answer",
)

HOSTILE_SERVER = r"""
import asyncio, json, sys, zlib

DRIP_S = 0.05
attack = ["normal"]
packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
BOMB = b"".join(packer.compress(b"\n" * (1 << 20)) for _ in range(64)) + packer.flush()
STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


def normal():
    body = b'data: {"choices": [{"text": "ok"}]}\n\ndata: [DONE]\n\n'
    return STREAM_HEAD + b"content-length: %d\r\n\r\n" % len(body) + body


async def hung_up(reader):
    while await reader.read(65536):
        pass


async def answer(name, reader, writer):
    if name == "normal":
        writer.write(normal())
        return
    if name == "gzip_bomb":
        writer.write(STREAM_HEAD + b"content-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(BOMB) + BOMB)
    elif name == "headers_dripped":
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"x-wait: still\r\n")
            await writer.drain()
            await asyncio.sleep(DRIP_S)
    elif name == "body_stalled":
        writer.write(STREAM_HEAD + b'content-length: 4096\r\n\r\ndata: {"choices": [{"te')
    elif name == "body_dripped":
        writer.write(STREAM_HEAD + b"transfer-encoding: chunked\r\n\r\n")
        event = b'data: {"choices": [{"text": " "}]}\n\n'
        while True:
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(DRIP_S)
    elif name == "content_length_larger_then_close":
        body = b'data: {"choices": [{"text": "cut"}]}\n\n'
        writer.write(STREAM_HEAD + b"content-length: %d\r\n\r\n%s" % (len(body) + 500, body))
        await writer.drain()
        writer.close()
        return
    elif name == "blank_answer":
        writer.write(STREAM_HEAD + b"\r\n")
        while True:
            writer.write(b"\n" * 64)
            await writer.drain()
            await asyncio.sleep(DRIP_S)
    await writer.drain()
    await hung_up(reader)  # headers_never_sent, and what sent all it had


async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            await reader.readexactly(length)
            await answer(attack[0], reader, writer)
            if writer.is_closing():
                return
    except (asyncio.IncompleteReadError, ConnectionError, StopIteration):
        pass  # the client hung up
    except asyncio.CancelledError:
        pass  # the server's end
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print("LISTENING", server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        attack[0] = line.strip()
        print("OK", attack[0], flush=True)


asyncio.run(main())
"""


class HostileProcess:
    """The hostile server in a process of its own; `switch(name)` changes its attack."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOSTILE_SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if not line or line[0] != "LISTENING":
            raise RuntimeError("the hostile server did not start")
        self.url = f"http://127.0.0.1:{line[1]}/v1"

    def switch(self, name: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(name + "\n")
        self.process.stdin.flush()
        if self.process.stdout.readline().split() != ["OK", name]:
            raise RuntimeError(f"the hostile server did not switch to {name}")

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def hostile_process() -> Iterator[HostileProcess]:
    server = HostileProcess()
    try:
        yield server
    finally:
        server.stop()


def _options(url: str) -> dict[str, Any]:
    return {
        "completion": {
            "kind": "openai_compat",
            "format": "completions",
            "base_url": url,
            "model": "fim",
            "timeout_ms": TIMEOUT_MS,
        },
        "completion_debounce_ms": 0,
    }


class _Requests:
    """Inline completions sent with ids of our own, so they can be cancelled."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.count = 0

    def send(self, uri: str, line: int, character: int) -> tuple[str, asyncio.Future[Any]]:
        from lsprotocol import types

        self.count += 1
        msg_id = f"hostile-{self.count}"
        future = asyncio.ensure_future(
            self.client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION,
                _inline_params(uri, line, character),
                msg_id=msg_id,
            )
        )
        return msg_id, future

    def cancel(self, msg_id: str) -> None:
        from lsprotocol import types

        self.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))


async def _answered(future: asyncio.Future[Any]) -> None:
    with contextlib.suppress(Exception):  # cancelled (an error answer) or an empty answer
        await asyncio.wait_for(asyncio.shield(future), LSP_TIMEOUT_S)
    if not future.done():
        raise TimeoutError("a completion request was never answered")


async def _provider_requests(client: Any) -> int:
    return int((await _status(client))["completion"]["requests"])


async def _wait_for_provider_request(client: Any, count: int) -> None:
    deadline = time.monotonic() + LSP_TIMEOUT_S
    while await _provider_requests(client) < count:
        if time.monotonic() > deadline:
            raise TimeoutError("the server made no provider request")
        await asyncio.sleep(STATUS_POLL_S)


async def cancels(client: Any, requests: _Requests, uri: str, count: int) -> dict[str, Any]:
    """`count` times: a completion sent, its provider request out, then `$/cancelRequest`;
    seconds from the cancel to the answer, and how many had ended before the cancel came."""
    latencies: list[float] = []
    ended_before = 0
    for index in range(count):
        made = await _provider_requests(client)
        msg_id, future = requests.send(uri, 2 + index, 0)
        await _wait_for_provider_request(client, made + 1)
        if future.done():
            ended_before += 1
            continue
        started = time.perf_counter()
        requests.cancel(msg_id)
        await _answered(future)
        latencies.append(time.perf_counter() - started)
    return {"latencies": latencies, "ended_before": ended_before}


async def code_actions_under_attack(
    client: Any, requests: _Requests, uri: str, lines: list[str], count: int
) -> dict[str, Any]:
    """codeAction round trips (s) while inline completions are attacked one after another,
    and how long each attacked completion took to answer."""
    answers: list[float] = []
    stop = asyncio.Event()
    current: list[str] = []

    async def keep_attacked() -> None:
        line = 5  # not line 1, whose suggestion the warm-up left (answered without a request)
        while not stop.is_set():
            started = time.perf_counter()
            msg_id, future = requests.send(uri, line, len(lines[line]))
            current[:] = [msg_id]
            await _answered(future)
            if not stop.is_set():
                answers.append(time.perf_counter() - started)

    made = await _provider_requests(client)
    attacking = asyncio.ensure_future(keep_attacked())
    await _wait_for_provider_request(client, made + 1)
    samples = await _code_action_rounds(client, uri, count)
    if not answers:  # at least one attacked completion timed
        deadline = time.monotonic() + LSP_TIMEOUT_S
        while not answers and time.monotonic() < deadline:
            await asyncio.sleep(STATUS_POLL_S)
    stop.set()
    if current:
        requests.cancel(current[0])
    await asyncio.wait_for(attacking, LSP_TIMEOUT_S)
    return {"samples": samples, "answers": answers}


async def _measure(quick: bool, root: Path) -> dict[str, Any]:
    cancel_count = CANCELS_QUICK if quick else CANCELS
    action_count = CODE_ACTIONS_QUICK if quick else CODE_ACTIONS
    results: dict[str, Any] = {}
    with hostile_process() as server:
        client, uri, lines = await _start(root, _options(server.url))
        try:
            other = (root / "module_1.py").as_uri()
            requests = _Requests(client)
            # The first completion builds the model and its client: not under attack.
            _, first = requests.send(uri, 1, len(lines[1]))
            await _answered(first)
            results["idle"] = await _code_action_rounds(client, uri, action_count)
            for attack in ATTACKS:
                server.switch(attack)
                results[attack] = {
                    **await cancels(client, requests, other, cancel_count),
                    **await code_actions_under_attack(client, requests, uri, lines, action_count),
                }
            server.switch("normal")
            _, last = requests.send(uri, 3, len(lines[3]))
            result = await asyncio.wait_for(last, LSP_TIMEOUT_S)
            results["usable_after"] = bool(getattr(result, "items", None))
            await _finish(client)
        except BaseException:
            await _finish(client)
            raise
    return results


def run(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="lich-bench-hostile-") as folder:
        with user_dirs_in(Path(folder) / "home"):
            root = Path(folder).resolve() / "work"
            root.mkdir()
            m = asyncio.run(_measure(quick, root))
    return _figures(m)


def _figures(m: dict[str, Any]) -> list[Figure]:
    idle_p99 = _percentile(m["idle"], 0.99) * 1000
    figures: list[Figure] = []
    for attack in ATTACKS:
        r = m[attack]
        latencies_ms = [seconds * 1000 for seconds in r["latencies"]]
        worst = max(latencies_ms, default=0.0)
        median = statistics.median(latencies_ms) if latencies_ms else 0.0
        samples = r["samples"]
        p99 = _percentile(samples, 0.99) * 1000
        answers_ms = [seconds * 1000 for seconds in r["answers"]]
        figures += [
            Figure(
                name=f"{attack}: $/cancelRequest answered, worst",
                value=worst,
                unit="ms",
                target=f"<= {CANCEL_TARGET_MS:g} ms",
                note=f"{_holds(worst <= CANCEL_TARGET_MS)}; median {median:.2f} ms over "
                f"{len(latencies_ms)} pending requests; {r['ended_before']} ended (empty) "
                "before the cancel came",
            ),
            Figure(
                name=f"{attack}: codeAction p99",
                value=p99,
                unit="ms",
                reference_name="no completion",
                reference_value=idle_p99,
                target=f"<= {CODE_ACTION_P99_TARGET_MS:g} ms",
                note=f"{_holds(p99 <= CODE_ACTION_P99_TARGET_MS)}; p50 "
                f"{statistics.median(samples) * 1000:.2f} ms over {len(samples)}, completions "
                "under attack one after another",
            ),
            Figure(
                name=f"{attack}: attacked completion answered after",
                value=max(answers_ms, default=0.0),
                unit="ms",
                ceiling=TIMEOUT_MS + 500,
                note=f"information: worst of {len(answers_ms)}, median "
                f"{statistics.median(answers_ms) if answers_ms else 0:.0f} ms; timeout_ms "
                f"{TIMEOUT_MS} here",
            ),
        ]
    figures.append(
        Figure(
            name="a normal completion after the attacks",
            value=1.0 if m["usable_after"] else 0.0,
            unit="ok",
            target="1",
            note=_holds(m["usable_after"]),
        )
    )
    return figures


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run(quick="--quick" in sys.argv):
        print(format_figure(figure))
