"""The ACP SDK's names (`acp`, then `acp.schema`), imported on first use: `sdk.RequestError`.

Importing the SDK builds its pydantic schema classes, ~0.8 s of CPU. Every pytest-xdist worker
collects the ACP test modules, and only the one that runs the "acp" group (see `pytestmark` in
them) needs the SDK itself; so they name it through this module instead of importing it.
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = ("acp", "acp.schema")


def __getattr__(name: str) -> Any:
    for module_name in _MODULES:
        module = importlib.import_module(module_name)
        if hasattr(module, name):
            value = getattr(module, name)
            globals()[name] = value
            return value
    raise AttributeError(f"neither acp nor acp.schema has {name!r}")
