"""FrameReader: LSP frames from a byte stream, with limits (docs/lsp.md "Limits").

pygls' message loop (`pygls.io_.run_async`) reads a header with `readline()` and a body with
`readexactly(Content-Length)`; this reader stands in for the stream it reads from and never lets
a frame above MAX_MESSAGE_BYTES (or a header line above MAX_HEADER_LINE_BYTES) through.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

MIB = 1024 * 1024
# One JSON-RPC message from the editor (its Content-Length). A larger one is skipped, unread.
MAX_MESSAGE_BYTES = 64 * MIB
# One header line ("Content-Length: 123"); a line longer than this is garbage and skipped.
MAX_HEADER_LINE_BYTES = 8 * 1024
# How much FrameReader asks its source for at a time: headers, and the rest of a body.
READ_CHUNK_BYTES = 64 * 1024
READ_BODY_CHUNK_BYTES = 1 * MIB
# The header pygls' reading loop takes (exactly this spelling), and the same anywhere in a stream.
_CONTENT_LENGTH_LINE = re.compile(rb"Content-Length: (\d+)\r\n")
_CONTENT_LENGTH_ANYWHERE = re.compile(rb"Content-Length: \d{1,20}\r\n")
# The longest header _CONTENT_LENGTH_ANYWHERE matches: what must be kept between reads.
_HEADER_TAIL_BYTES = len(b"Content-Length: \r\n") + 20


class FrameReader:
    """The reader pygls' message loop (`pygls.io_.run_async`) takes frames from, with limits.

    pygls reads header lines with `readline()` and a body with `readexactly(Content-Length)`,
    allocating whatever length the editor claims: `Content-Length: 99999999999` was a
    MemoryError that ended the server. This reader hands pygls only frames up to
    MAX_MESSAGE_BYTES. A larger frame's header (or a header line longer than
    MAX_HEADER_LINE_BYTES) is reported through `on_reject` and never reaches pygls; its body is
    discarded as it streams past, up to the next `Content-Length:` header, which cannot occur
    inside a JSON body (JSON escapes line breaks), and serving goes on from there.

    `read_chunk(n)` returns up to n bytes as soon as some are available, and b"" at the end.
    """

    def __init__(
        self, read_chunk: Callable[[int], Awaitable[bytes]], on_reject: Callable[[str], None]
    ) -> None:
        self._read_chunk = read_chunk
        self._on_reject = on_reject
        self._buffer = bytearray()
        self._eof = False

    async def readline(self) -> bytes:
        # One loop turn per line even when the lines are already buffered (pygls' own reader
        # awaited a thread for each): what the previous message started runs before the next.
        await asyncio.sleep(0)
        line = await self._line()
        while True:
            if line is None:
                self._on_reject(f"a header line longer than {MAX_HEADER_LINE_BYTES} bytes")
                line = await self._resync()
                continue
            match = _CONTENT_LENGTH_LINE.fullmatch(line)
            if match is not None and int(match.group(1)) > MAX_MESSAGE_BYTES:
                self._on_reject(
                    f"a message of {int(match.group(1))} bytes (the limit is {MAX_MESSAGE_BYTES // MIB} MiB)"
                )
                line = await self._resync()
                continue
            return line

    async def readexactly(self, size: int) -> bytes:
        """`size` bytes (fewer only at the end of input). readline() let no size above the limit by."""
        size = min(size, MAX_MESSAGE_BYTES)
        if len(self._buffer) >= size:
            with memoryview(self._buffer) as view:
                body = bytes(view[:size])
            del self._buffer[:size]
            return body
        parts = [bytes(self._buffer)]
        got = len(self._buffer)
        self._buffer.clear()
        while got < size and not self._eof:
            chunk = await self._read_chunk(min(size - got, READ_BODY_CHUNK_BYTES))
            if not chunk:
                self._eof = True
                break
            if got + len(chunk) > size:  # a source may hand out more than asked for
                self._buffer += chunk[size - got :]
                chunk = chunk[: size - got]
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._read_chunk(READ_CHUNK_BYTES)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def _line(self) -> bytes | None:
        """The next line with its LF; None if it runs past MAX_HEADER_LINE_BYTES; b"" at the end."""
        scanned = 0
        while True:
            end = self._buffer.find(b"\n", scanned)
            if end >= 0:
                if end + 1 > MAX_HEADER_LINE_BYTES:
                    return None
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > MAX_HEADER_LINE_BYTES:
                return None
            scanned = len(self._buffer)
            if not await self._fill():
                line = bytes(self._buffer)
                self._buffer.clear()
                return line

    async def _resync(self) -> bytes:
        """Discard input up to the next `Content-Length: N` header and return that header line."""
        while True:
            match = _CONTENT_LENGTH_ANYWHERE.search(self._buffer)
            if match is not None:
                line = bytes(self._buffer[match.start() : match.end()])
                del self._buffer[: match.end()]
                return line
            if len(self._buffer) > _HEADER_TAIL_BYTES:
                del self._buffer[: len(self._buffer) - _HEADER_TAIL_BYTES]
            if not await self._fill():
                self._buffer.clear()
                return b""
