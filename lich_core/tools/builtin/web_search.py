"""web_search: search the web and return the top results (title, URL, snippet), numbered.

Backends (config's `web_search`, passed in as `ctx.web_search`, a `WebSearchBackend`):

- `duckduckgo` (default): DuckDuckGo's HTML endpoint, no API key. The query is POSTed as the
  page's own search form does (`q`, `b`, `kl`, `df`, form-encoded) to `https://html.duckduckgo.com/html/`
  (or the configured `url`). The page is parsed with the standard library's HTMLParser, which also
  decodes every HTML entity (`&amp;`, `&#x27;`, ...) in text and attributes: each
  `div.result` block gives its `a.result__a` (title and link) and its `.result__snippet`; ad
  blocks (`result--ad`) and ad links (`duckduckgo.com/y.js`) are skipped; a redirect link
  `//duckduckgo.com/l/?uddg=<percent-encoded URL>&rut=...` is unwrapped to the URL it carries.
  Redirects are not followed: a `!bang` query is DuckDuckGo redirecting to another site.
- `searxng`: a SearXNG instance's JSON API, `GET <url>/search?q=...&format=json` (the instance must
  list `json` in `search.formats`); `results[].title / url / content`.

Every request goes through `lich_core.net.safe_fetch`: a private, loopback or link-local target is
refused (`blocked_url:`) unless `LICH_ALLOW_PRIVATE_URLS=1` is in the tool environment, which a
SearXNG on 127.0.0.1 therefore needs. `api_key_env` names a variable of lich's own environment
whose value is sent as `Authorization: Bearer ...` (tool child processes never see it).

Output: `1. Title\\n   https://url\\n   snippet`, one block per result, a blank line between.
No results is a successful search (`ok`, "no results for ..."): the model should rephrase, not
retry. Errors: `missing_arg: query`, `invalid_arg:` (a query over 499 characters, DuckDuckGo's
limit), `search_blocked:` (DuckDuckGo's bot check or a rate limit instead of results),
`http_<status>:` (any other non-2xx answer, a redirect included), `bad_response:` (a page or
JSON that is not a result list), `invalid_setting:` (an `api_key_env` that is not set), and
safe_fetch's codes (`blocked_url:`, `timeout:`, `network_error:`, `invalid_url:`, ...).

Capability: `net/fetch` (the query leaves the machine; approval asks by default).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from lich_core.net.safe_fetch import BLOCKED_URL, CANCELLED, FetchError, FetchResult, safe_fetch
from lich_core.net.tool_support import clamp_int_arg
from lich_core.tools.guard import capture_errors, error_result, require_string_arg
from lich_core.tools.processes import tool_process_env
from lich_core.tools.types import FunctionTool, ToolContext, WebSearchBackend
from lich_core.vocabulary import ToolResult

__all__ = [
    "TOOL",
    "DuckDuckGoPage",
    "SearchHit",
    "format_hits",
    "parse_searxng",
    "unwrap_result_url",
]

DEFAULT_MAX_RESULTS = 5
MAX_RESULTS = 20
# DuckDuckGo refuses longer queries (SearXNG's engine stops at the same bound).
MAX_QUERY_CHARS = 499
# Within the executor's 30 s deadline, so a slow search ends as `timeout:` with the URL named.
SEARCH_TIMEOUT_S = 20.0
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
MAX_TITLE_CHARS = 200
MAX_SNIPPET_CHARS = 500
# What DuckDuckGo answers a request it takes for a bot with (its bot check, or a bare rate limit).
DDG_BLOCKED_STATUSES = frozenset({202, 403, 429})
SEARXNG_RATE_LIMITED = 429


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


def _clean(parts: list[str], limit: int) -> str:
    text = " ".join("".join(parts).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _is_ddg_host(host: str) -> bool:
    return host == "duckduckgo.com" or host.endswith(".duckduckgo.com")


def unwrap_result_url(href: str) -> str | None:
    """The URL a DuckDuckGo result link leads to, or None for an ad or a link that is not http(s).

    `//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.python.org%2F&rut=...` (also `/l/?uddg=` and
    `https://duckduckgo.com/l/?uddg=`) is the redirect DuckDuckGo wraps results in: the target is
    its `uddg` parameter, percent-decoded. `duckduckgo.com/y.js?...` is an ad click.
    """
    link = href.strip()
    if link.startswith("//"):
        link = "https:" + link
    try:
        parts = urlsplit(link)
        host = (parts.hostname or "").lower()
        if (not parts.scheme and not parts.netloc) or _is_ddg_host(host):
            if parts.path.startswith("/y.js"):
                return None
            if parts.path.startswith("/l/"):
                target = parse_qs(parts.query).get("uddg")
                if not target:
                    return None
                link = target[0].strip()
                parts = urlsplit(link)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
    except ValueError:
        return None
    return link


@dataclass
class _Block:
    """One `div.result` being read: where it opened, whether it is an ad, what it holds so far."""

    depth: int
    ad: bool
    href: str | None = None
    title: list[str] = field(default_factory=list)
    snippet: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # the fields already read ("title", "snippet")


class DuckDuckGoPage(HTMLParser):
    """DuckDuckGo's HTML results page: `feed(text)`, `close()`, then read the fields.

    `hits` are the organic results in page order; `ads_skipped` the ad blocks left out;
    `challenge` whether the page is the bot check (`form#challenge-form`, a form posting to
    `anomaly.js`, `.anomaly-modal*`);
    `has_results_list` whether it had the results list (`div#links`); `no_results` whether it said
    it has none (`.result--no-result`, `.no-results`).
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hits: list[SearchHit] = []
        self.ads_skipped = 0
        self.challenge = False
        self.has_results_list = False
        self.no_results = False
        self._div_depth = 0
        self._block: _Block | None = None
        # (field, tag, nesting) while the text of a title or snippet element is read.
        self._capture: tuple[str, str, int] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        classes = set(attributes.get("class", "").split())
        if tag == "form" and (
            attributes.get("id") == "challenge-form" or "anomaly.js" in attributes.get("action", "")
        ):
            self.challenge = True
        if attributes.get("id", "").startswith("anomaly-modal") or any(
            name.startswith("anomaly-modal") for name in classes
        ):
            self.challenge = True
        if tag == "div":
            self._div_depth += 1
            if attributes.get("id") == "links":
                self.has_results_list = True
            if "result--no-result" in classes or "no-results" in classes:
                self.no_results = True
            if "result" in classes:
                self._finish_block()
                self._block = _Block(self._div_depth, ad="result--ad" in classes)
        if self._capture is not None:
            name, open_tag, nesting = self._capture
            if tag == open_tag:
                self._capture = (name, open_tag, nesting + 1)
            return
        block = self._block
        if block is None:
            return
        if "result__a" in classes and "title" not in block.seen:
            block.href = attributes.get("href", "")
            self._capture = ("title", tag, 1)
        elif "result__snippet" in classes and "snippet" not in block.seen:
            self._capture = ("snippet", tag, 1)

    def handle_endtag(self, tag: str) -> None:
        if self._capture is not None:
            name, open_tag, nesting = self._capture
            if tag == open_tag:
                if nesting > 1:
                    self._capture = (name, open_tag, nesting - 1)
                else:
                    self._capture = None
                    if self._block is not None:
                        self._block.seen.add(name)
        if tag == "div" and self._div_depth > 0:
            if self._block is not None and self._div_depth == self._block.depth:
                self._finish_block()
            self._div_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._capture is not None and self._block is not None:
            getattr(self._block, self._capture[0]).append(data)

    def close(self) -> None:
        super().close()
        self._finish_block()

    def _finish_block(self) -> None:
        block, self._block, self._capture = self._block, None, None
        if block is None or block.href is None:
            return
        url = unwrap_result_url(block.href)
        if block.ad or url is None:
            if block.ad or "/y.js" in block.href:
                self.ads_skipped += 1
            return
        title = _clean(block.title, MAX_TITLE_CHARS) or url
        self.hits.append(SearchHit(title, url, _clean(block.snippet, MAX_SNIPPET_CHARS)))


def parse_searxng(body: str) -> tuple[list[SearchHit], list[str]]:
    """SearXNG's JSON answer: the hits and the engines that did not answer ("name (why)").

    Raises ValueError when the body is not a JSON object with a `results` list.
    """
    data = json.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError("no `results` list")
    hits: list[SearchHit] = []
    for item in data["results"]:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        url = item["url"].strip()
        try:
            if urlsplit(url).scheme not in ("http", "https"):
                continue
        except ValueError:
            continue
        title = _clean([str(item.get("title") or "")], MAX_TITLE_CHARS) or url
        hits.append(
            SearchHit(title, url, _clean([str(item.get("content") or "")], MAX_SNIPPET_CHARS))
        )
    unresponsive = []
    for entry in data.get("unresponsive_engines") or []:
        if isinstance(entry, (list, tuple)) and entry:
            unresponsive.append(
                f"{entry[0]} ({entry[1]})" if len(entry) > 1 and entry[1] else str(entry[0])
            )
    return hits, unresponsive


def format_hits(hits: list[SearchHit]) -> str:
    blocks = []
    for number, hit in enumerate(hits, 1):
        lines = [f"{number}. {hit.title}", f"   {hit.url}"]
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _unique(hits: list[SearchHit]) -> list[SearchHit]:
    seen: set[str] = set()
    unique = []
    for hit in hits:
        if hit.url not in seen:
            seen.add(hit.url)
            unique.append(hit)
    return unique


def _searxng_url(base: str, query: str) -> str:
    """`<instance>/search?q=...&format=json`, keeping any other parameters the configured URL has."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if not path.endswith("/search"):
        path += "/search"
    params = [
        (name, value) for name, value in parse_qsl(parts.query) if name not in ("q", "format")
    ]
    params += [("q", query), ("format", "json")]
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(params), ""))


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc or url
    except ValueError:
        return url


async def _fetch(ctx: ToolContext, method: str, url: str, **kwargs: Any) -> FetchResult:
    """safe_fetch with the tool's bounds, the call's cancellation, and the environment the
    operator's LICH_ALLOW_PRIVATE_URLS is read from: the tool's (the server's own, scrubbed)."""
    return await safe_fetch(
        method,
        url,
        max_bytes=MAX_RESPONSE_BYTES,
        timeout_s=SEARCH_TIMEOUT_S,
        cancel=ctx.cancel,
        env=tool_process_env(ctx),
        **kwargs,
    )


async def _search_duckduckgo(
    backend: WebSearchBackend, query: str, ctx: ToolContext
) -> tuple[list[SearchHit], dict[str, Any]]:
    form = urlencode({"q": query, "b": "", "kl": "", "df": ""}).encode("ascii")
    result = await _fetch(
        ctx,
        "POST",
        backend.url,
        body=form,
        follow_redirects=False,
        headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"},
    )
    host = _host(backend.url)
    page = DuckDuckGoPage()
    if 200 <= result.status < 300 or result.status in DDG_BLOCKED_STATUSES:
        page.feed(result.text())
        page.close()
    details = {"status": result.status, "ads_skipped": page.ads_skipped}
    if page.hits and 200 <= result.status < 300:
        return page.hits, details
    if page.challenge or result.status in DDG_BLOCKED_STATUSES:
        raise _Failure(
            f"search_blocked: DuckDuckGo ({host}) answered with its bot check (HTTP {result.status}) "
            "instead of results; try again in a few minutes, or point the web_search setting at a "
            "SearXNG instance"
        )
    if 300 <= result.status < 400:
        location = result.headers.get("location", "")
        raise _Failure(
            f"http_{result.status}: DuckDuckGo ({host}) answered a redirect to {location or '(nowhere)'} "
            "instead of results (a !bang query redirects to the site it names)"
        )
    if not 200 <= result.status < 300:
        raise _Failure(
            f"http_{result.status}: DuckDuckGo ({host}) answered {result.status} {result.reason}".rstrip()
        )
    if not (page.no_results or page.has_results_list):
        raise _Failure(
            f"bad_response: the page from {host} has neither results nor DuckDuckGo's no-results "
            "notice (not a DuckDuckGo results page, or its markup changed)"
        )
    return [], details


async def _search_searxng(
    backend: WebSearchBackend, query: str, ctx: ToolContext
) -> tuple[list[SearchHit], dict[str, Any]]:
    headers = {"Accept": "application/json"}
    if backend.api_key_env:
        key = os.environ.get(backend.api_key_env)
        if not key:
            raise _Failure(
                f"invalid_setting: web_search.api_key_env names ${backend.api_key_env}, which is not set "
                "in lich's environment"
            )
        headers["Authorization"] = f"Bearer {key}"
    url = _searxng_url(backend.url, query)
    host = _host(backend.url)
    result = await _fetch(ctx, "GET", url, headers=headers)
    if result.status == SEARXNG_RATE_LIMITED:
        raise _Failure(
            f"search_blocked: the SearXNG instance at {host} rate-limited the request (HTTP 429)"
        )
    if result.status == 403:
        raise _Failure(
            f"http_403: the SearXNG instance at {host} refused the request; it answers JSON only when "
            "its settings.yml lists json in search.formats"
        )
    if not 200 <= result.status < 300:
        raise _Failure(
            f"http_{result.status}: the SearXNG instance at {host} answered {result.status} {result.reason}".rstrip()
        )
    try:
        hits, unresponsive = parse_searxng(result.text())
    except ValueError as err:
        raise _Failure(f"bad_response: {host} did not answer SearXNG's JSON ({err})") from None
    return hits, {"status": result.status, "unresponsive_engines": unresponsive}


class _Failure(Exception):
    """A search that ended without results: the message is the tool's error string."""


@capture_errors
async def run_web_search(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    query = " ".join(require_string_arg(args, "query").split())
    if not query:
        return error_result("missing_arg: query")
    if len(query) > MAX_QUERY_CHARS:
        return error_result(
            f"invalid_arg: query is {len(query)} characters; at most {MAX_QUERY_CHARS}"
        )
    max_results = clamp_int_arg(args, "max_results", DEFAULT_MAX_RESULTS, MAX_RESULTS)
    backend = ctx.web_search
    search = _search_searxng if backend.kind == "searxng" else _search_duckduckgo
    try:
        hits, details = await search(backend, query, ctx)
    except _Failure as failure:
        return error_result(str(failure))
    except FetchError as err:
        if err.code == CANCELLED:
            return error_result("cancelled")
        message = str(err)
        if err.code == BLOCKED_URL and backend.kind == "searxng":
            message += " (a SearXNG on a private address needs LICH_ALLOW_PRIVATE_URLS=1 in lich's environment)"
        return error_result(message)
    hits = _unique(hits)
    shown = hits[:max_results]
    details.update(
        backend=backend.kind,
        endpoint=backend.url,
        query=query,
        total=len(hits),
        results=[asdict(hit) for hit in shown],
    )
    if not shown:
        output = f"no results for {query!r}"
        if details.get("unresponsive_engines"):
            output += (
                f" (engines that did not answer: {', '.join(details['unresponsive_engines'])})"
            )
        return ToolResult(ok=True, output=output, details=details)
    return ToolResult(ok=True, output=format_hits(shown), details=details)


TOOL = FunctionTool(
    name="web_search",
    description=("Search the web: numbered title, URL and snippet per result."),
    parameters={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    run=run_web_search,
    capability="net/fetch",
)
