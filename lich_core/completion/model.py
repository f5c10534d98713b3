"""What a fill-in-the-middle model is asked, and the Protocol every completion model follows."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from lich_core.vocabulary import CancelToken

DEFAULT_COMPLETION_MAX_TOKENS = 128


@dataclass(frozen=True)
class Snippet:
    """Text from another open document, similar to the cursor's surroundings (root-relative)."""

    path: str
    text: str


@dataclass(frozen=True)
class FimRequest:
    """One completion: the text before the cursor (`prefix`) and after it (`suffix`), from the
    buffer as the user sees it; the file's root-relative path and language id; snippets of
    neighbouring documents; how much to generate and where to stop."""

    prefix: str
    suffix: str
    path: str = ""
    language: str = ""
    snippets: tuple[Snippet, ...] = ()
    max_tokens: int = DEFAULT_COMPLETION_MAX_TOKENS
    stop: tuple[str, ...] = field(default_factory=tuple)


class FimModel(Protocol):
    """A completion model. `stream` yields the generated text in pieces as the provider sends
    them; leaving the iteration early (or `cancel` firing) closes the provider's stream at once.
    `on_sent` is called once the request is on the wire (the server times its own part with it).
    Failures raise lich_core.providers.base.ProviderError."""

    name: str
    model: str

    def describe(self) -> str:
        """ "kind model @ url (format)", for lich.status."""
        ...

    def stream(
        self, request: FimRequest, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]: ...
