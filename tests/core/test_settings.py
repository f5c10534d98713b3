"""Typed settings (lich_core.settings): one attribute per key of the KEYS table, with its default;
a loaded Config's settings carry its values, sources and trust; product code reads settings as
attributes, never as `config.get("<key>")`."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from lich_core.config import KEYS, Config, load_config
from lich_core.settings import BOOKKEEPING_FIELDS, KEY_NAMES, Settings, settings_of
from lich_core.tools.types import ToolContext
from lich_core.trust import TRUSTED, UNTRUSTED, TrustStatus

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("lich_core", "lich_lsp", "lich_acp", "lich_cli")


def test_the_fields_are_the_keys_of_the_table_in_its_order() -> None:
    assert KEY_NAMES == tuple(KEYS)
    names = [f.name for f in dataclasses.fields(Settings)]
    assert names == [*KEYS, *sorted(BOOKKEEPING_FIELDS, key=names.index)]


@pytest.mark.parametrize("key", list(KEYS))
def test_each_default_is_the_tables(key: str) -> None:
    assert getattr(Settings(), key) == KEYS[key].default


def test_a_loaded_configs_settings_hold_its_values_sources_and_trust(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".lich").mkdir(parents=True)
    (work / ".lich" / "config.json").write_text(
        json.dumps({"max_turns": 7, "review_style": "hunks", "my_plugin_key": {"x": 1}})
    )
    config = load_config(
        work,
        env={
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "HOME": str(tmp_path),
        },
    )
    settings = config.settings
    for key in KEYS:
        assert getattr(settings, key) == config[key], key
    assert settings.max_turns == 7  # a narrowing key, taken from the untrusted file
    assert settings.review_style == "hunks"
    assert settings.work_dir == str(work.resolve())
    assert settings.sources["max_turns"] == str(work / ".lich" / "config.json")
    assert settings.trust is config.trust and config.trust.state == UNTRUSTED
    assert not settings.workspace_trusted
    # The mapping view: every value, lich's keys and the ones it does not know (plugins read them).
    assert dict(settings) == dict(config)
    assert settings["my_plugin_key"] == {"x": 1} and settings.extra == {"my_plugin_key": {"x": 1}}
    assert settings.get("no_such_key") is None and "no_such_key" not in settings
    # A value set on the Config afterwards (the CLI's --model) shows in the next read.
    config["max_turns"] = 3
    assert config.settings.max_turns == 3


def test_absent_and_null_values_take_the_default() -> None:
    settings = Settings.of({"max_turns": None, "docs_dir": "manual"})
    assert settings.max_turns == KEYS["max_turns"].default
    assert settings.docs_dir == "manual"
    assert settings.web_search == KEYS["web_search"].default


def test_a_value_is_from_the_trusted_workspace_only_when_that_file_set_it(tmp_path: Path) -> None:
    path = tmp_path / ".lich" / "config.json"
    sources = {"test_command": str(path), "mcp_servers": "user"}
    trusted = Settings.of(
        {"test_command": "make test"}, sources=sources, trust=TrustStatus(TRUSTED, path)
    )
    assert trusted.workspace_trusted
    assert trusted.from_trusted_workspace("test_command") is trusted.trust
    assert trusted.from_trusted_workspace("mcp_servers") is None
    untrusted = Settings.of({}, sources=sources, trust=TrustStatus(UNTRUSTED, path))
    assert untrusted.from_trusted_workspace("test_command") is None
    assert not untrusted.workspace_trusted


def test_a_tool_context_types_the_mapping_it_is_given(tmp_path: Path) -> None:
    ctx = ToolContext(work_dir=tmp_path, settings={"docs_dir": "manual", "plugin_key": 1})
    assert isinstance(ctx.settings, Settings)
    assert ctx.settings.docs_dir == "manual" and ctx.settings["plugin_key"] == 1
    config = Config(
        {"test_command": "make"},
        {"test_command": "user"},
        TrustStatus(TRUSTED, tmp_path / "c.json"),
    )
    from_config = ToolContext(work_dir=tmp_path, settings=config)
    assert from_config.settings.test_command == "make" and from_config.settings.workspace_trusted
    assert settings_of(from_config.settings) is from_config.settings


# --- no `config.get("<key>")` in product code ---------------------------------------------------


def _receiver_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def untyped_reads(source: str, path: str) -> list[str]:
    """`<config or settings>.get("<known key>")` calls and `<config or settings>["<known key>"]`
    reads: each a place that should read the typed attribute."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename=path)):
        key: object = None
        receiver = ""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            receiver = _receiver_name(node.func.value)
            if isinstance(node.args[0], ast.Constant):
                key = node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            receiver = _receiver_name(node.value)
            if isinstance(node.slice, ast.Constant):
                key = node.slice.value
        name = receiver.lower()
        if key in KEYS and ("config" in name or "settings" in name):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_untyped_reads() -> None:
    source = (
        "x = config.get('max_turns')\n"
        "y = self.holder.config['approval']\n"
        "z = ctx.settings.get('docs_dir', None)\n"
        "config['providers'] = []\n"  # a write: the CLI's flags set values before settings are read
        "w = config.get('my_plugin_key')\n"  # not a key lich knows
        "v = entry.get('models')\n"  # not a config
    )
    assert [line.split(": ", 1)[1] for line in untyped_reads(source, "x.py")] == [
        "config.get('max_turns')",
        "self.holder.config['approval']",
        "ctx.settings.get('docs_dir', None)",
    ]


def test_product_code_reads_known_keys_as_typed_attributes() -> None:
    found = []
    for package in PRODUCT_PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            found += untyped_reads(file.read_text(encoding="utf-8"), str(file.relative_to(ROOT)))
    assert not found, (
        "read these through Config.settings / settings_of (lich_core.settings):\n"
        + "\n".join(found)
    )
