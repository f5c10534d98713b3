"""Capability gates (kli): each tool declares one capability; config grants a set of them.

`capabilities` absent from config grants everything; present, it grants exactly the listed names
(an empty list denies every gated tool).
"""

from __future__ import annotations

from collections.abc import Iterable

from lich_core.errors import ConfigError
from lich_core.tools.types import CAPABILITIES


class CapabilityGate:
    def __init__(self, granted: Iterable[str] | None = None) -> None:
        if granted is None:
            self.granted: frozenset[str] | None = None
            return
        names = list(granted)
        for index, name in enumerate(names):
            if name not in CAPABILITIES:
                raise ConfigError(
                    f"capabilities[{index}]: unknown capability {name!r} (known: {', '.join(CAPABILITIES)})"
                )
        self.granted = frozenset(names)

    def allows(self, capability: str | None) -> bool:
        if capability is None or self.granted is None:
            return True
        return capability in self.granted

    def denial(self, capability: str | None) -> str | None:
        """The error string for a denied call, or None when it may run."""
        return None if self.allows(capability) else f"capability_denied: {capability}"
