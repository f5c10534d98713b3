"""http_request against real HTTP servers on 127.0.0.1, through the executor.

The server records every request (method, headers, body), so each test checks what was sent as
well as what the tool reports. A "public" name resolves only through the injected resolver
(tests/net/http_tool_harness.py); loopback URLs need the opt-out in the tool's environment.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lich_core.tools.builtin import http_request
from lich_core.tools.builtin.http_request import ALLOWED_METHODS
from lich_core.vocabulary import CancelToken
from tests.net.http_tool_harness import (
    ALLOW_ENV,
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

TOKEN = "s3cr3t-token-0123456789"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 100


def _echo(h: Handler) -> None:
    """The request as JSON: method, headers, body."""
    payload = {
        "method": h.recorded.method,
        "headers": h.recorded.headers,
        "body": h.recorded.body.decode("utf-8", "replace"),
    }
    h.reply(200, json.dumps(payload).encode(), {"Content-Type": "application/json"})


def _created(h: Handler) -> None:
    h.reply(201, b'{"id": 7}', {"Content-Type": "application/json", "Location": "/items/7"})


def _missing(h: Handler) -> None:
    h.reply(404, b'{"error": "no such item"}', {"Content-Type": "application/json"})


def _limited(h: Handler) -> None:
    h.reply(
        429,
        b"slow down",
        {
            "Content-Type": "text/plain",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": "1700000000",
            "Retry-After": "30",
        },
    )


def _draft_limited(h: Handler) -> None:
    h.reply(200, b"ok", {"Content-Type": "text/plain", "RateLimit-Remaining": "41"})


def _unauthorized_echo(h: Handler) -> None:
    seen = h.recorded.headers.get("authorization", "")
    h.reply(401, f"bad credentials: {seen}".encode(), {"Content-Type": "text/plain"})


def _chunked(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    for part in (b"hello ", b"chunks"):
        h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
    h.wfile.write(b"0\r\n\r\n")


def _png(h: Handler) -> None:
    h.reply(200, PNG, {"Content-Type": "image/png"})


def _html(h: Handler) -> None:
    h.reply(200, b"<html><body><p>raw</p></body></html>", {"Content-Type": "text/html"})


def _no_content(h: Handler) -> None:
    h.send_response(204)
    h.end_headers()


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> FakeNetwork:
    return install_network(monkeypatch)


@pytest.fixture
def server(network: FakeNetwork) -> Iterator[LocalServer]:
    local = LocalServer()
    local.routes.update(
        {
            "/echo": _echo,
            "/items": _created,
            "/missing": _missing,
            "/limited": _limited,
            "/draft-limited": _draft_limited,
            "/unauthorized": _unauthorized_echo,
            "/chunked": _chunked,
            "/png": _png,
            "/html": _html,
            "/no-content": _no_content,
            "/redirect": redirect_route,
            "/slow": slow_route,
            "/stall": stall_route,
        }
    )
    with serving_publicly(local, network):
        yield local


async def request(tmp_path: Path, server: LocalServer, path: str, **args: object):
    return await run_tool(tmp_path, "http_request", {"url": public_url(server, path), **args})


def body_of(output: str) -> str:
    return output.split("\n\n", 1)[1]


# ---------------------------------------------------------------------------------------------
# Methods


@pytest.mark.parametrize("method", ALLOWED_METHODS)
async def test_every_allowed_method_is_sent(
    tmp_path: Path, server: LocalServer, method: str
) -> None:
    result = await request(tmp_path, server, "/echo", method=method.lower())
    assert result.ok, result.error
    assert server.requests[0].method == method
    assert result.output.splitlines()[0] == "HTTP 200 OK"
    assert result.details["method"] == method
    if method == "HEAD":
        assert body_of(result.output) == "(no body)"
        assert "content-length: " in result.output  # the length the GET would have
    else:
        assert json.loads(body_of(result.output))["method"] == method


async def test_the_default_method_is_get(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/echo")
    assert result.ok and server.requests[0].method == "GET"


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "FETCH", "GET /x", 7, ["GET"]])
async def test_other_methods_are_invalid_requests(
    tmp_path: Path, server: LocalServer, method: object
) -> None:
    result = await request(tmp_path, server, "/echo", method=method)
    assert not result.ok
    assert result.error is not None and result.error.startswith("invalid_request:"), result.error
    assert server.requests == []


# ---------------------------------------------------------------------------------------------
# Headers and body


async def test_headers_are_stringified_and_sent(tmp_path: Path, server: LocalServer) -> None:
    headers = {
        "X-Name": "value",
        "X-Count": 3,
        "X-Ratio": 1.5,
        "X-Flag": True,
        "X-Off": False,
        "X-Obj": {"a": [1, 2]},
        "X-Skipped": None,
        "Accept": "application/json",
    }
    result = await request(tmp_path, server, "/echo", headers=headers)
    assert result.ok, result.error
    sent = server.requests[0].headers
    assert sent["x-name"] == "value"
    assert sent["x-count"] == "3"
    assert sent["x-ratio"] == "1.5"
    assert sent["x-flag"] == "true"
    assert sent["x-off"] == "false"
    assert sent["x-obj"] == '{"a":[1,2]}'
    assert "x-skipped" not in sent
    assert sent["accept"] == "application/json"
    assert sent["user-agent"].startswith("lich/")


@pytest.mark.parametrize("headers", [["X-A", "b"], "X-A: b", 3])
async def test_headers_must_be_an_object(
    tmp_path: Path, server: LocalServer, headers: object
) -> None:
    result = await request(tmp_path, server, "/echo", headers=headers)
    assert result.error is not None and result.error.startswith(
        "invalid_request: headers must be a JSON object"
    )
    assert server.requests == []


async def test_a_bad_header_is_refused_without_showing_its_value(
    tmp_path: Path, server: LocalServer
) -> None:
    for headers in (
        {"Authorization": f"Bearer {TOKEN}\r\nX-Injected: 1"},
        {"Authorization": f"Bearer {TOKEN}\x01"},
    ):
        result = await request(tmp_path, server, "/echo", headers=headers)
        assert (
            result.error
            == "invalid_request: the value of header 'Authorization' holds a control character"
        )
    result = await request(tmp_path, server, "/echo", headers={"Bad Name": "x"})
    assert result.error == "invalid_request: 'Bad Name' is not a valid header name"
    assert server.requests == []


async def test_a_string_body_is_sent_as_utf8(tmp_path: Path, server: LocalServer) -> None:
    result = await request(
        tmp_path,
        server,
        "/echo",
        method="POST",
        body='{"name": "café"}',
        headers={"Content-Type": "application/json"},
    )
    assert result.ok, result.error
    sent = server.requests[0]
    assert sent.body == '{"name": "café"}'.encode()
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["content-length"] == str(len('{"name": "café"}'.encode()))


async def test_an_object_body_is_sent_as_json(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/echo", method="PUT", body={"n": 1, "tags": ["a"]})
    assert result.ok, result.error
    sent = server.requests[0]
    assert json.loads(sent.body) == {"n": 1, "tags": ["a"]}
    assert sent.headers["content-type"] == "application/json"


# ---------------------------------------------------------------------------------------------
# What the output reports


async def test_status_type_and_length_are_reported(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/items", method="POST", body="{}")
    assert result.ok, result.error
    assert result.output == (
        "HTTP 201 Created\ncontent-type: application/json\ncontent-length: 9\n\n" + '{"id": 7}'
    )


async def test_a_missing_content_length_reports_what_was_read(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await request(tmp_path, server, "/chunked")
    assert result.ok, result.error
    assert "\ncontent-length: (none; 12 bytes read)\n" in result.output
    assert body_of(result.output) == "hello chunks"


async def test_a_non_2xx_status_fails_and_keeps_status_and_body(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await request(tmp_path, server, "/missing", method="DELETE")
    assert not result.ok
    assert result.error == "http_404"
    assert result.output.splitlines()[0] == "HTTP 404 Not Found"
    assert body_of(result.output) == '{"error": "no such item"}'
    assert result.details["status"] == 404


async def test_rate_limit_and_retry_after_are_reported(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/limited")
    assert result.error == "http_429"
    assert result.output.splitlines()[:6] == [
        "HTTP 429 Too Many Requests",
        "content-type: text/plain",
        "content-length: 9",
        "x-ratelimit-remaining: 0",
        "x-ratelimit-reset: 1700000000",
        "retry-after: 30",
    ]
    assert body_of(result.output) == "slow down"
    result = await request(tmp_path, server, "/draft-limited")
    assert "\nratelimit-remaining: 41\n" in result.output


async def test_a_binary_body_is_summarised(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/png")
    assert result.ok, result.error
    assert body_of(result.output) == f"[{len(PNG)} bytes of image/png]"


async def test_html_is_returned_raw(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/html")
    assert body_of(result.output) == "<html><body><p>raw</p></body></html>"


async def test_no_content_reads_no_body(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/no-content", method="DELETE")
    assert result.ok, result.error
    assert result.output.splitlines()[0] == "HTTP 204 No Content"
    assert body_of(result.output) == "(no body)"


async def test_a_redirect_reports_the_final_url(tmp_path: Path, server: LocalServer) -> None:
    result = await request(
        tmp_path, server, "/redirect?status=307&to=/echo", method="POST", body="again"
    )
    assert result.ok, result.error
    assert f"\nredirected to: {public_url(server, '/echo')} (1 redirect)\n" in result.output
    assert server.requests[1].method == "POST" and server.requests[1].body == b"again"


async def test_the_body_is_cut_at_max_chars(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/echo", max_chars=20)
    assert result.ok, result.error
    body = body_of(result.output)
    assert body.startswith('{"method": "GET", "h\n[... truncated at 20 chars, ')


# ---------------------------------------------------------------------------------------------
# Secrets


async def test_authorization_is_never_echoed(tmp_path: Path, server: LocalServer) -> None:
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "X-Api-Key": "key-abcdef123456",
        "Cookie": "session=abcdef0123",
    }
    result = await request(tmp_path, server, "/echo", headers=headers)
    assert result.ok, result.error
    sent = server.requests[0].headers
    assert sent["authorization"] == f"Bearer {TOKEN}"  # sent as given
    assert sent["x-api-key"] == "key-abcdef123456"
    for secret in (TOKEN, "key-abcdef123456", "session=abcdef0123"):
        assert secret not in result.output
    echoed = json.loads(body_of(result.output))["headers"]
    assert echoed["authorization"] == f"<redacted: {len(f'Bearer {TOKEN}')} chars>"
    assert echoed["x-api-key"] == "<redacted: 16 chars>"


async def test_a_credential_echoed_in_an_error_is_masked(
    tmp_path: Path, server: LocalServer
) -> None:
    result = await request(
        tmp_path, server, "/unauthorized", headers={"authorization": f"token {TOKEN}"}
    )
    assert result.error == "http_401"
    assert TOKEN not in result.output
    assert "bad credentials: <redacted: " in result.output


# ---------------------------------------------------------------------------------------------
# Safety, deadlines


async def test_loopback_is_blocked_without_the_opt_out(tmp_path: Path, server: LocalServer) -> None:
    result = await run_tool(
        tmp_path, "http_request", {"url": server.url("/echo"), "method": "POST"}
    )
    assert result.error is not None and result.error.startswith("blocked_url:")
    assert server.requests == []
    allowed = await run_tool(
        tmp_path, "http_request", {"url": server.url("/echo"), "method": "POST"}, env=ALLOW_ENV
    )
    assert allowed.ok, allowed.error
    assert server.requests[0].method == "POST"


async def test_non_http_urls_are_invalid(tmp_path: Path, server: LocalServer) -> None:
    for url in ("file:///etc/passwd", "ftp://example.com/", "ws://example.com/"):
        result = await run_tool(tmp_path, "http_request", {"url": url})
        assert result.error is not None and result.error.startswith("invalid_url:"), url
    assert (await run_tool(tmp_path, "http_request", {})).error == "missing_arg: url"


async def test_a_server_that_never_answers_times_out(tmp_path: Path, server: LocalServer) -> None:
    result = await request(tmp_path, server, "/stall", method="POST", body="x", timeout_ms=250)
    assert result.error is not None and result.error.startswith("timeout:"), result.error
    await wait_event(server, "stall-hung-up")


async def test_cancelling_mid_body_ends_the_call(tmp_path: Path, server: LocalServer) -> None:
    cancel = CancelToken()
    call = asyncio.ensure_future(
        run_tool(tmp_path, "http_request", {"url": public_url(server, "/slow")}, cancel=cancel)
    )
    await wait_event(server, "slow-first-part")
    cancel.cancel()
    result = await asyncio.wait_for(call, 5)
    assert result.error == "cancelled"
    await wait_event(server, "slow-hung-up")


def test_the_tool_declares_its_contract() -> None:
    tool = http_request.TOOL
    assert tool.capability == "net/fetch"
    assert tool.parameters["properties"]["method"]["enum"] == list(ALLOWED_METHODS)
    assert tool.timeout_ms is not None and tool.timeout_ms > 120_000
