"""Provider-neutral conversation messages (re-exported; they live in `lich_core.vocabulary`).

Kept so tests and plugins that import from here keep working; code inside lich_core and lich_lsp
imports these names from `lich_core.vocabulary`.
"""

from __future__ import annotations

from lich_core.vocabulary import Message, ModelResponse, Role, ToolCall, Usage

__all__ = ["Message", "ModelResponse", "Role", "ToolCall", "Usage"]
