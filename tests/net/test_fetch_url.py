"""fetch_url against real HTTP servers on 127.0.0.1, through the executor (the path every call takes).

A "public" name resolves only through the injected resolver (tests/net/http_tool_harness.py) and
its vetted address is connected to the local server instead; loopback URLs need the operator's
opt-out in the tool's environment. The HTML-to-text check runs on a real page shipped as a
fixture (tests/fixtures/net/README.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from lich_core.net.html_text import html_to_text
from lich_core.net.tool_support import (
    DEFAULT_MAX_CHARS,
    MAX_CHARS,
    MAX_TIMEOUT_MS,
    clamp_int_arg,
    classify_content,
)
from lich_core.tools.builtin import CATALOG_ORDER, builtin_tools, fetch_url
from lich_core.tools.capabilities import CapabilityGate
from lich_core.vocabulary import CancelToken
from tests.net.http_tool_harness import (
    ALLOW_ENV,
    CLOSED_ENV,
    PUBLIC_HOST,
    PUBLIC_IP,
    FakeNetwork,
    install_network,
    public_url,
    redirect_route,
    run_tool,
    serving_publicly,
    slow_route,
    stall_route,
    wait_event,
)
from tests.net.local_server import Handler, LocalServer

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_PAGE = ROOT / "tests" / "fixtures" / "net" / "python-3.11-library-ipaddress.html"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64

SYNTHETIC_PAGE = """<!doctype html>
<html><head><title>Widget manual</title>
<style>.secret-style { color: red }</style>
<script>var SCRIPT_MARKER = "in the head";</script>
</head>
<body>
<nav><a href="/">Home</a></nav>
<script>document.write("SCRIPT_MARKER in the body")</script>
<noscript>NOSCRIPT_MARKER</noscript>
<template><p>TEMPLATE_MARKER</p></template>
<svg><text>SVG_MARKER</text></svg>
<div hidden>HIDDEN_MARKER</div>
<span aria-hidden="true">ARIA_MARKER</span>
<!-- COMMENT_MARKER -->
<h1>Widgets <a class="headerlink" href="#w">¶</a></h1>
<p>A widget   is a
   small <a href="/parts">part</a> with <b>two</b> ends.</p>
<h2>Kinds</h2>
<ul><li>round</li><li>square<ol><li>big</li><li>small</li></ol></li></ul>
<table><tr><th>name</th><th>size</th></tr><tr><td>round</td><td>3&nbsp;cm</td></tr></table>
<pre>def widget():
    return 42</pre>
<p>line one<br>line two</p>
<dl><dt>Term</dt><dd>Its definition.</dd></dl>
</body></html>
"""


def _page(body: bytes, content_type: str, status: int = 200) -> object:
    def route(h: Handler) -> None:
        h.reply(status, body, {"Content-Type": content_type} if content_type else {})

    return route


def _echo_headers(h: Handler) -> None:
    h.reply(200, json.dumps(h.recorded.headers).encode(), {"Content-Type": "application/json"})


def _not_found(h: Handler) -> None:
    h.reply(
        404,
        b"<html><body><h1>Not here</h1><p>The page is gone.</p></body></html>",
        {"Content-Type": "text/html"},
    )


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> FakeNetwork:
    return install_network(monkeypatch)


@pytest.fixture
def server(network: FakeNetwork) -> Iterator[LocalServer]:
    local = LocalServer()
    page = FIXTURE_PAGE.read_bytes()
    local.routes.update(
        {
            "/ipaddress.html": _page(page, "text/html; charset=utf-8"),
            "/synthetic": _page(SYNTHETIC_PAGE.encode(), "text/html; charset=utf-8"),
            "/plain": _page(b"just text\nsecond line\n", "text/plain; charset=utf-8"),
            "/json": _page(b'{"a": 1}', "application/json"),
            "/png": _page(PNG, "image/png"),
            "/octet": _page(b"\x00\x01\x02binary", "application/octet-stream"),
            "/untyped-binary": _page(b"\x00\x01\x02\x03" * 10, ""),
            "/untyped-html": _page(b"<!DOCTYPE html><html><body><p>sniffed</p></body></html>", ""),
            "/latin1": _page(
                '<html><head><meta charset="iso-8859-1"></head><body><p>café</p></body></html>'.encode(
                    "latin-1"
                ),
                "text/html",
            ),
            "/empty": _page(b"", "text/plain"),
            "/missing": _not_found,
            "/echo": _echo_headers,
            "/redirect": redirect_route,
            "/slow": slow_route,
            "/stall": stall_route,
        }
    )
    with serving_publicly(local, network):
        yield local


async def fetch(tmp_path: Path, url: str, env: dict[str, str] | None = None, **args: object):
    return await run_tool(tmp_path, "fetch_url", {"url": url, **args}, env=env)


# ---------------------------------------------------------------------------------------------
# HTML to text


async def test_a_real_page_reads_as_text(
    tmp_path: Path, server: LocalServer, network: FakeNetwork
) -> None:
    result = await fetch(tmp_path, public_url(server, "/ipaddress.html"), max_chars=MAX_CHARS)
    assert result.ok, result.error
    lines = result.output.splitlines()
    assert lines[0] == "HTTP 200 OK · text/html; charset=utf-8"
    assert lines[1] == "[html content]"
    text = result.output
    # headings, at their level, once each (the permalink ¶ dropped)
    assert "\n# ipaddress — IPv4/IPv6 manipulation library\n" in text
    assert "\n## Convenience factory functions\n" in text
    assert "\n### Address objects\n" in text
    assert "\n## Custom Exceptions\n" in text
    assert "¶" not in text
    # paragraphs, whitespace collapsed onto one line
    assert (
        "\nipaddress provides the capabilities to create, manipulate and operate on IPv4 and IPv6 "
        "addresses and networks.\n"
    ) in text
    # list items, and a code example kept verbatim
    assert "\n  1. A string in decimal-dot notation, consisting of four decimal integers" in text
    assert ">>> ipaddress.ip_address('192.168.0.1')\n  IPv4Address('192.168.0.1')" in text
    # the page's title first, its <head>, styles and scripts gone
    assert (
        text.splitlines()[3]
        == "ipaddress — IPv4/IPv6 manipulation library — Python 3.11.2 documentation"
    )
    for absent in (
        "full-width-table",
        "@media",
        "jquery",
        "_static/",
        "<div",
        "<p>",
        "&#8212;",
        "&amp;",
    ):
        assert absent not in text, absent
    assert "Created using Sphinx" in text
    # the request went to the vetted public address, the name kept for Host
    assert network.connected[0][0] == PUBLIC_IP
    assert server.requests[0].headers["host"] == f"{PUBLIC_HOST}:{server.port}"
    assert result.details["kind"] == "html"


async def test_scripts_styles_and_hidden_content_are_dropped(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await fetch(tmp_path, public_url(server, "/synthetic"))
    assert result.ok, result.error
    body = result.output.split("[html content]\n\n", 1)[1]
    for marker in (
        "SCRIPT_MARKER",
        "secret-style",
        "NOSCRIPT_MARKER",
        "TEMPLATE_MARKER",
        "SVG_MARKER",
        "HIDDEN_MARKER",
        "ARIA_MARKER",
        "COMMENT_MARKER",
    ):
        assert marker not in body, marker
    assert body == (
        "Widget manual\n"
        "\n"
        "Home\n"
        "\n"
        "# Widgets\n"
        "\n"
        "A widget is a small part with two ends.\n"
        "\n"
        "## Kinds\n"
        "\n"
        "- round\n"
        "- square\n"
        "  1. big\n"
        "  2. small\n"
        "\n"
        "name | size\n"
        "round | 3 cm\n"
        "\n"
        "def widget():\n"
        "    return 42\n"
        "\n"
        "line one\n"
        "line two\n"
        "\n"
        "Term\n"
        "  Its definition."
    )


def test_html_to_text_survives_malformed_and_deep_html() -> None:
    assert html_to_text("<p>unclosed <b>bold <i>both</p><p>next") == "unclosed bold both\n\nnext"
    assert html_to_text("</div></span>stray end tags<p>") == "stray end tags"
    deep = "<div>" * 5_000 + "deep text" + "</div>" * 5_000
    assert html_to_text(deep) == "deep text"
    assert html_to_text("") == ""


async def test_an_untyped_html_body_is_sniffed_and_converted(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await fetch(tmp_path, public_url(server, "/untyped-html"))
    assert result.ok, result.error
    assert result.output.splitlines()[:2] == ["HTTP 200 OK · (no content type)", "[html content]"]
    assert result.output.endswith("\nsniffed")


async def test_the_meta_charset_decodes_an_html_page(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, public_url(server, "/latin1"))
    assert result.ok, result.error
    assert result.output.endswith("\ncafé")


async def test_text_is_shown_as_it_is(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, public_url(server, "/plain"))
    assert result.ok, result.error
    assert result.output == "HTTP 200 OK · text/plain; charset=utf-8\n\njust text\nsecond line\n"
    result = await fetch(tmp_path, public_url(server, "/json"))
    assert result.output == 'HTTP 200 OK · application/json\n\n{"a": 1}'
    result = await fetch(tmp_path, public_url(server, "/empty"))
    assert result.output == "HTTP 200 OK · text/plain\n\n(empty body)"


# ---------------------------------------------------------------------------------------------
# Refused content, refused URLs


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/png", "image/png"),
        ("/octet", "application/octet-stream"),
        ("/untyped-binary", "binary data"),
    ],
)
async def test_binary_content_is_refused(
    tmp_path: Path, server: LocalServer, path: str, content_type: str
) -> None:
    result = await fetch(tmp_path, public_url(server, path))
    assert not result.ok
    assert result.error is not None and result.error.startswith(
        f"unsupported_content: {content_type} ("
    )
    assert result.output.splitlines()[0].startswith("HTTP 200 OK · ")
    assert "\0" not in result.output


@pytest.mark.parametrize(
    "content_type",
    [
        "image/svg+xml",
        "audio/mpeg",
        "video/mp4",
        "font/woff2",
        "application/pdf",
        "application/zip",
        "application/gzip",
        "application/x-tar",
        "application/wasm",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ],
)
def test_binary_media_types_are_classified_binary(content_type: str) -> None:
    assert classify_content(content_type, b"looks like text") == "binary"


@pytest.mark.parametrize(
    ("content_type", "body", "kind"),
    [
        ("text/html; charset=utf-8", b"", "html"),
        ("application/xhtml+xml", b"", "html"),
        ("text/css", b"", "text"),
        ("application/json", b"", "text"),
        ("application/vnd.api+json", b"", "text"),
        ("application/atom+xml", b"", "text"),
        ("", b"plain words", "text"),
        ("application/x-unknown", b"plain words", "text"),
        ("application/x-unknown", b"a\0b", "binary"),
        ("", b"%PDF-1.7 ...", "binary"),
        ("", b"\xef\xbb\xbf<!doctype html><p>x", "html"),
        ("", "hi".encode("utf-16"), "text"),
    ],
)
def test_content_classification(content_type: str, body: bytes, kind: str) -> None:
    assert classify_content(content_type, body) == kind


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/file",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "gopher://example.com/",
        "not a url",
        "http://",
    ],
)
async def test_non_http_urls_are_invalid(tmp_path: Path, server: LocalServer, url: str) -> None:
    result = await fetch(tmp_path, url, env=ALLOW_ENV)
    assert not result.ok
    assert result.error is not None and result.error.startswith("invalid_url:"), result.error
    assert server.requests == []


async def test_a_missing_url_is_a_missing_argument(tmp_path: Path) -> None:
    result = await run_tool(tmp_path, "fetch_url", {})
    assert result.error == "missing_arg: url"


async def test_loopback_is_blocked_without_the_opt_out(tmp_path: Path, server: LocalServer) -> None:
    for url in (
        server.url("/plain"),
        server.url("/plain", host="localhost"),
        f"http://2130706433:{server.port}/plain",
    ):
        result = await fetch(tmp_path, url)
        assert not result.ok
        assert result.error is not None and result.error.startswith("blocked_url:"), result.error
    assert server.requests == []


async def test_loopback_is_fetched_with_the_opt_out(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, server.url("/plain"), env=ALLOW_ENV)
    assert result.ok, result.error
    assert result.output.endswith("just text\nsecond line\n")


async def test_the_opt_out_is_exact(tmp_path: Path, server: LocalServer) -> None:
    for value in ("true", "yes", "1 ", "0", ""):
        result = await fetch(
            tmp_path, server.url("/plain"), env={**CLOSED_ENV, "LICH_ALLOW_PRIVATE_URLS": value}
        )
        assert result.error is not None and result.error.startswith("blocked_url:"), value
    assert server.requests == []


async def test_the_opt_out_is_read_from_the_tool_environment(
    tmp_path: Path, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process has it but the tool's (configured) environment does not: blocked.
    monkeypatch.setenv("LICH_ALLOW_PRIVATE_URLS", "1")
    result = await fetch(tmp_path, server.url("/plain"), env=CLOSED_ENV)
    assert result.error is not None and result.error.startswith("blocked_url:")
    # An unconfigured context (a direct call) uses the server's own environment, as terminal does.
    result = await fetch(tmp_path, server.url("/plain"), env={})
    assert result.ok, result.error
    # A workspace file cannot turn it on: .env files are not an environment.
    monkeypatch.delenv("LICH_ALLOW_PRIVATE_URLS")
    (tmp_path / ".env").write_text("LICH_ALLOW_PRIVATE_URLS=1\n")
    result = await fetch(tmp_path, server.url("/plain"), env={})
    assert result.error is not None and result.error.startswith("blocked_url:")


async def test_a_public_name_redirecting_to_loopback_is_blocked(
    tmp_path: Path, server: LocalServer
) -> None:
    target = server.url("/plain")
    result = await fetch(tmp_path, public_url(server, f"/redirect?to={quote(target, safe='')}"))
    assert result.error is not None and result.error.startswith("blocked_url:"), result.error
    assert server.paths() == ["/redirect"]


async def test_net_fetch_is_a_capability_the_gate_can_deny(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await run_tool(
        tmp_path,
        "fetch_url",
        {"url": public_url(server, "/plain")},
        gate=CapabilityGate(["file/read"]),
    )
    assert result.error == "capability_denied: net/fetch"
    assert server.requests == []


# ---------------------------------------------------------------------------------------------
# Redirects, status, bounds


async def test_a_redirect_reports_the_final_url(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, public_url(server, "/redirect?to=/plain"))
    assert result.ok, result.error
    lines = result.output.splitlines()
    assert lines[0] == "HTTP 200 OK · text/plain; charset=utf-8"
    assert lines[1] == f"redirected to: {public_url(server, '/plain')} (1 redirect)"
    assert result.details["final_url"] == public_url(server, "/plain")
    assert server.paths() == ["/redirect", "/plain"]


async def test_a_non_2xx_status_fails_and_keeps_the_body(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await fetch(tmp_path, public_url(server, "/missing"))
    assert not result.ok
    assert result.error == "http_404"
    assert result.output.splitlines()[:2] == ["HTTP 404 Not Found · text/html", "[html content]"]
    assert result.output.endswith("# Not here\n\nThe page is gone.")


async def test_text_is_cut_at_max_chars_with_a_note(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, public_url(server, "/ipaddress.html"), max_chars=500)
    assert result.ok, result.error
    head, note = result.output.rsplit("\n", 1)
    assert (
        note.startswith("[... truncated at 500 chars, ")
        and "pass max_chars (at most 100,000)" in note
    )
    assert len(head.split("[html content]\n\n", 1)[1]) == 500
    default = await fetch(tmp_path, public_url(server, "/ipaddress.html"))
    assert f"[... truncated at {DEFAULT_MAX_CHARS:,} chars, " in default.output
    # The executor does not cut the tool's longest output again.
    capped = await fetch(tmp_path, public_url(server, "/ipaddress.html"), max_chars=10**9)
    assert capped.ok and "truncated" not in capped.output


def test_numeric_arguments_are_floored_and_bounded() -> None:
    assert clamp_int_arg({"n": 2.9}, "n", 7, 10) == 2
    assert clamp_int_arg({"n": "5"}, "n", 7, 10) == 5
    assert clamp_int_arg({"n": -3}, "n", 7, 10) == 1
    assert clamp_int_arg({"n": 0.5}, "n", 7, 10) == 1
    assert clamp_int_arg({"n": 99}, "n", 7, 10) == 10
    assert clamp_int_arg({"n": float("inf")}, "n", 7, 10) == 10
    for junk in (None, "abc", True, float("nan"), [3]):
        assert clamp_int_arg({"n": junk}, "n", 7, 10) == 7


async def test_a_body_over_the_byte_bound_is_cut_with_a_note(
    tmp_path: Path, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch_url, "MAX_BODY_BYTES", 1_000)
    server.routes["/long"] = _page(b"x" * 50_000, "text/plain")
    result = await fetch(tmp_path, public_url(server, "/long"))
    assert result.ok, result.error
    assert result.output.endswith(
        "\n"
        + "x" * 1_000
        + "\n[... response body cut at 1,000 bytes: the rest was not downloaded ...]"
    )
    assert result.details["body_truncated"] is True


async def test_a_slow_body_times_out(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, public_url(server, "/slow"), timeout_ms=300)
    assert not result.ok
    assert result.error is not None and result.error.startswith("timeout:"), result.error
    assert "within 0.3 s" in result.error
    await wait_event(server, "slow-hung-up")


async def test_a_server_that_never_answers_times_out(tmp_path: Path, server: LocalServer) -> None:
    result = await fetch(tmp_path, public_url(server, "/stall"), timeout_ms="250")
    assert result.error is not None and result.error.startswith("timeout:"), result.error
    await wait_event(server, "stall-hung-up")


async def test_cancelling_mid_body_ends_the_call(tmp_path: Path, server: LocalServer) -> None:
    cancel = CancelToken()
    call = asyncio.ensure_future(
        run_tool(
            tmp_path,
            "fetch_url",
            {"url": public_url(server, "/slow"), "timeout_ms": MAX_TIMEOUT_MS},
            cancel=cancel,
        )
    )
    await wait_event(server, "slow-first-part")
    assert not call.done()
    cancel.cancel("user pressed stop")
    result = await asyncio.wait_for(call, 5)  # far inside the 120 s deadline: the cancel ended it
    assert not result.ok
    assert result.error == "cancelled"
    await wait_event(server, "slow-hung-up")


async def test_a_direct_call_reports_the_cancellation(tmp_path: Path, server: LocalServer) -> None:
    from lich_core.tools.types import ToolContext

    cancel = CancelToken()
    ctx = ToolContext(work_dir=tmp_path, env=dict(CLOSED_ENV), cancel=cancel)
    call = asyncio.ensure_future(fetch_url.TOOL.execute({"url": public_url(server, "/slow")}, ctx))
    await wait_event(server, "slow-first-part")
    cancel.cancel("stop")
    result = await asyncio.wait_for(call, 5)
    assert result.error is not None and result.error.startswith("cancelled:"), result.error


# ---------------------------------------------------------------------------------------------
# Catalog


def test_the_http_tools_are_in_the_catalog_after_env_get() -> None:
    order = list(CATALOG_ORDER)
    assert order[order.index("env_get") + 1 : order.index("env_get") + 4] == [
        "fetch_url",
        "http_request",
        "web_search",
    ]
    tools = {tool.name: tool for tool in builtin_tools()}
    for name in ("fetch_url", "http_request"):
        assert getattr(tools[name], "capability", None) == "net/fetch"
        assert tools[name].parameters["required"] == ["url"]


def test_the_html_parser_is_imported_by_the_first_html_page_not_by_the_tool_list() -> None:
    """A fresh interpreter (this one has imported it): the tools' registration leaves BeautifulSoup out."""
    probe = (
        "import sys\n"
        "from lich_core.tools.builtin import builtin_tools\n"
        "assert 'fetch_url' in {tool.name for tool in builtin_tools()}\n"
        "print(sorted(name for name in ('bs4', 'lich_core.net.html_text') if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# The CLI (a real `python -m lich_cli tool` process; slow, so one test)


def test_lich_tool_fetch_url_blocks_loopback_unless_the_environment_opts_out(
    tmp_path: Path,
) -> None:
    with LocalServer() as local:
        local.routes["/"] = _page(b"hello from loopback\n", "text/plain")
        args = json.dumps({"url": local.url("/")})
        command = [
            sys.executable,
            "-m",
            "lich_cli",
            "tool",
            "fetch_url",
            args,
            "--work-dir",
            str(tmp_path),
        ]
        env = {key: value for key, value in os.environ.items() if key != "LICH_ALLOW_PRIVATE_URLS"}
        env["PYTHONPATH"] = str(ROOT)
        blocked = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
        )
        assert blocked.returncode == 1, blocked.stderr
        assert "error: blocked_url:" in blocked.stderr
        assert local.requests == []
        allowed = subprocess.run(
            command,
            cwd=tmp_path,
            env={**env, "LICH_ALLOW_PRIVATE_URLS": "1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert allowed.returncode == 0, allowed.stderr
        assert allowed.stdout.splitlines()[0] == "HTTP 200 OK · text/plain"
        assert "hello from loopback" in allowed.stdout
        assert local.paths() == ["/"]
