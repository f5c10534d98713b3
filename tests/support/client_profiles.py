"""Client capability profiles pytest-lsp does not ship, in its own file format
(tests/support/clients/<name>_v<version>.json: {"clientInfo", "capabilities"}), read the way
`pytest_lsp.client_capabilities` reads its own. Where each one comes from:
tests/support/clients/README.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter

CLIENTS_DIR = Path(__file__).parent / "clients"
# Helix's last release, and its master at the commit read (showMessageRequest, showDocument and
# more since the release).
HELIX_RELEASE = "25.07.1"
HELIX_MASTER = "25.07.1-079a789e"
HELIX_VERSIONS = (HELIX_RELEASE, HELIX_MASTER)


def _profile_path(name: str, version: str) -> Path:
    return CLIENTS_DIR / f"{name}_v{version}.json"


def has_profile(name: str, version: str) -> bool:
    return bool(version) and _profile_path(name, version).is_file()


def client_profile(name: str, version: str) -> dict[str, Any]:
    """The raw profile: {"clientInfo": {...}, "capabilities": {...}} as the client sends them."""
    path = _profile_path(name, version)
    profile: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return profile


def client_info(name: str, version: str) -> types.ClientInfo:
    info: types.ClientInfo = default_converter().structure(
        client_profile(name, version)["clientInfo"], types.ClientInfo
    )
    return info


def capabilities(name: str, version: str) -> types.ClientCapabilities:
    # Structured as a whole InitializeParams, as pytest-lsp does; a key lsprotocol does not know
    # is dropped (the profiles test says which ones are).
    params = default_converter().structure(client_profile(name, version), types.InitializeParams)
    return params.capabilities


def helix_capabilities(version: str = HELIX_RELEASE) -> types.ClientCapabilities:
    """What Helix `version` declares at initialize (with its default `lsp.snippets = true`)."""
    return capabilities("helix", version)
