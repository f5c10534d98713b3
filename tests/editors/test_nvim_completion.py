"""Ghost text in the Neovim plugin (editors/nvim/lua/lich/ghost.lua) in a real headless Neovim
(0.7.2 and 0.11, as tests/editors/test_nvim.py finds them) against the real lich-lsp server and
the fake provider's fill-in-the-middle endpoint (`POST /v1/completions`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.editors.test_nvim import (  # noqa: F401 - nvim and workspace are fixtures
    _version,
    _version_tuple,
    assert_passed,
    nvim,
    run_scenario,
    workspace,
)
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.nvim

SUGGESTION = "(a, b):\n    return a + b"
PARTIAL_KEYS = ["<M-Right>", "<M-C-Right>"]  # the word and line keys' defaults


def local_model(url: str, request_format: str, model: str) -> dict[str, str]:
    """A model setting for a fake model server on 127.0.0.1 at `url`."""
    return {
        "kind": "openai_compat",
        "format": request_format,
        "base_url": url + "/v1",
        "model": model,
    }


def write_user_config(tmp_path: Path, config: dict[str, Any]) -> None:
    """`config` as the user's config file (run_scenario points XDG_CONFIG_HOME there)."""
    path = tmp_path / "config" / "lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")


def write_completion_config(tmp_path: Path, provider: FakeProviderServer | None) -> None:
    """The user's config: a completion model at the fake provider, or none; no debounce, so each
    change asks at once."""
    config: dict[str, Any] = {"completion_debounce_ms": 0}
    if provider is not None:
        config["completion"] = local_model(provider.url, "completions", "fim")
    write_user_config(tmp_path, config)


@pytest.mark.parametrize("start", ["setup", "builtin"])
def test_ghost_text_appears_clears_and_is_accepted(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    fake_provider: FakeProviderServer,
    start: str,
) -> None:
    """`start`: require("lich").setup{}, or (0.11+) vim.lsp.enable("lich") through lsp/lich.lua
    with an on_attach of the user's own, which must not take the ghost text away."""
    if start == "builtin" and _version_tuple(nvim) < (0, 11):
        pytest.skip(f"vim.lsp.enable needs Neovim 0.11+ (this is {_version(nvim)})")
    (workspace / "calc.py").write_text("", encoding="utf-8")
    fake_provider.script(
        {"text": SUGGESTION + "\n\n\nprint(add(1, 2))\n", "chunks": 3},
        # Asked after typing "z" over the suggestion: still running when <BS>a supersedes it.
        {"text": "never shown", "delay_s": 30},
    )
    write_completion_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "completion", workspace, tmp_path, {"builtin": start == "builtin"})
    assert_passed(result)
    assert result["values"]["model"].startswith("openai_compat fim")
    # The model was asked for "def add", for "def add(z" (dropped when <BS>a superseded it) and
    # after the accepted text; typing "(", then "a", through the suggestion was answered from
    # the server's cache.
    prompts = [r["json"]["prompt"] for r in fake_provider.requests]
    assert len(prompts) == 3, prompts
    assert prompts[0].endswith("def add") and prompts[1].endswith("def add(z")
    assert prompts[2].endswith("def add(a, b):\n    return a + b")
    # The dropped request's stream was closed, not left to run its 30 s.
    assert fake_provider.wait_closed_early(1, timeout_s=10) is not None
    assert fake_provider.requests[0]["json"]["model"] == "fim"


@pytest.mark.parametrize("case", ["no_model", "turned_off"])
def test_nothing_is_asked_without_a_model_or_when_turned_off(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    fake_provider: FakeProviderServer,
    case: str,
) -> None:
    (workspace / "calc.py").write_text("", encoding="utf-8")
    data: dict[str, Any]
    if case == "no_model":
        write_completion_config(tmp_path, None)
        # With a suggestion <Tab> would accept it; with none it indents as usual.
        data = {
            "completion": {"accept_key": "<Tab>"},
            "expect_model_check": True,
            "map_keys": ["<Tab>", *PARTIAL_KEYS],
            "fallthrough_keys": PARTIAL_KEYS,
        }
    else:
        fake_provider.script({"text": SUGGESTION})
        write_completion_config(tmp_path, fake_provider)
        data = {"completion": {"enabled": False}, "ask_items": True}
    result = run_scenario(nvim, "completion_off", workspace, tmp_path, data)
    assert_passed(result)
    values = result["values"]
    assert values["requests"] == 0
    if case == "no_model":
        assert values["changes"] >= 1  # the plugin saw the typing and asked nothing
        assert values["after_key"].rstrip(" \t") == "def add" != values["after_key"]
        assert fake_provider.requests == []
        assert all(values["maps"][key].startswith("lich: accept") for key in values["maps"])
        # The partial keys do what they do unmapped (<M-Right> leaves Insert mode and moves
        # right), not nothing.
        for key in PARTIAL_KEYS:
            assert values["fallthrough"][key] == values["unmapped"][key], (key, values)
            assert values["unmapped"][key] != {"mode": "i", "line": "abc def", "cursor": [1, 2]}
    else:
        # No mapping: <C-l> is Insert mode's own (inserted as typed).
        assert values["after_key"] == "def add\x0c"
        # Only the completion items request reached the model.
        assert len(fake_provider.requests) == 1


def test_partial_accept_inserts_a_word_or_a_line_and_shows_the_rest(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    fake_provider: FakeProviderServer,
) -> None:
    """<M-Right> (word), <M-C-Right> (line), <M-Right> across the line break, then <C-l>: each
    partial key leaves the rest on screen and the server answers it from the suggestion."""
    (workspace / "calc.py").write_text("", encoding="utf-8")
    fake_provider.script(
        {"text": "add" + SUGGESTION + "\n\n\nprint(add(1, 2))\n", "chunks": 3},
        {"text": ""},  # asked once the whole suggestion is in: nothing more to suggest
    )
    write_completion_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "completion_partial", workspace, tmp_path)
    assert_passed(result)
    kept = result["values"]["kept"]
    assert [k["text"] for k in kept] == ["def add", "def add(a, b):", "def add(a, b):\n    return"]
    assert all(k["marks"] == 1 for k in kept), kept
    # The model was asked for "def " and after the whole suggestion, never for what a partial
    # key left (the server answered those from the suggestion shown).
    prompts = [r["json"]["prompt"] for r in fake_provider.requests]
    assert len(prompts) == 2, prompts
    assert prompts[0].endswith("def ")
    assert prompts[1].endswith("def add(a, b):\n    return a + b")


def test_partial_keys_set_to_false_or_empty_are_not_mapped(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    (workspace / "calc.py").write_text("", encoding="utf-8")
    write_completion_config(tmp_path, None)
    data = {
        "completion": {"accept_word_key": False, "accept_line_key": ""},
        "expect_model_check": True,
        "map_keys": ["<C-l>", *PARTIAL_KEYS],
    }
    result = run_scenario(nvim, "completion_off", workspace, tmp_path, data)
    assert_passed(result)
    assert result["values"]["maps"] == {
        "<C-l>": "lich: accept the inline suggestion",
        "<M-Right>": "",
        "<M-C-Right>": "",
    }


@pytest.mark.parametrize("case", ["tab", "off", "user"])
def test_tab_accepts_a_suggestion_and_is_a_real_tab_otherwise(
    nvim: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    tmp_path: Path,
    fake_provider: FakeProviderServer,
    case: str,
) -> None:
    """Issue #45 (tests/editors/nvim/completion_tab.lua): by default <Tab> accepts the suggestion
    shown and is a real <Tab> where none is; `completion.accept_tab = false`, or a <Tab> the
    user maps in Insert mode, leaves <Tab> unmapped by the plugin."""
    (workspace / "calc.py").write_text("", encoding="utf-8")
    fake_provider.script({"text": SUGGESTION, "chunks": 2}, *[{"text": ""}] * 5)
    write_completion_config(tmp_path, fake_provider)
    result = run_scenario(nvim, "completion_tab", workspace, tmp_path, {"case": case})
    assert_passed(result)
    tab_map = result["values"]["tab_map"]
    if case == "tab":
        text = result["values"]["text"]
        assert text.rstrip(" \t") == "def add(a, b):\n    return a + b" != text
        # One model request for "def add"; what followed asked with nothing left to suggest.
        assert fake_provider.requests[0]["json"]["prompt"].endswith("def add")
    elif case == "off":
        # No <Tab> mapping of the buffer's: none at all (an empty Lua table reads as []), or
        # Neovim 0.11's own global one.
        assert not tab_map or tab_map == {
            "buffer": 0,
            "desc": "vim.snippet.jump if active, otherwise <Tab>",
        }
    else:
        assert tab_map == {"buffer": 0, "desc": "the user's own <Tab>"}
