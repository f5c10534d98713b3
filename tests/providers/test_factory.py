"""build_model / describe_model: configured chains, roles, env defaults, misconfiguration messages."""

from __future__ import annotations

import pytest

from lich_core.agent.messages import Message
from lich_core.errors import ConfigError
from lich_core.providers.anthropic import AnthropicModel
from lich_core.providers.base import Model, ProviderError
from lich_core.providers.chain import ProviderChain
from lich_core.providers.factory import build_model, describe_model, role_specs
from lich_core.providers.ollama import OllamaModel
from lich_core.providers.openai_compat import OpenAICompatModel
from tests.support.fake_provider import FakeProviderServer

HELLO = [Message(role="user", content="hi")]


def only_model(model: Model) -> Model:
    assert isinstance(model, ProviderChain)
    assert len(model.models) == 1
    return model.models[0]


def test_default_is_ollama_on_localhost() -> None:
    model = only_model(build_model({}, env={}))
    assert isinstance(model, OllamaModel)
    assert model.base_url == "http://localhost:11434"
    assert model.model == "llama3.1"
    assert describe_model({}, env={}) == "ollama llama3.1 @ http://localhost:11434"


def test_default_prefers_openai_then_anthropic_keys() -> None:
    openai = only_model(build_model({}, env={"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "a-1"}))
    assert isinstance(openai, OpenAICompatModel)
    assert openai.base_url == "https://api.openai.com/v1"
    assert openai.api_key == "sk-1"
    anthropic = only_model(build_model({}, env={"ANTHROPIC_API_KEY": "a-1"}))
    assert isinstance(anthropic, AnthropicModel)
    assert anthropic.api_key == "a-1"


def test_lich_env_vars_pick_the_default() -> None:
    env = {
        "LICH_PROVIDER_KIND": "anthropic",
        "LICH_BASE_URL": "http://127.0.0.1:5555",
        "LICH_MODEL": "claude-x",
    }
    model = only_model(build_model({}, env=env))
    assert isinstance(model, AnthropicModel)
    assert (model.base_url, model.model, model.api_key) == (
        "http://127.0.0.1:5555",
        "claude-x",
        None,
    )
    # A base URL alone means an OpenAI-compatible server (vLLM, llama.cpp, LM Studio...).
    local = only_model(
        build_model({}, env={"LICH_BASE_URL": "http://127.0.0.1:8080/v1", "LICH_MODEL": "qwen"})
    )
    assert isinstance(local, OpenAICompatModel)
    assert local.api_key is None


def test_env_misconfiguration_messages() -> None:
    with pytest.raises(ConfigError, match=r"^LICH_PROVIDER_KIND: .*'gemini'"):
        build_model({}, env={"LICH_PROVIDER_KIND": "gemini"})
    with pytest.raises(ConfigError, match="needs an API key: set OPENAI_API_KEY"):
        build_model({}, env={"LICH_PROVIDER_KIND": "openai_compat"})


def test_configured_chain_and_roles(tmp_path) -> None:
    replay = tmp_path / "r.jsonl"
    replay.write_text("")
    config = {
        "work_dir": str(tmp_path),
        "providers": [
            {
                "name": "local",
                "kind": "openai_compat",
                "base_url": "http://127.0.0.1:1/v1",
                "model": "m1",
            },
            {
                "name": "claude",
                "kind": "anthropic",
                "base_url": "http://127.0.0.1:2",
                "model": "m2",
                "api_key_env": "MY_KEY",
            },
            {"name": "rec", "kind": "replay", "path": "r.jsonl"},
        ],
        "models": {"chat": ["claude", "local"], "compress": ["rec"]},
    }
    env = {"MY_KEY": "secret"}
    chat = build_model(config, env=env)
    assert [m.name for m in chat.models] == ["claude", "local"]
    assert chat.models[0].api_key == "secret"
    compress = build_model(config, "compress", env=env)
    assert [m.name for m in compress.models] == ["rec"]
    assert (
        describe_model(config, env=env)
        == "anthropic m2 @ http://127.0.0.1:2, then openai_compat m1 @ http://127.0.0.1:1/v1"
    )


def test_compress_falls_back_to_chat_and_chat_to_all_providers() -> None:
    config = {
        "providers": [
            {"name": "a", "kind": "ollama", "model": "x"},
            {"name": "b", "kind": "ollama", "model": "y"},
        ]
    }
    assert [s.name for s in role_specs(config, "chat", env={})] == ["a", "b"]
    assert [s.name for s in role_specs(config, "compress", env={})] == ["a", "b"]
    config["models"] = {"chat": "b"}
    assert [s.name for s in role_specs(config, "compress", env={})] == ["b"]


@pytest.mark.parametrize(
    ("providers", "models", "message"),
    [
        (
            [{"kind": "bogus", "model": "m"}],
            {},
            r"^providers\[0\]\.kind: unknown provider kind 'bogus'",
        ),
        ([{"kind": "ollama"}], {}, r"^providers\[0\]\.model: is required"),
        (
            [{"kind": "ollama", "model": "m", "modle": "x"}],
            {},
            r"^providers\[0\]\.modle: unknown key",
        ),
        (
            [{"kind": "ollama", "model": "m", "base_url": "localhost:11434"}],
            {},
            r"^providers\[0\]\.base_url: expected an http",
        ),
        (
            [{"kind": "ollama", "model": "m", "timeout_ms": -5}],
            {},
            r"^providers\[0\]\.timeout_ms: expected a positive integer",
        ),
        (
            [{"kind": "ollama", "model": "m", "stream": "yes"}],
            {},
            r"^providers\[0\]\.stream: expected true or false",
        ),
        (
            [{"kind": "ollama", "model": "m"}, {"kind": "ollama", "model": "n"}],
            {},
            r"^providers\[1\]\.name: duplicate provider name 'ollama'",
        ),
        (
            [{"kind": "replay", "path": "/nonexistent/x.jsonl"}],
            {},
            r"^providers\[0\]\.path: replay file not found",
        ),
        (
            [{"kind": "openai_compat", "model": "gpt"}],
            {},
            r"^providers\[0\]\.api_key: https://api.openai.com/v1 needs an API key",
        ),
        (
            [{"kind": "anthropic", "model": "c", "api_key_env": "NOPE"}],
            {},
            r"^providers\[0\]\.api_key_env: environment variable NOPE is not set",
        ),
        (
            [{"name": "a", "kind": "ollama", "model": "m"}],
            {"chat": ["a", "zz"]},
            r"^models\.chat\[1\]: unknown provider 'zz' \(configured: a\)",
        ),
        (["ollama"], {}, r"^providers\[0\]: expected an object"),
        (
            [{"name": "a", "kind": "ollama", "model": "m"}],
            {"chat": [{"a": 1}]},
            r"^models\.chat\[0\]: expected a provider name",
        ),
        ([], {"chat": ["a"]}, r"^models: names providers but no providers are configured"),
    ],
)
def test_misconfiguration_is_one_line_naming_the_key(providers, models, message) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        build_model({"providers": providers, "models": models}, env={})
    assert "\n" not in str(info.value)
    assert describe_model({"providers": providers, "models": models}, env={}).startswith(
        "misconfigured: "
    )


async def test_config_from_the_brief_talks_to_the_fake_server(fake_provider) -> None:
    fake_provider.script({"text": "configured"})
    config = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": fake_provider.url + "/v1",
                "model": "fake-model",
            }
        ]
    }
    response = await build_model(config, env={}).complete(HELLO, [])
    assert response.message.content == "configured"
    assert (response.provider, response.model) == ("fake", "fake-model")


async def test_unreachable_provider_is_one_line_naming_provider_url_and_setting() -> None:
    config = {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "m",
            }
        ]
    }
    chain = build_model(config, env={})
    with pytest.raises(ProviderError) as info:
        await chain.models[0].complete(HELLO, [])
    assert str(info.value) == (
        "provider 'fake' at http://127.0.0.1:9/v1: network: cannot connect: 127.0.0.1:9 refused the "
        "connection (nothing listens there): is the server running? set providers[0].base_url or LICH_BASE_URL"
    )


async def test_unreachable_default_ollama_says_what_to_set() -> None:
    model = only_model(
        build_model({}, env={"LICH_PROVIDER_KIND": "ollama", "LICH_BASE_URL": "http://127.0.0.1:9"})
    )
    with pytest.raises(ProviderError) as info:
        await model.complete(HELLO, [])
    text = str(info.value)
    assert "http://127.0.0.1:9" in text and "Ollama" in text and "LICH_BASE_URL" in text
    assert "\n" not in text


async def test_auth_error_names_the_key_setting() -> None:
    with FakeProviderServer([{"status": 401}]) as server:
        config = {
            "providers": [
                {
                    "name": "p",
                    "kind": "anthropic",
                    "base_url": server.url,
                    "model": "m",
                    "api_key": "bad",
                }
            ]
        }
        with pytest.raises(ProviderError) as info:
            await only_model(build_model(config, env={})).complete(HELLO, [])
    assert info.value.kind == "auth"
    assert "providers[0].api_key_env or ANTHROPIC_API_KEY" in str(info.value)
