"""http_request: one HTTP request to an API (any of GET POST PUT PATCH DELETE HEAD OPTIONS).

Every request goes through `lich_core.net.safe_fetch` (pinned, SSRF-safe: private, loopback and
link-local targets are `blocked_url:` unless the server's environment has
`LICH_ALLOW_PRIVATE_URLS=1`; redirects re-vetted, at most 5; the body bounded). http and https
only (`invalid_url:` otherwise).

Arguments:
- `method`: case-insensitive, default GET; anything outside the allowlist is `invalid_request:`;
- `headers`: a JSON object of name -> value. Values are stringified: strings as they are,
  numbers with str(), booleans as `true`/`false`, objects and arrays as compact JSON; a null
  value leaves the header out. A name that is not an HTTP token, or a value with a control
  character, is `invalid_request:` (naming the header, never its value). Host, Content-Length
  and Transfer-Encoding are safe_fetch's own and are replaced;
- `body`: a string, sent as UTF-8. An object or array is sent as JSON (with `Content-Type:
  application/json` unless the headers name a type); a number or boolean as its JSON text.

The output: the status line (`HTTP 201 Created`), then `content-type:`, `content-length:` (the
header, or what was read when the server sent none), `x-ratelimit-remaining:` /
`ratelimit-remaining:` and their `-reset`, and `retry-after:` when the server sent them,
`redirected to: URL` after a redirect, a blank line and the body: text as it came (HTML is not
converted: use fetch_url to read a page), a binary body summarised as `[N bytes of TYPE]`, no
body as `(no body)`. The text is cut to `max_chars` with a note.

A non-2xx status is `ok: false` with error `http_<status>`; the output keeps the status line,
the headers and the body.

Secrets: the value of a request header whose name looks like a secret (Authorization,
Proxy-Authorization, Cookie, X-Api-Key, X-Auth-Token, ... the env_get name rules) or whose value
looks like a token is never shown: wherever it would appear in the output or an error (a server
that echoes the request, an error message) it reads `<redacted: N chars>`, and so does the
credential after the scheme (`Bearer <redacted: N chars>`).

Capability: `net/fetch` (the editor asks before the first request to a host by default).
"""

from __future__ import annotations

import json
import re
from typing import Any

from lich_core.errors import ToolError
from lich_core.net.tool_support import (
    DEFAULT_MAX_CHARS,
    DEFAULT_TIMEOUT_MS,
    MAX_BODY_BYTES,
    MAX_CHARS,
    MAX_TIMEOUT_MS,
    TOOL_DEADLINE_MS,
    TOOL_OUTPUT_CHARS,
    body_cut_note,
    clamp_int_arg,
    clamp_text,
    classify_content,
    decode_body,
    status_line,
    tool_fetch,
    valid_http_url,
)
from lich_core.tools.guard import capture_errors
from lich_core.tools.processes import tool_process_env
from lich_core.tools.secrets import is_secret_name, looks_like_secret_value, redacted
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

__all__ = ["ALLOWED_METHODS", "REPORTED_HEADERS", "TOOL", "request_headers"]

ALLOWED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
# Response headers the output reports after content-type and content-length, when present.
REPORTED_HEADERS = (
    "x-ratelimit-remaining",
    "ratelimit-remaining",
    "x-ratelimit-reset",
    "ratelimit-reset",
    "retry-after",
)
# A secret shorter than this is not searched for in the output (it would mask ordinary words).
MIN_MASKED_CHARS = 6
_TOKEN_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _method(args: dict[str, Any]) -> str:
    raw = args.get("method")
    if raw is None or raw == "":
        return "GET"
    if not isinstance(raw, str):
        raise ToolError(
            f"invalid_request: method must be a string, one of {', '.join(ALLOWED_METHODS)}"
        )
    method = raw.strip().upper()
    if method not in ALLOWED_METHODS:
        raise ToolError(
            f"invalid_request: method {raw.strip()!r} is not allowed (use {', '.join(ALLOWED_METHODS)})"
        )
    return method


def _header_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def request_headers(raw: Any) -> dict[str, str]:
    """The caller's `headers` argument as name -> string value (module docstring)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ToolError(
            f"invalid_request: headers must be a JSON object of name -> value, not {type(raw).__name__}"
        )
    headers: dict[str, str] = {}
    for name, value in raw.items():
        header = str(name).strip()
        if not _TOKEN_RE.match(header):
            raise ToolError(f"invalid_request: {header!r} is not a valid header name")
        text = _header_value(value)
        if text is None:
            continue
        text = text.strip(" \t")
        if _CONTROL_RE.search(text):
            raise ToolError(
                f"invalid_request: the value of header {header!r} holds a control character"
            )
        headers[header] = text
    return headers


def _secrets(headers: dict[str, str]) -> list[str]:
    """The strings to mask: secret-looking header values and the credential after their scheme."""
    found: set[str] = set()
    for name, value in headers.items():
        if not (is_secret_name(name) or looks_like_secret_value(value)):
            continue
        found.add(value)
        scheme, _, credential = value.partition(" ")
        if credential.strip() and scheme:
            found.add(credential.strip())
    # Longest first: a credential inside a longer value is masked as part of the value.
    return sorted(
        (secret for secret in found if len(secret) >= MIN_MASKED_CHARS), key=len, reverse=True
    )


def _mask(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, redacted(secret))
    return text


def _body(args: dict[str, Any], headers: dict[str, str]) -> bytes | None:
    raw = args.get("body")
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw.encode("utf-8")
    if isinstance(raw, (dict, list)) and not any(
        name.lower() == "content-type" for name in headers
    ):
        headers["Content-Type"] = "application/json"
    return json.dumps(raw, ensure_ascii=False).encode("utf-8")


@capture_errors
async def run_http_request(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    headers = request_headers(args.get("headers"))
    secrets = _secrets(headers)
    try:
        return await _request(args, ctx, headers, secrets)
    except ToolError as err:
        raise ToolError(_mask(str(err), secrets)) from None


async def _request(
    args: dict[str, Any], ctx: ToolContext, headers: dict[str, str], secrets: list[str]
) -> ToolResult:
    url = valid_http_url(args)
    method = _method(args)
    body = _body(args, headers)
    max_chars = clamp_int_arg(args, "max_chars", DEFAULT_MAX_CHARS, MAX_CHARS)
    timeout_ms = clamp_int_arg(args, "timeout_ms", DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
    result = await tool_fetch(
        method,
        url,
        env=tool_process_env(ctx),
        cancel=ctx.cancel,
        timeout_ms=timeout_ms,
        headers=headers,
        body=body,
        max_bytes=MAX_BODY_BYTES,
    )
    response = result.headers
    content_type = response.get("content-type", "").strip()
    lines = [status_line(result), f"content-type: {content_type or '(none)'}"]
    length = response.get("content-length")
    lines.append(
        f"content-length: {length}"
        if length is not None
        else f"content-length: (none; {len(result.body):,} bytes read)"
    )
    lines.extend(f"{name}: {response[name]}" for name in REPORTED_HEADERS if name in response)
    if result.redirects:
        hops = len(result.redirects)
        lines.append(
            f"redirected to: {result.final_url} ({hops} redirect{'s' if hops > 1 else ''})"
        )
    lines.append("")
    kind = classify_content(content_type, result.body)
    if not result.body:
        lines.append("(no body)")
    elif kind == "binary":
        lines.append(f"[{len(result.body):,} bytes of {result.content_type or 'binary data'}]")
    else:
        lines.append(clamp_text(decode_body(result, kind), max_chars))
    note = body_cut_note(result)
    if note:
        lines.append(note)
    output = _mask("\n".join(lines), secrets)
    details = {
        "status": result.status,
        "method": method,
        "final_url": result.final_url,
        "content_type": result.content_type,
        "bytes": len(result.body),
        "body_truncated": result.truncated,
    }
    if not 200 <= result.status < 300:
        return ToolResult(ok=False, output=output, error=f"http_{result.status}", details=details)
    return ToolResult(ok=True, output=output, details=details)


TOOL = FunctionTool(
    name="http_request",
    description=(
        "One HTTP request: status, main headers and body; non-2xx fails with http_<status>."
    ),
    parameters={
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
            },
            "method": {
                "type": "string",
                "enum": list(ALLOWED_METHODS),
            },
            "headers": {
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean"]},
            },
            "body": {
                "type": "string",
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
            },
            "max_chars": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_CHARS,
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    run=run_http_request,
    capability="net/fetch",
    timeout_ms=TOOL_DEADLINE_MS,
    max_output_chars=TOOL_OUTPUT_CHARS,
)
