"""What the HTTP tools (fetch_url, http_request, web_search) share: arguments, the fetch, the body.

- `valid_http_url`: the `url` argument, normalised by safe_fetch's own parser (only http and
  https; `invalid_url:` otherwise), checked before anything is sent;
- `clamp_int_arg`: a numeric argument floored and bounded to [1, max] (a model's `"5000"`,
  `2.7` or `-3` still mean something);
- `tool_fetch`: one `safe_fetch` call for a tool: the per-call deadline (`timeout_ms`) and the
  executor's cancellation (`ctx.cancel`) are both handed to safe_fetch, which aborts the request
  at whichever comes first, mid-body included; the environment the operator's opt-out
  `LICH_ALLOW_PRIVATE_URLS=1` is read from is the tool's (`tool_process_env(ctx)`, i.e. the
  server's own environment), never a workspace file; every `FetchError` becomes a ToolError
  with the same stable prefix (`blocked_url:`, `invalid_url:`, `timeout:`, `cancelled:`, ...);
- `classify_content` / `decode_body`: html, text or binary, and the body as text;
- `status_line`, `clamp_text`, `body_cut_note`: the shared pieces of the output.

This module is in `lich_core.net`, below the tool layer: it imports nothing from
`lich_core.tools` at import time (lich_core.tools.builtin imports lich_core.net; the packages
must not import each other in a cycle).
"""

from __future__ import annotations

import codecs
import http
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from lich_core.errors import ToolError
from lich_core.net.safe_fetch import FetchError, FetchResult, normalise_url, safe_fetch
from lich_core.vocabulary import CancelToken

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_TIMEOUT_MS",
    "MAX_BODY_BYTES",
    "MAX_CHARS",
    "MAX_TIMEOUT_MS",
    "TOOL_DEADLINE_MS",
    "TOOL_OUTPUT_CHARS",
    "body_cut_note",
    "clamp_int_arg",
    "clamp_text",
    "classify_content",
    "decode_body",
    "status_line",
    "tool_fetch",
    "valid_http_url",
]

# Text handed back: `max_chars` defaults to DEFAULT_MAX_CHARS and is at most MAX_CHARS.
DEFAULT_MAX_CHARS = 20_000
MAX_CHARS = 100_000
# The request's deadline: `timeout_ms` defaults to DEFAULT_TIMEOUT_MS and is at most
# MAX_TIMEOUT_MS (resolution, connect, every redirect hop and the whole body).
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 120_000
# The executor's deadline for an HTTP tool: past the longest request the tool may make, so the
# request's own `timeout:` (which names the URL) always answers first.
TOOL_DEADLINE_MS = MAX_TIMEOUT_MS + 10_000
# Bytes read off the wire (decoded): the rest of a larger body is never downloaded.
MAX_BODY_BYTES = 2 * 1024 * 1024
# The executor's output clamp for an HTTP tool: the text (MAX_CHARS at most) plus the status and
# header lines and the notes, so the tool's own truncation note is the one the model reads.
TOOL_OUTPUT_CHARS = MAX_CHARS + 4_000

ContentKind = Literal["html", "text", "binary"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-www-form-urlencoded",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/x-shellscript",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
        "application/jsonl",
        "application/csv",
        "application/x-tex",
        "application/x-latex",
        "application/rtf",
        "application/x-python",
        "application/x-ruby",
        "application/x-perl",
        "application/php",
        "application/x-httpd-php",
        "application/x-subrip",
        "application/mbox",
        "message/rfc822",
        "message/http",
        "application/n-triples",
        "application/n-quads",
        "application/trig",
        "application/x-csh",
        "application/typescript",
        "application/manifest+json",
    }
)
TEXT_SUFFIXES = ("+json", "+xml", "+yaml", "+json-seq", "+ndjson")
# Refused by fetch_url (`unsupported_content:`), summarised by http_request (`[N bytes of T]`).
BINARY_PREFIXES = (
    "image/",
    "audio/",
    "video/",
    "font/",
    "model/",
    "application/vnd.openxmlformats-",
    "application/vnd.oasis.opendocument.",
    "application/vnd.ms-",
    "application/x-font",
)
BINARY_TYPES = frozenset(
    {
        "application/octet-stream",
        "application/pdf",
        "application/zip",
        "application/gzip",
        "application/x-gzip",
        "application/x-tar",
        "application/x-bzip",
        "application/x-bzip2",
        "application/x-xz",
        "application/x-lzma",
        "application/zstd",
        "application/x-7z-compressed",
        "application/x-rar-compressed",
        "application/vnd.rar",
        "application/java-archive",
        "application/wasm",
        "application/x-msdownload",
        "application/x-executable",
        "application/x-sharedlib",
        "application/x-mach-binary",
        "application/x-elf",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "application/vnd.ms-fontobject",
        "application/font-woff",
        "application/font-sfnt",
        "application/x-shockwave-flash",
        "application/x-protobuf",
        "application/protobuf",
        "application/grpc",
        "application/cbor",
        "application/msgpack",
        "application/x-msgpack",
        "application/x-sqlite3",
        "application/vnd.sqlite3",
        "application/x-iso9660-image",
        "application/x-apple-diskimage",
        "application/vnd.android.package-archive",
        "application/x-debian-package",
        "application/x-rpm",
        "application/postscript",
        "application/ogg",
        "application/x-bittorrent",
        "application/epub+zip",
    }
)
# Magic numbers of common binary formats (a body without a usable Content-Type is sniffed).
BINARY_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\x7fELF",
    b"RIFF",
    b"OggS",
    b"ID3",
    b"\x00asm",
    b"wOFF",
    b"wOF2",
    b"\x28\xb5\x2f\xfd",
)
SNIFF_BYTES = 1_000
_META_CHARSET_RE = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE
)
_HTML_START_RE = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>]|head[\s>])", re.IGNORECASE | re.DOTALL
)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


# ---------------------------------------------------------------------------------------------
# Arguments


def clamp_int_arg(args: Mapping[str, Any], key: str, default: int, maximum: int) -> int:
    """`args[key]` as an int, floored and bounded to [1, maximum]; `default` when absent or not
    a number (numeric strings count: models send `"5000"`)."""
    value = args.get(key)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    if isinstance(value, float):
        if math.isnan(value):
            return default
        value = maximum if value == math.inf else 1 if value == -math.inf else math.floor(value)
    return max(1, min(maximum, int(value)))


def valid_http_url(args: Mapping[str, Any], key: str = "url") -> str:
    """The `url` argument normalised (safe_fetch's parser): `missing_arg:` when absent,
    `invalid_url:` when it does not parse or its scheme is not http or https."""
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"missing_arg: {key}")
    try:
        return str(normalise_url(value))
    except FetchError as err:
        raise ToolError(str(err)) from None


# ---------------------------------------------------------------------------------------------
# The fetch


async def tool_fetch(
    method: str,
    url: str,
    *,
    env: Mapping[str, str],
    cancel: CancelToken,
    timeout_ms: int,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    max_bytes: int = MAX_BODY_BYTES,
) -> FetchResult:
    """One safe_fetch for a tool; a FetchError is raised again as ToolError (same message)."""
    try:
        return await safe_fetch(
            method,
            url,
            headers=headers,
            body=body,
            max_bytes=max_bytes,
            timeout_s=timeout_ms / 1000,
            cancel=cancel,
            env=env,
        )
    except FetchError as err:
        raise ToolError(str(err)) from None


# ---------------------------------------------------------------------------------------------
# The body


def _sniff(body: bytes) -> ContentKind:
    head = body[:SNIFF_BYTES]
    if any(head.startswith(magic) for magic in BINARY_MAGIC):
        return "binary"
    if any(head.startswith(bom) for bom, _ in _BOMS[1:]):
        return "text"  # UTF-16/32 text holds NUL bytes
    if b"\0" in head:
        return "binary"
    return "html" if _HTML_START_RE.match(head.lstrip(codecs.BOM_UTF8)) else "text"


def classify_content(content_type: str, body: bytes) -> ContentKind:
    """html, text or binary, from the media type (lowercased, no parameters), sniffing the first
    bytes of a body whose type is missing or unknown (NUL bytes or a known magic number: binary;
    `<!doctype html` / `<html`: html)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in HTML_TYPES:
        return "html"
    if media in BINARY_TYPES or media.startswith(BINARY_PREFIXES):
        return "binary"
    if (
        media.startswith("text/")
        or media in TEXT_APPLICATION_TYPES
        or media.endswith(TEXT_SUFFIXES)
    ):
        return "text"
    return _sniff(body)


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        return None


def decode_body(result: FetchResult, kind: ContentKind) -> str:
    """The body as text: a byte-order mark, else the Content-Type charset, else (HTML) a
    `<meta charset>` in the first bytes, else UTF-8; undecodable bytes become U+FFFD."""
    body = result.body
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body.decode(bom_codec, errors="replace")
    codec = _known_codec(result.charset)
    if codec is None and kind == "html":
        match = _META_CHARSET_RE.search(body[:4096])
        codec = _known_codec(match.group(1).decode("ascii")) if match else None
    return body.decode(codec or "utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Output pieces


def status_line(result: FetchResult) -> str:
    """`HTTP 200 OK` (the server's reason phrase, else the standard one)."""
    reason = result.reason.strip()
    if not reason:
        try:
            reason = http.HTTPStatus(result.status).phrase
        except ValueError:
            reason = ""
    return f"HTTP {result.status} {reason}".rstrip()


def clamp_text(text: str, max_chars: int) -> str:
    """`text` cut to `max_chars` with a note saying how much was left out and how to see it."""
    if len(text) <= max_chars:
        return text
    omitted = len(text) - max_chars
    more = f"; pass max_chars (at most {MAX_CHARS:,}) to see more" if max_chars < MAX_CHARS else ""
    return f"{text[:max_chars]}\n[... truncated at {max_chars:,} chars, {omitted:,} more chars omitted{more} ...]"


def body_cut_note(result: FetchResult) -> str | None:
    """The note for a body cut at the byte bound (None when the whole body was read)."""
    if not result.truncated:
        return None
    return f"[... response body cut at {len(result.body):,} bytes: the rest was not downloaded ...]"
