"""Issue 42: a provider's HTTP error names the request it answered (`HTTP 404 from POST URL`),
never a secret, and a 404 from an OpenAI-compatible base_url without /v1 suggests adding it.

Against the fake server on 127.0.0.1: the chat providers of every wire, and the completion
model of every format (the chat fallback included).
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import pytest

from lich_core.completion.model import FimRequest
from lich_core.completion.providers import build_fim_model
from lich_core.providers.anthropic import AnthropicModel
from lich_core.providers.base import ProviderError
from lich_core.providers.chain import ProviderChain
from lich_core.providers.errors import missing_v1_hint
from lich_core.providers.openai_compat import OpenAICompatModel
from lich_core.vocabulary import CancelToken, Message
from tests.support.fake_provider import FakeProviderServer
from tests.support.provider_helpers import KINDS, SleepRecorder

HELLO = [Message(role="user", content="hi")]
NO_V1 = "has no /v1"
# Where make_model's base URLs (tests/support/provider_helpers.py) send each kind's request.
CHAT_PATHS = {
    "openai_compat": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "ollama": "/api/chat",
}
FIM_REQUEST = FimRequest(prefix="def add(a, b):\n    ", suffix="\n", max_tokens=16)


def v1_hint(base_url: str) -> str:
    return (
        f"(the base_url {base_url} has no /v1: OpenAI-compatible servers usually serve under "
        f"/v1, try {base_url}/v1)"
    )


async def fail(model: Any) -> ProviderError:
    """The ProviderError a chat model's call raises."""
    with pytest.raises(ProviderError) as info:
        await model.complete(HELLO, [])
    return info.value


# --- chat providers ---


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [400, 401, 404, 429, 500])
async def test_an_http_error_names_the_method_and_url_requested(
    kind: str, status: int, fake_provider: FakeProviderServer, model_for
) -> None:
    fake_provider.script({"status": status})
    error = await fail(model_for(kind))
    requested = f"POST {fake_provider.url}{CHAT_PATHS[kind]}"
    assert f"HTTP {status} from {requested}: scripted HTTP {status}" in str(error)
    assert error.request == requested and error.status == status
    # openai_compat's base URL has /v1 here; the others are not OpenAI-compatible.
    assert NO_V1 not in str(error)
    assert "\n" not in str(error)


async def test_a_404_from_an_openai_compat_base_url_without_v1_suggests_it(
    fake_provider: FakeProviderServer,
) -> None:
    fake_provider.script({"status": 404, "body": '{"detail": "Not Found"}'})
    url = fake_provider.url
    error = await fail(OpenAICompatModel(name="local", model="m", base_url=url))
    assert (error.kind, error.status) == ("bad_request", 404)
    assert str(error) == (
        f"provider 'local' at {url}: bad_request: "
        f"HTTP 404 from POST {url}/chat/completions: Not Found {v1_hint(url)}"
    )


async def test_a_real_404_under_a_path_without_v1_suggests_it_below_that_path(
    fake_provider: FakeProviderServer,
) -> None:
    # Nothing scripted: the server itself has no such path.
    base = f"{fake_provider.url}/openai"
    error = await fail(OpenAICompatModel(name="local", model="m", base_url=base))
    assert f"HTTP 404 from POST {base}/chat/completions: " in str(error)
    assert str(error).endswith(v1_hint(base))
    assert fake_provider.requests[0]["turn"] is None  # the server's own 404: no scripted turn


@pytest.mark.parametrize("path", ["/v1", "/proxy/v1", "/v1/tenant", "/v1beta/openai"])
async def test_a_404_from_a_base_url_with_its_version_has_no_hint(
    path: str, fake_provider: FakeProviderServer
) -> None:
    fake_provider.script({"status": 404})
    base = fake_provider.url + path
    error = await fail(OpenAICompatModel(name="local", model="m", base_url=base))
    assert f"HTTP 404 from POST {base}/chat/completions: " in str(error)
    assert NO_V1 not in str(error)


async def test_only_a_404_gets_the_hint(fake_provider: FakeProviderServer) -> None:
    fake_provider.script({"status": 400})
    error = await fail(OpenAICompatModel(name="local", model="m", base_url=fake_provider.url))
    assert f"HTTP 400 from POST {fake_provider.url}/chat/completions: " in str(error)
    assert NO_V1 not in str(error)


async def test_an_anthropic_404_without_v1_has_no_hint(fake_provider: FakeProviderServer) -> None:
    # Anthropic's endpoint adds /v1 itself; the hint is about OpenAI-compatible servers.
    fake_provider.script({"status": 404})
    error = await fail(_anthropic(fake_provider.url))
    assert f"HTTP 404 from POST {fake_provider.url}/v1/messages: " in str(error)
    assert NO_V1 not in str(error)


def _anthropic(base_url: str) -> AnthropicModel:
    return AnthropicModel(name="claude", model="m", base_url=base_url)


async def test_the_message_shows_no_key_no_userinfo_and_no_query_value(
    fake_provider: FakeProviderServer,
) -> None:
    host = fake_provider.url.removeprefix("http://")
    base = f"http://someone:pw-in-the-url@{host}/v1?key=sk-in-the-query"
    model = OpenAICompatModel(name="local", model="m", base_url=base, api_key="sk-in-the-header")
    # The query swallows the endpoint's path, so the server has no such path and says so,
    # echoing the request line (secret included) in its error body.
    error = await fail(model)
    assert "sk-in-the-query" in fake_provider.requests[0]["path"]
    text = str(error)
    for secret in ("sk-in-the-query", "pw-in-the-url", "someone", "sk-in-the-header"):
        assert secret not in text
    assert f"HTTP 404 from POST http://{host}/v1?key=***: " in text
    assert text.startswith(f"provider 'local' at http://{host}/v1?key=***: bad_request: ")


async def test_a_chain_summary_names_where_each_earlier_failure_went(
    fake_provider: FakeProviderServer,
) -> None:
    fake_provider.script({"status": 404}, {"status": 500}, {"status": 500})  # a 5xx: once more
    first = OpenAICompatModel(name="local", model="m", base_url=fake_provider.url)
    second = _anthropic(fake_provider.url)
    with pytest.raises(ProviderError) as info:
        await ProviderChain([first, second], sleep=SleepRecorder()).complete(HELLO, [])
    text = str(info.value)
    assert text.startswith(
        f"provider 'claude' at {fake_provider.url}: unknown: "
        f"HTTP 500 from POST {fake_provider.url}/v1/messages: "
    )
    assert (
        f"before it: local: bad_request (HTTP 404 from POST {fake_provider.url}/chat/completions)"
        in text
    )


def test_the_hint_is_only_for_a_base_url_without_a_version() -> None:
    assert missing_v1_hint("http://127.0.0.1:8080") == v1_hint("http://127.0.0.1:8080")[1:-1]
    assert missing_v1_hint("http://[::1]:8080/api").endswith("try http://[::1]:8080/api/v1")
    for versioned in (
        "https://api.openai.com/v1",
        "https://openrouter.ai/api/v1",
        "http://h/v1/tenant",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "https://open.bigmodel.cn/api/paas/v4",
    ):
        assert missing_v1_hint(versioned) == "", versioned


# --- the completion model ---


async def fim_failure(entry: dict[str, Any]) -> ProviderError:
    """The ProviderError streaming a completion from the `completion` entry raises."""
    model = build_fim_model({"completion": {"model": "fim-model", **entry}}, env={})
    assert model is not None
    with pytest.raises(ProviderError) as info:
        async with aclosing(model.stream(FIM_REQUEST, CancelToken())) as pieces:
            async for _ in pieces:
                pass
    return info.value


@pytest.mark.parametrize(
    ("kind", "wire", "base_path", "requested_path", "hinted"),
    [
        ("openai_compat", "completions", "", "/completions", True),
        ("openai_compat", "completions", "/v1", "/v1/completions", False),
        ("openai_compat", "chat", "", "/chat/completions", True),
        ("openai_compat", "chat", "/v1", "/v1/chat/completions", False),
        # Ollama's base URL goes without /v1: lich adds it for the OpenAI shapes.
        ("ollama", "completions", "", "/v1/completions", False),
        ("ollama", "generate", "", "/api/generate", False),
        ("anthropic", "chat", "", "/v1/messages", False),
    ],
)
async def test_a_completion_404_names_the_request_and_suggests_v1_only_where_missing(
    kind: str,
    wire: str,
    base_path: str,
    requested_path: str,
    hinted: bool,
    fake_provider: FakeProviderServer,
) -> None:
    fake_provider.script({"status": 404})
    base = fake_provider.url + base_path
    error = await fim_failure({"kind": kind, "format": wire, "base_url": base})
    assert error.status == 404
    assert f"HTTP 404 from POST {fake_provider.url}{requested_path}: scripted HTTP 404" in str(
        error
    )
    assert str(error).endswith(v1_hint(base)) if hinted else NO_V1 not in str(error)


@pytest.mark.parametrize(
    ("kind", "status", "expected"),
    [
        ("network", None, "Could not reach the model server at http://h:1/v1. Is it running"),
        ("auth", 401, "The model server at http://h:1/v1 refused the API key (HTTP 401)."),
        ("rate_limit", 429, "The model server at http://h:1/v1 is busy or rate-limited (HTTP 429)"),
        ("overflow", 413, "The conversation is too long for the model"),
        ("bad_request", 404, "The model server at http://h:1/v1 rejected the request (HTTP 404)"),
        ("unknown", 502, "The model server at http://h:1/v1 failed (HTTP 502)."),
        ("unknown", None, "The model server at http://h:1/v1 answered something that is not"),
        ("response_too_large", None, "The model's answer was larger than lich accepts"),
    ],
)
def test_the_plain_words_name_no_config_key_provider_name_or_kind(
    kind: str, status: int | None, expected: str
) -> None:
    err = ProviderError(
        kind,  # type: ignore[arg-type]
        "details with providers[0].base_url",
        provider="vscode",
        url="http://user:pw@h:1/v1?key=secret-value",
        status=status,
    )
    plain = err.plain()
    assert plain.startswith(expected)
    for internal in ("vscode", "providers[", kind if kind != "overflow" else "providers", "pw"):
        assert internal not in plain
    assert "secret-value" not in plain and "\n" not in plain
