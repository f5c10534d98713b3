"""Capability gates: absent grants all, a list grants exactly those, unknown names are config errors."""

from __future__ import annotations

import pytest

from lich_core.config import load_config
from lich_core.errors import ConfigError
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.types import CAPABILITIES


def test_capability_names() -> None:
    assert set(CAPABILITIES) == {
        "file/read",
        "file/write",
        "file/edit",
        "process/exec",
        "image/eval",
        "net/fetch",
        "mcp/call",
    }


def test_absent_grants_everything() -> None:
    gate = CapabilityGate(None)
    for name in CAPABILITIES:
        assert gate.allows(name) and gate.denial(name) is None
    assert gate.allows(None)


def test_empty_list_denies_every_gated_tool() -> None:
    gate = CapabilityGate([])
    for name in CAPABILITIES:
        assert not gate.allows(name)
        assert gate.denial(name) == f"capability_denied: {name}"
    # A tool that declares no capability is not gated.
    assert gate.allows(None) and gate.denial(None) is None


def test_list_grants_exactly_those() -> None:
    gate = CapabilityGate(["file/read", "net/fetch"])
    assert gate.allows("file/read") and gate.allows("net/fetch")
    assert gate.denial("file/write") == "capability_denied: file/write"
    assert gate.denial("process/exec") == "capability_denied: process/exec"


def test_unknown_name_is_a_config_error_naming_the_entry() -> None:
    with pytest.raises(ConfigError) as info:
        CapabilityGate(["file/read", "file/delete"])
    message = str(info.value)
    assert "capabilities[1]" in message and "file/delete" in message


def test_config_loader_drops_an_unknown_capability_alone_naming_entry_and_file(tmp_path) -> None:
    (tmp_path / ".lich").mkdir()
    config_file = tmp_path / ".lich" / "config.json"
    config_file.write_text('{"capabilities": ["file/read", "shell"]}')
    config = load_config(tmp_path, env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert config["capabilities"] == ["file/read"]  # the rest of the list still narrows
    [problem] = config.problems
    assert problem.path == "capabilities[1]" and problem.source == str(config_file)
    assert "shell" in problem.text() and "entry is dropped" in problem.text()


def test_config_absent_capabilities_means_none_key(tmp_path) -> None:
    config = load_config(tmp_path, env={})
    assert config["capabilities"] is None
    assert CapabilityGate(config["capabilities"]).allows("process/exec")
    empty = load_config(tmp_path, env={}, overrides={"capabilities": []})
    assert empty["capabilities"] == []
    assert not CapabilityGate(empty["capabilities"]).allows("file/read")
