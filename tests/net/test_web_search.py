"""web_search against real servers on 127.0.0.1: DuckDuckGo's HTML page and SearXNG's JSON API.

The tool's own code path runs unchanged, its default endpoint included: the test replaces only
safe_fetch's seams. The default resolver answers from a table (`html.duckduckgo.com` is
127.0.0.1, reached with `LICH_ALLOW_PRIVATE_URLS=1` in the tool environment, or a public address
where a test is about the closed environment) and fails the test for any other name;
`socket.getaddrinfo` resolves numeric hosts only. The default connector connects every vetted
address to 127.0.0.1: port 443 to a TLS server whose certificate is for html.duckduckgo.com (its
CA is the only one the default SSL context trusts here), any other port to itself. So the request
is the real one - POST https://html.duckduckgo.com/html/, SNI and Host html.duckduckgo.com - and
nothing leaves loopback. Tests wait on events, never on time; every await is bounded.

The DuckDuckGo pages are fixtures (tests/fixtures/net/ddg_*.html; provenance in the README there).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpcore
import pytest

from lich_core.config import KEYS, SIDE_USER, load_config, set_workspace_trust
from lich_core.errors import ConfigError
from lich_core.net import safe_fetch as sf
from lich_core.runtime import build_tool_runtime
from lich_core.tools.builtin.web_search import (
    DEFAULT_MAX_RESULTS,
    MAX_RESULTS,
    TOOL,
    DuckDuckGoPage,
    unwrap_result_url,
)
from lich_core.tools.secrets import configured_key_env_names
from lich_core.tools.types import DUCKDUCKGO_HTML_URL, ToolContext, WebSearchBackend
from lich_core.trust import TRUSTED, UNTRUSTED
from lich_core.vocabulary import CancelToken, ToolResult
from tests.net.local_server import Handler, LocalServer
from tests.support.certificates import make_certificates

pytestmark = pytest.mark.timeout(60)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "net"
DDG_HOST = "html.duckduckgo.com"
ALLOW = {"LICH_ALLOW_PRIVATE_URLS": "1"}
# A tool environment without the opt-out (an empty one would mean "the server's own").
CLOSED = {"PATH": "/usr/bin:/bin"}
PUBLIC_IP = "52.149.246.39"
BOUND_S = 15.0
REAL_CONNECT = sf.default_connect

RESULTS_PAGE = (FIXTURES / "ddg_python_ipaddress.html").read_bytes()
NO_RESULTS_PAGE = (FIXTURES / "ddg_no_results.html").read_bytes()
ANOMALY_PAGE = (FIXTURES / "ddg_anomaly.html").read_bytes()
HTML = {"Content-Type": "text/html; charset=UTF-8"}

# Every organic result of ddg_python_ipaddress.html, in page order, as the parser must read it.
EXPECTED = [
    (
        "ipaddress — IPv4/IPv6 manipulation library — Python 3.13.1 documentation",
        "https://docs.python.org/3/library/ipaddress.html",
        "Source code: Lib/ipaddress.py ipaddress provides the capabilities to create, manipulate and "
        "operate on IPv4 and IPv6 addresses and networks. The functions and classes in this module "
        "make it straightforward to handle various tasks related to IP addresses, including checking "
        "whether or not two hosts are on the same subnet, iterating over all hosts in a particular "
        "subnet, checking whether or not a string represents a valid IP address or network "
        "definition, and so on.",
    ),
    (
        "An introduction to the ipaddress module — Python 3.13.1 documentation",
        "https://docs.python.org/3/howto/ipaddress.html",
        "This document aims to provide a gentle introduction to the ipaddress module. It is aimed "
        "primarily at users that aren't already familiar with IP networking terminology, but may "
        "also be useful to network engineers wanting an overview of how ipaddress represents IP "
        "network addressing concepts.",
    ),
    (
        "Learn IP Address Concepts With Python's ipaddress Module",
        "https://realpython.com/python-ipaddress-module/",
        "In this tutorial, you'll learn how to inspect and manipulate IP addresses as Python objects "
        "with Python's ipaddress module, and improve your understanding of IP addressing & "
        "networking along the way.",
    ),
    (
        "How can I check if an ip is in a network in Python? - Stack Overflow",
        "https://stackoverflow.com/questions/819355/how-can-i-check-if-an-ip-is-in-a-network-in-python",
        "Given an ip address (say 192.168.0.1), how do I check if it's in a network (say "
        '192.168.0.0/24) in Python? >>> ipaddress.ip_address("192.168.0.1") in '
        'ipaddress.ip_network("192.168.0.0/24") True',
    ),
    (
        "Highest scored 'python' and 'ip-address' questions - Page 2 - Stack Overflow",
        "https://stackoverflow.com/questions/tagged/python+ip-address?tab=Votes&page=2",
        "Python ipaddress: get network address from an interface <ip>/<prefix> string. Asked 6 years ago.",
    ),
    (
        "cpython/Lib/ipaddress.py at main · python/cpython · GitHub",
        "https://github.com/python/cpython/blob/main/Lib/ipaddress.py",
        '"""A fast, lightweight IPv4/IPv6 manipulation library in Python. This library is used to '
        'create/poke/manipulate IPv4 and IPv6 addresses and networks. """',
    ),
    (
        "ipaddress · PyPI",
        "https://pypi.org/project/ipaddress/",
        "Port of the 3.3+ ipaddress module to 2.6, 2.7, 3.2",
    ),
    (
        "Python ipaddress: Convert and Manipulate IP Addresses - GeeksforGeeks",
        "https://www.geeksforgeeks.org/python/ipaddress-convert-and-manipulate-ip-addresses-in-python/",
        "The ipaddress module in Python is used to create, manipulate and operate on IPv4 and IPv6 "
        "addresses and networks. Let's look at the basics & a few examples.",
    ),
    (
        "ipaddress — Internet Addresses — PyMOTW 3",
        "https://pymotw.com/3/ipaddress/",
        "The ipaddress module includes classes for working with IPv4 and IPv6 network addresses. The "
        "classes support validation, finding addresses and hosts on a network, and other common "
        "operations.",
    ),
]


def numbered(results: list[tuple[str, str, str]]) -> str:
    return "\n\n".join(
        f"{n}. {title}\n   {url}" + (f"\n   {snippet}" if snippet else "")
        for n, (title, url, snippet) in enumerate(results, 1)
    )


# ---------------------------------------------------------------------------------------------
# Seams: the resolver table, the connector, the trusted CA


class Net:
    """What the tool's requests meet: names resolve from `table`, connects go to 127.0.0.1."""

    def __init__(self) -> None:
        self.table: dict[str, list[str]] = {}
        self.resolved: list[str] = []
        self.connects: list[tuple[str, int]] = []
        self.tls_port = 0

    async def resolve(self, host: str, port: int) -> list[str]:
        self.resolved.append(host)
        if host not in self.table:
            raise AssertionError(f"unexpected resolution of {host!r}")
        return self.table[host]

    async def connect(
        self, ip: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((ip, port))
        if port == 443:
            return await REAL_CONNECT("127.0.0.1", self.tls_port, timeout)
        assert ip == "127.0.0.1", f"only loopback is reachable here, not {ip}"
        return await REAL_CONNECT(ip, port, timeout)


@pytest.fixture
def net(monkeypatch: pytest.MonkeyPatch) -> Net:
    seams = Net()
    seams.table[DDG_HOST] = ["127.0.0.1"]
    monkeypatch.setattr(sf, "default_resolver", seams.resolve)
    monkeypatch.setattr(sf, "default_connect", seams.connect)
    real_getaddrinfo = socket.getaddrinfo

    def numeric_only(
        host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> Any:  # noqa: A002
        return real_getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    monkeypatch.setattr(socket, "getaddrinfo", numeric_only)
    monkeypatch.delenv("LICH_ALLOW_PRIVATE_URLS", raising=False)
    return seams


class Page:
    """What the DuckDuckGo route answers (a test changes it before the call)."""

    def __init__(self) -> None:
        self.status = 200
        self.body = RESULTS_PAGE
        self.headers = dict(HTML)


@pytest.fixture
def ddg(
    net: Net, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[LocalServer, Page]]:
    """html.duckduckgo.com: a TLS server on 127.0.0.1 with a certificate for that name."""
    ca_path, leaf_path, key_path = make_certificates(tmp_path, DDG_HOST)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(leaf_path, key_path)
    client_context = ssl.create_default_context(cafile=str(ca_path))
    monkeypatch.setattr(sf, "_default_ssl_context", lambda: client_context)
    page = Page()
    server = LocalServer(server_context)

    def html(h: Handler) -> None:
        h.reply(page.status, page.body, page.headers)

    def stall(h: Handler) -> None:
        h.server.local.events["stall-request"].set()
        if h.wait_for_hang_up():
            h.server.local.events["stall-hung-up"].set()
        h.close_connection = True

    server.routes["/html/"] = html
    server.routes["/stall/"] = stall
    with server:
        net.tls_port = server.port
        yield server, page


class Searx:
    """What the SearXNG route answers."""

    def __init__(self) -> None:
        self.status = 200
        self.body = json.dumps(SEARXNG_ANSWER).encode()
        self.headers = {"Content-Type": "application/json"}


@pytest.fixture
def searx(net: Net) -> Iterator[tuple[LocalServer, Searx]]:
    """A SearXNG instance: plain HTTP on 127.0.0.1, `searx.test` in the resolver table."""
    answer = Searx()
    server = LocalServer()

    def search(h: Handler) -> None:
        h.reply(answer.status, answer.body, answer.headers)

    server.routes["/search"] = search
    server.routes["/searx/search"] = search
    net.table["searx.test"] = ["127.0.0.1"]
    with server:
        yield server, answer


def context(
    tmp_path: Path, env: dict[str, str], backend: WebSearchBackend | None = None, **kwargs: Any
) -> ToolContext:
    ctx = ToolContext(work_dir=tmp_path, env=dict(env), **kwargs)
    if backend is not None:
        ctx.web_search = backend
    return ctx


async def search(ctx: ToolContext, **args: Any) -> ToolResult:
    return await asyncio.wait_for(TOOL.execute(args, ctx), BOUND_S)


def searxng(
    server: LocalServer, path: str = "/", host: str = "searx.test", **extra: Any
) -> WebSearchBackend:
    return WebSearchBackend(kind="searxng", url=server.url(path, host=host), **extra)


SEARXNG_ANSWER: dict[str, Any] = {
    "query": "python ipaddress",
    "number_of_results": 0,
    "results": [
        {
            "url": "https://docs.python.org/3/library/ipaddress.html",
            "title": "ipaddress — IPv4/IPv6 manipulation library — Python 3.13.1 documentation",
            "content": "ipaddress provides the capabilities to create, manipulate and operate on IPv4 and IPv6 addresses and networks.",
            "engine": "duckduckgo",
            "parsed_url": ["https", "docs.python.org", "/3/library/ipaddress.html", "", "", ""],
            "template": "default.html",
            "engines": ["duckduckgo", "brave", "startpage"],
            "positions": [1, 1, 2],
            "publishedDate": None,
            "thumbnail": "",
            "score": 9.0,
            "category": "general",
        },
        {
            "url": "https://realpython.com/python-ipaddress-module/",
            "title": "Learn IP Address Concepts With Python's ipaddress Module",
            "content": "In this tutorial, you'll learn how to inspect and manipulate IP addresses\n   as Python objects.",
            "engine": "brave",
            "parsed_url": ["https", "realpython.com", "/python-ipaddress-module/", "", "", ""],
            "template": "default.html",
            "engines": ["brave", "duckduckgo"],
            "positions": [2, 3],
            "score": 1.5,
            "category": "general",
        },
        {
            "url": "magnet:?xt=urn:btih:0123",
            "title": "not a web page",
            "content": "",
            "engine": "piratebay",
        },
        {
            "url": "https://pypi.org/project/ipaddress/",
            "title": "ipaddress · PyPI",
            "content": "",
            "engine": "startpage",
            "engines": ["startpage"],
            "positions": [4],
            "score": 0.25,
            "category": "general",
        },
    ],
    "answers": [],
    "corrections": [],
    "infoboxes": [],
    "suggestions": ["python ipaddress network"],
    "unresponsive_engines": [["google", "timeout"]],
}
SEARXNG_EXPECTED = [
    (
        "ipaddress — IPv4/IPv6 manipulation library — Python 3.13.1 documentation",
        "https://docs.python.org/3/library/ipaddress.html",
        "ipaddress provides the capabilities to create, manipulate and operate on IPv4 and IPv6 addresses and networks.",
    ),
    (
        "Learn IP Address Concepts With Python's ipaddress Module",
        "https://realpython.com/python-ipaddress-module/",
        "In this tutorial, you'll learn how to inspect and manipulate IP addresses as Python objects.",
    ),
    ("ipaddress · PyPI", "https://pypi.org/project/ipaddress/", ""),
]


# ---------------------------------------------------------------------------------------------
# DuckDuckGo: the request and the page


async def test_the_default_endpoint_gets_the_search_form_and_the_page_is_parsed(
    ddg: tuple[LocalServer, Page], net: Net, tmp_path: Path
) -> None:
    server, _ = ddg
    result = await search(context(tmp_path, ALLOW), query="python ipaddress")
    assert result.ok, result.error
    assert result.output == numbered(EXPECTED[:DEFAULT_MAX_RESULTS])
    assert result.details["results"] == [
        {"title": t, "url": u, "snippet": s} for t, u, s in EXPECTED[:DEFAULT_MAX_RESULTS]
    ]
    assert (result.details["total"], result.details["ads_skipped"]) == (len(EXPECTED), 2)
    assert (result.details["backend"], result.details["endpoint"]) == (
        "duckduckgo",
        DUCKDUCKGO_HTML_URL,
    )
    # The request DuckDuckGo's own form sends: POST /html/ with q, b, kl and df, to the real name.
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/html/")
    assert request.headers["host"] == DDG_HOST
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(request.body.decode(), keep_blank_values=True) == {
        "q": ["python ipaddress"],
        "b": [""],
        "kl": [""],
        "df": [""],
    }
    assert server.server_names == [DDG_HOST]
    assert net.resolved == [DDG_HOST]
    assert net.connects == [("127.0.0.1", 443)]


async def test_every_organic_result_with_redirects_unwrapped_and_entities_decoded(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    result = await search(
        context(tmp_path, ALLOW), query="python ipaddress", max_results=MAX_RESULTS
    )
    assert result.ok, result.error
    assert result.output == numbered(EXPECTED)
    # uddg= redirects are unwrapped: percent-decoded once, `+` and `&` of the target kept.
    assert (
        "duckduckgo.com" not in result.output
        and "uddg" not in result.output
        and "rut=" not in result.output
    )
    assert (
        "https://stackoverflow.com/questions/tagged/python+ip-address?tab=Votes&page=2"
        in result.output
    )
    # The entities DuckDuckGo writes are decoded in titles and snippets; its <b> marks are gone.
    for entity in ("&amp;", "&#x27;", "&quot;", "&lt;", "&gt;", "&nbsp;", "<b>", "</b>"):
        assert entity not in result.output
    assert "Python's ipaddress Module" in result.output and "<ip>/<prefix>" in result.output


async def test_ads_are_skipped(ddg: tuple[LocalServer, Page], tmp_path: Path) -> None:
    result = await search(
        context(tmp_path, ALLOW), query="python ipaddress", max_results=MAX_RESULTS
    )
    assert result.ok
    assert ".example" not in result.output and "y.js" not in result.output
    assert "Course" not in result.output and "Free 30-Day Trial" not in result.output
    assert result.details["ads_skipped"] == 2
    assert result.output.startswith("1. ipaddress — IPv4/IPv6 manipulation library")


@pytest.mark.parametrize(
    ("max_results", "shown"),
    [
        (1, 1),
        (3, 3),
        ("2", 2),
        (2.7, 2),
        (0, 1),
        (-3, 1),
        (None, DEFAULT_MAX_RESULTS),
        ("many", DEFAULT_MAX_RESULTS),
        (1000, len(EXPECTED)),
    ],
)
async def test_max_results_is_honoured(
    ddg: tuple[LocalServer, Page], tmp_path: Path, max_results: Any, shown: int
) -> None:
    args: dict[str, Any] = {"query": "python ipaddress"}
    if max_results is not None:
        args["max_results"] = max_results
    result = await search(context(tmp_path, ALLOW), **args)
    assert result.ok
    assert result.output == numbered(EXPECTED[:shown])
    assert len(result.details["results"]) == shown and result.details["total"] == len(EXPECTED)


async def test_no_results_is_a_successful_empty_search(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    _, page = ddg
    page.body = NO_RESULTS_PAGE
    result = await search(context(tmp_path, ALLOW), query="zqxjv wplmrt ipaddress kvbnaaa")
    assert result.ok, result.error
    assert result.output == "no results for 'zqxjv wplmrt ipaddress kvbnaaa'"
    assert result.details["results"] == [] and result.details["total"] == 0


@pytest.mark.parametrize("status", [202, 200, 403])
async def test_the_bot_check_page_is_search_blocked(
    ddg: tuple[LocalServer, Page], tmp_path: Path, status: int
) -> None:
    _, page = ddg
    page.status, page.body = status, ANOMALY_PAGE
    result = await search(context(tmp_path, ALLOW), query="python ipaddress")
    assert not result.ok
    assert result.error is not None and result.error.startswith(
        "search_blocked: DuckDuckGo (html.duckduckgo.com)"
    )
    assert f"HTTP {status}" in result.error and "SearXNG" in result.error


async def test_a_rate_limit_without_a_page_is_search_blocked(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    _, page = ddg
    page.status, page.body = 429, b""
    result = await search(context(tmp_path, ALLOW), query="python ipaddress")
    assert (
        result.error is not None
        and result.error.startswith("search_blocked:")
        and "HTTP 429" in result.error
    )


async def test_a_page_that_is_not_a_results_page_is_a_bad_response(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    _, page = ddg
    page.body = b"<!DOCTYPE html><html><head><title>DuckDuckGo</title></head><body><p>Moved on.</p></body></html>"
    result = await search(context(tmp_path, ALLOW), query="python ipaddress")
    assert result.error is not None and result.error.startswith(
        "bad_response: the page from html.duckduckgo.com"
    )


async def test_another_error_status_is_http_status(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    _, page = ddg
    page.status, page.body = 500, b"oops"
    result = await search(context(tmp_path, ALLOW), query="python ipaddress")
    assert (
        result.error
        == "http_500: DuckDuckGo (html.duckduckgo.com) answered 500 Internal Server Error"
    )


async def test_a_bang_redirect_is_reported_not_followed(
    ddg: tuple[LocalServer, Page], net: Net, tmp_path: Path
) -> None:
    server, page = ddg
    page.status, page.body = 303, b""
    page.headers = {"Location": "https://en.wikipedia.org/wiki/Special:Search?search=ipaddress"}
    result = await search(context(tmp_path, ALLOW), query="!w ipaddress")
    assert result.error is not None and result.error.startswith(
        "http_303: DuckDuckGo (html.duckduckgo.com) answered a redirect"
    )
    assert "https://en.wikipedia.org/wiki/Special:Search?search=ipaddress" in result.error
    assert len(server.requests) == 1 and net.resolved == [DDG_HOST]


async def test_the_endpoint_on_a_private_address_is_refused_without_the_opt_out(
    ddg: tuple[LocalServer, Page], net: Net, tmp_path: Path
) -> None:
    server, _ = ddg
    result = await search(context(tmp_path, CLOSED), query="python ipaddress")
    assert result.error is not None and result.error.startswith(
        "blocked_url: https://html.duckduckgo.com/html/"
    )
    assert "127.0.0.1 (loopback)" in result.error
    assert server.requests == [] and net.connects == []


async def test_a_public_address_needs_no_opt_out(
    ddg: tuple[LocalServer, Page], net: Net, tmp_path: Path
) -> None:
    net.table[DDG_HOST] = [PUBLIC_IP]
    result = await search(context(tmp_path, CLOSED), query="python ipaddress", max_results=2)
    assert result.ok, result.error
    assert result.output == numbered(EXPECTED[:2])
    assert net.connects == [(PUBLIC_IP, 443)]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "missing_arg: query"),
        ({"query": ""}, "missing_arg: query"),
        ({"query": " \n\t "}, "missing_arg: query"),
        ({"query": ["python"]}, "missing_arg: query"),
        ({"query": "x" * 500}, "invalid_arg: query is 500 characters; at most 499"),
    ],
)
async def test_a_missing_or_overlong_query_sends_nothing(
    ddg: tuple[LocalServer, Page], net: Net, tmp_path: Path, args: dict[str, Any], error: str
) -> None:
    server, _ = ddg
    result = await search(context(tmp_path, ALLOW), **args)
    assert (result.ok, result.error) == (False, error)
    assert server.requests == [] and net.resolved == []


async def test_whitespace_in_the_query_is_collapsed(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    server, _ = ddg
    result = await search(context(tmp_path, ALLOW), query="  python\n  ipaddress ")
    assert result.ok and result.details["query"] == "python ipaddress"
    assert parse_qs(server.requests[0].body.decode())["q"] == ["python ipaddress"]


async def test_cancelling_the_call_hangs_up_the_request(
    ddg: tuple[LocalServer, Page], tmp_path: Path
) -> None:
    server, _ = ddg
    token = CancelToken()
    backend = WebSearchBackend(url=f"https://{DDG_HOST}/stall/")
    task = asyncio.ensure_future(
        TOOL.execute({"query": "python ipaddress"}, context(tmp_path, ALLOW, backend, cancel=token))
    )
    assert await asyncio.to_thread(server.events["stall-request"].wait, BOUND_S)
    token.cancel("cancelled")
    result = await asyncio.wait_for(task, BOUND_S)
    assert (result.ok, result.error) == (False, "cancelled")
    assert await asyncio.to_thread(server.events["stall-hung-up"].wait, BOUND_S)


# ---------------------------------------------------------------------------------------------
# The parser alone


@pytest.mark.parametrize(
    ("href", "url"),
    [
        (
            "//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.python.org%2F3%2F&rut=ab12",
            "https://docs.python.org/3/",
        ),
        (
            "/l/?uddg=https%3A%2F%2Fexample.org%2Fa%3Fb%3D1%26c%3D2&rut=x",
            "https://example.org/a?b=1&c=2",
        ),
        ("https://duckduckgo.com/l/?uddg=http%3A%2F%2Fexample.org%2F", "http://example.org/"),
        ("https://example.org/direct", "https://example.org/direct"),
        ("//example.org/scheme-relative", "https://example.org/scheme-relative"),
        ("https://duckduckgo.com/y.js?ad_domain=x.example&u3=https%3A%2F%2Fx.example", None),
        ("//duckduckgo.com/l/?rut=only", None),
        ("//duckduckgo.com/l/?uddg=javascript%3Aalert(1)", None),
        ("mailto:someone@example.org", None),
        ("http://[::1", None),
    ],
)
def test_unwrap_result_url(href: str, url: str | None) -> None:
    assert unwrap_result_url(href) == url


def test_a_result_block_without_closing_tags_ends_at_the_next_one() -> None:
    page = DuckDuckGoPage()
    page.feed(
        '<div id="links"><div class="result web-result"><h2><a class="result__a" href="https://a.example/">A'
        '<div class="result web-result"><a class="result__a" href="https://b.example/">B</a>'
        '<a class="result__snippet">second &amp; last</a>'
    )
    page.close()
    assert [(hit.title, hit.url, hit.snippet) for hit in page.hits] == [
        ("A", "https://a.example/", ""),
        ("B", "https://b.example/", "second & last"),
    ]


def test_the_fixture_page_markers() -> None:
    results, empty, anomaly = DuckDuckGoPage(), DuckDuckGoPage(), DuckDuckGoPage()
    for parser, body in (
        (results, RESULTS_PAGE),
        (empty, NO_RESULTS_PAGE),
        (anomaly, ANOMALY_PAGE),
    ):
        parser.feed(body.decode("utf-8"))
        parser.close()
    assert (len(results.hits), results.ads_skipped, results.challenge, results.no_results) == (
        9,
        2,
        False,
        False,
    )
    assert (empty.hits, empty.has_results_list, empty.no_results, empty.challenge) == (
        [],
        True,
        True,
        False,
    )
    assert (anomaly.hits, anomaly.challenge, anomaly.has_results_list) == ([], True, False)


# ---------------------------------------------------------------------------------------------
# SearXNG


async def test_a_searxng_json_answer_is_parsed(
    searx: tuple[LocalServer, Searx], tmp_path: Path
) -> None:
    server, _ = searx
    result = await search(context(tmp_path, ALLOW, searxng(server)), query="python ipaddress")
    assert result.ok, result.error
    assert result.output == numbered(SEARXNG_EXPECTED)
    assert result.details["backend"] == "searxng" and result.details["unresponsive_engines"] == [
        "google (timeout)"
    ]
    [request] = server.requests
    assert (request.method, request.path) == ("GET", "/search")
    assert request.query == {"q": ["python ipaddress"], "format": ["json"]}
    assert request.headers["host"] == f"searx.test:{server.port}"
    assert "authorization" not in request.headers


async def test_searxng_keeps_the_configured_path_and_parameters(
    searx: tuple[LocalServer, Searx], tmp_path: Path
) -> None:
    server, _ = searx
    backend = searxng(server, "/searx/search?language=en&format=html&q=old")
    result = await search(context(tmp_path, ALLOW, backend), query="python ipaddress")
    assert result.ok, result.error
    [request] = server.requests
    assert request.path == "/searx/search"
    assert request.query == {"language": ["en"], "q": ["python ipaddress"], "format": ["json"]}


async def test_searxng_results_are_bounded_by_max_results(
    searx: tuple[LocalServer, Searx], tmp_path: Path
) -> None:
    server, answer = searx
    many = [
        {"url": f"https://example.org/{n}", "title": f"Result {n}", "content": f"snippet {n}"}
        for n in range(1, 31)
    ]
    answer.body = json.dumps({"query": "q", "results": many}).encode()
    result = await search(context(tmp_path, ALLOW, searxng(server)), query="q", max_results=1000)
    assert result.ok
    assert result.output == numbered(
        [
            (f"Result {n}", f"https://example.org/{n}", f"snippet {n}")
            for n in range(1, MAX_RESULTS + 1)
        ]
    )
    assert result.details["total"] == 30


async def test_searxng_without_results_names_the_engines_that_did_not_answer(
    searx: tuple[LocalServer, Searx], tmp_path: Path
) -> None:
    server, answer = searx
    answer.body = json.dumps(
        {
            "query": "q",
            "results": [],
            "unresponsive_engines": [["duckduckgo", "CAPTCHA"], ["brave", ""]],
        }
    ).encode()
    result = await search(context(tmp_path, ALLOW, searxng(server)), query="q")
    assert (result.ok, result.output) == (
        True,
        "no results for 'q' (engines that did not answer: duckduckgo (CAPTCHA), brave)",
    )


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (
            403,
            b"Forbidden",
            "http_403: the SearXNG instance at searx.test:{port} refused the request; it answers JSON only when its settings.yml lists json in search.formats",
        ),
        (
            429,
            b"Too Many Requests",
            "search_blocked: the SearXNG instance at searx.test:{port} rate-limited the request (HTTP 429)",
        ),
        (502, b"", "http_502: the SearXNG instance at searx.test:{port} answered 502 Bad Gateway"),
        (
            200,
            b"<html>not json</html>",
            "bad_response: searx.test:{port} did not answer SearXNG's JSON (Expecting value: line 1 column 1 (char 0))",
        ),
        (
            200,
            b'{"results": "none"}',
            "bad_response: searx.test:{port} did not answer SearXNG's JSON (no `results` list)",
        ),
    ],
)
async def test_searxng_failures(
    searx: tuple[LocalServer, Searx], tmp_path: Path, status: int, body: bytes, error: str
) -> None:
    server, answer = searx
    answer.status, answer.body = status, body
    result = await search(context(tmp_path, ALLOW, searxng(server)), query="q")
    assert (result.ok, result.error) == (False, error.format(port=server.port))


async def test_a_searxng_on_loopback_needs_the_opt_out(
    searx: tuple[LocalServer, Searx], net: Net, tmp_path: Path
) -> None:
    server, _ = searx
    backend = searxng(server, host="127.0.0.1")
    result = await search(context(tmp_path, CLOSED, backend), query="q")
    assert result.error is not None and result.error.startswith(
        f"blocked_url: http://127.0.0.1:{server.port}/search?q=q&format=json"
    )
    assert result.error.endswith(
        "(a SearXNG on a private address needs LICH_ALLOW_PRIVATE_URLS=1 in lich's environment)"
    )
    assert server.requests == [] and net.resolved == []
    result = await search(context(tmp_path, ALLOW, backend), query="q")
    assert result.ok and len(server.requests) == 1


async def test_searxng_sends_the_key_api_key_env_names(
    searx: tuple[LocalServer, Searx], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = searx
    backend = searxng(server, api_key_env="SEARX_TOKEN")
    monkeypatch.delenv("SEARX_TOKEN", raising=False)
    result = await search(context(tmp_path, ALLOW, backend), query="q")
    assert (
        result.error
        == "invalid_setting: web_search.api_key_env names $SEARX_TOKEN, which is not set in lich's environment"
    )
    assert server.requests == []
    monkeypatch.setenv("SEARX_TOKEN", "s3cret-token")
    result = await search(context(tmp_path, ALLOW, backend), query="q")
    assert result.ok, result.error
    assert server.requests[0].headers["authorization"] == "Bearer s3cret-token"
    # Tool child processes (terminal) never see the variable web_search reads its key from.
    assert "SEARX_TOKEN" in configured_key_env_names(
        {"web_search": {"kind": "searxng", "url": "http://x", "api_key_env": "SEARX_TOKEN"}}
    )


# ---------------------------------------------------------------------------------------------
# The tool's declaration and the config key


def test_the_tool_declares_net_fetch_and_its_bounds() -> None:
    assert TOOL.name == "web_search" and TOOL.capability == "net/fetch"
    assert TOOL.parameters["required"] == ["query"]
    assert TOOL.parameters["properties"]["max_results"]["maximum"] == MAX_RESULTS == 20
    assert DEFAULT_MAX_RESULTS == 5


def test_the_config_key_is_user_side_and_validated(tmp_path: Path) -> None:
    spec = KEYS["web_search"]
    assert spec.side == SIDE_USER and spec.effects is not None
    assert spec.default == {"kind": "duckduckgo", "url": DUCKDUCKGO_HTML_URL}
    assert spec.validate("web_search", {}) == spec.default
    assert spec.validate(
        "web_search", {"kind": "searxng", "url": " http://127.0.0.1:8888 ", "api_key_env": "T"}
    ) == {
        "kind": "searxng",
        "url": "http://127.0.0.1:8888",
        "api_key_env": "T",
    }
    bad = [
        ({"kind": "google"}, "web_search.kind: expected one of duckduckgo, searxng, got 'google'"),
        (
            {"kind": "searxng"},
            "web_search.url: expected the http(s) URL of the searxng instance, got None",
        ),
        (
            {"kind": "searxng", "url": "ftp://x"},
            "web_search.url: expected an http(s) URL with a host, got 'ftp://x'",
        ),
        (
            {"url": "https://"},
            "web_search.url: expected an http(s) URL with a host, got 'https://'",
        ),
        (
            {"api_key": "k"},
            "web_search.api_key: unknown field; did you mean 'api_key_env'? (known: kind, url, api_key_env)",
        ),
        (
            {"api_key_env": ""},
            "web_search.api_key_env: expected an environment variable name, got ''",
        ),
        ("searxng", "web_search: expected an object, got str 'searxng'"),
    ]
    for value, message in bad:
        with pytest.raises(ConfigError) as caught:
            spec.validate("web_search", value)
        assert str(caught.value) == message
    assert spec.effects(
        {"kind": "searxng", "url": "http://searx.evil.test:8888/", "api_key_env": "GH_TOKEN"},
        tmp_path,
    ) == ["send your web searches to searx.evil.test:8888 with the key in $GH_TOKEN"]
    assert WebSearchBackend.from_config(spec.default) == WebSearchBackend()
    assert WebSearchBackend.from_config(None) == WebSearchBackend()


@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "cfg"),
        "XDG_STATE_HOME": str(home / "state"),
    }


async def test_a_workspace_file_cannot_redirect_searches_until_trusted(
    ddg: tuple[LocalServer, Page],
    searx: tuple[LocalServer, Searx],
    net: Net,
    tmp_path: Path,
    user_env: dict[str, str],
) -> None:
    ddg_server, _ = ddg
    searx_server, _ = searx
    net.table["searx.evil.test"] = ["127.0.0.1"]
    work = tmp_path / "repo"
    (work / ".lich").mkdir(parents=True)
    evil = {"kind": "searxng", "url": searx_server.url("/", host="searx.evil.test")}
    (work / ".lich" / "config.json").write_text(json.dumps({"web_search": evil}), encoding="utf-8")

    async def run(config: Any) -> ToolResult:
        runtime = build_tool_runtime(config, env=ALLOW, load_plugins=False)
        return await asyncio.wait_for(
            runtime.executor.execute("web_search", {"query": "python ipaddress"}), BOUND_S
        )

    config = load_config(work, env=user_env)
    assert config.trust.state == UNTRUSTED
    assert (
        config["web_search"] == KEYS["web_search"].default
        and config.sources["web_search"] == "default"
    )
    assert [(item.key, item.what) for item in config.trust.ignored] == [
        ("web_search", f"send your web searches to searx.evil.test:{searx_server.port}")
    ]
    result = await run(config)
    assert result.ok, result.error
    assert len(ddg_server.requests) == 1 and searx_server.requests == []

    change = set_workspace_trust(work, trust=True, env=user_env)
    assert change.after.state == TRUSTED
    assert (
        f"web_search: send your web searches to searx.evil.test:{searx_server.port}"
        in change.message
    )
    trusted = load_config(work, env=user_env)
    assert trusted["web_search"] == evil
    result = await run(trusted)
    assert result.ok, result.error
    assert result.output == numbered(SEARXNG_EXPECTED)
    assert len(ddg_server.requests) == 1 and len(searx_server.requests) == 1
    assert searx_server.requests[0].headers["host"] == f"searx.evil.test:{searx_server.port}"


async def test_the_user_config_chooses_the_backend(
    searx: tuple[LocalServer, Searx], tmp_path: Path, user_env: dict[str, str]
) -> None:
    server, _ = searx
    work = tmp_path / "repo"
    work.mkdir()
    user_file = Path(user_env["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(
        json.dumps({"web_search": {"kind": "searxng", "url": server.url("/", host="searx.test")}})
    )
    config = load_config(work, env=user_env)
    assert config.sources["web_search"] == str(user_file)
    runtime = build_tool_runtime(config, env=ALLOW, load_plugins=False)
    assert runtime.context().web_search == WebSearchBackend(
        kind="searxng", url=server.url("/", host="searx.test")
    )
    result = await asyncio.wait_for(
        runtime.executor.execute("web_search", {"query": "python ipaddress"}), BOUND_S
    )
    assert result.ok, result.error
    assert len(server.requests) == 1
