"""fetch_url: GET a web page or text document and read it as text.

Every request goes through `lich_core.net.safe_fetch` (pinned, SSRF-safe: private, loopback and
link-local targets are `blocked_url:` unless the server's environment has
`LICH_ALLOW_PRIVATE_URLS=1`; redirects re-vetted, at most 5; the body bounded). GET only, http
and https only (`invalid_url:` otherwise).

The output starts with the status and the content type (`HTTP 200 OK · text/html;
charset=utf-8`), then `redirected to: URL` when the answer came from elsewhere. An HTML body
(text/html, application/xhtml+xml, or an untyped body that starts like HTML) is converted to
readable text (lich_core/net/html_text.py: headings, paragraphs, list items, table rows, link
text; scripts, styles and the head dropped) and tagged `[html content]`; other text is shown as
it is. Binary content is refused with `unsupported_content:`: images, audio, video, fonts,
application/octet-stream, PDF, archives and compressed files, office documents, executables
(lich_core/net/tool_support.py `classify_content`; an untyped or unknown type is sniffed). The
text is cut to `max_chars` with a note; at most MAX_BODY_BYTES are downloaded.

A non-2xx status is `ok: false` with error `http_<status>` (as http_request does); the output
keeps the status line and the body, so the model can read the server's error page.

Capability: `net/fetch` (the editor asks before the first fetch of a host by default).
"""

from __future__ import annotations

import asyncio
from typing import Any

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
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_TIMEOUT_MS",
    "HTML_TAG",
    "MAX_CHARS",
    "MAX_TIMEOUT_MS",
    "TOOL",
]

HTML_TAG = "[html content]"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"


def _header_line(status: str, content_type: str) -> str:
    return f"{status} · {content_type or '(no content type)'}"


@capture_errors
async def run_fetch_url(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    url = valid_http_url(args)
    max_chars = clamp_int_arg(args, "max_chars", DEFAULT_MAX_CHARS, MAX_CHARS)
    timeout_ms = clamp_int_arg(args, "timeout_ms", DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
    result = await tool_fetch(
        "GET",
        url,
        env=tool_process_env(ctx),
        cancel=ctx.cancel,
        timeout_ms=timeout_ms,
        headers={"accept": ACCEPT},
        max_bytes=MAX_BODY_BYTES,
    )
    content_type = result.headers.get("content-type", "").strip()
    kind = classify_content(content_type, result.body)
    ok = 200 <= result.status < 300
    lines = [_header_line(status_line(result), content_type)]
    if result.redirects:
        hops = len(result.redirects)
        lines.append(
            f"redirected to: {result.final_url} ({hops} redirect{'s' if hops > 1 else ''})"
        )
    details = {
        "status": result.status,
        "final_url": result.final_url,
        "content_type": result.content_type,
        "kind": kind,
        "bytes": len(result.body),
        "body_truncated": result.truncated,
    }
    if kind == "binary":
        what = result.content_type or "binary data"
        lines.append(f"[{len(result.body):,} bytes of {what} not shown]")
        error = f"http_{result.status}"
        if ok:
            error = (
                f"unsupported_content: {what} ({len(result.body):,} bytes) from {result.final_url}; "
                "fetch_url reads HTML and text only (images, audio, video, fonts, PDFs, archives "
                "and other binary content are refused)"
            )
        return ToolResult(ok=False, output="\n".join(lines), error=error, details=details)
    text = decode_body(result, kind)
    if kind == "html":
        lines.append(HTML_TAG)
        # Imported on the first HTML page, not with the tool: BeautifulSoup costs ~0.2 s of CPU,
        # which every server's first task would pay for a tool it may never call.
        from lich_core.net.html_text import html_to_text

        text = await asyncio.to_thread(html_to_text, text)
    lines.append("")
    lines.append(clamp_text(text, max_chars) if text.strip() else "(empty body)")
    note = body_cut_note(result)
    if note:
        lines.append(note)
    output = "\n".join(lines)
    if not ok:
        return ToolResult(ok=False, output=output, error=f"http_{result.status}", details=details)
    return ToolResult(ok=True, output=output, details=details)


TOOL = FunctionTool(
    name="fetch_url",
    description=("GET a URL as readable text; a non-2xx status fails with http_<status>."),
    parameters={
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
            },
            "max_chars": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_CHARS,
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TIMEOUT_MS,
            },
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    run=run_fetch_url,
    capability="net/fetch",
    timeout_ms=TOOL_DEADLINE_MS,
    max_output_chars=TOOL_OUTPUT_CHARS,
)
