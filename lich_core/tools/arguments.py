"""Argument names shared by two harnesses, and arguments no tool knows.

Models are trained on either reference harness (lich's tool set or kli's), so a builtin accepts
both spellings of an argument: the primary name and an alias. Both are listed in the tool's
JSON Schema (`properties`), the alias with a description naming the harness it comes from, so a
provider offers both. Giving both spellings of one argument is an error (`conflicting_arguments:`),
never a silent choice.

An argument the schema does not list is reported, not dropped: `unknown_argument: NAME (known:
a, b, c)`, so a model that guessed a name (`file_path`, `cmd`) learns the right one in one step.
`unknown_arguments` works on any JSON Schema object (`properties` + `additionalProperties`), so
the check can move to the executor for every tool; today the tools that opt in call
`reject_unknown_arguments` first thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lich_core.errors import ToolError
from lich_core.vocabulary import JsonSchemaObject

__all__ = [
    "alias_property",
    "given",
    "pick_alias",
    "reject_unknown_arguments",
    "unknown_arguments",
]


def given(args: Mapping[str, Any], name: str) -> bool:
    """True when the call gives `name` a value (a JSON null counts as not given)."""
    return args.get(name) is not None


def known_arguments(schema: JsonSchemaObject) -> list[str]:
    properties = schema.get("properties")
    return list(properties) if isinstance(properties, Mapping) else []


def unknown_arguments(schema: JsonSchemaObject, args: Mapping[str, Any]) -> list[str]:
    """The argument names `schema` does not allow; [] when it allows extra properties.

    JSON Schema's default is `additionalProperties: true`; only `false` makes a name unknown.
    """
    if schema.get("additionalProperties", True) is not False:
        return []
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return list(args)
    return [name for name in args if name not in properties]  # a mapping: no set to build per call


def reject_unknown_arguments(schema: JsonSchemaObject, args: Mapping[str, Any]) -> None:
    """Raise `unknown_argument: NAME (known: a, b, c)` for the first names the schema lacks."""
    unknown = unknown_arguments(schema, args)
    if unknown:
        noun = "unknown_argument" if len(unknown) == 1 else "unknown_arguments"
        names = ", ".join(str(name) for name in unknown)
        raise ToolError(f"{noun}: {names} (known: {', '.join(known_arguments(schema))})")


def pick_alias(args: Mapping[str, Any], primary: str, alias: str, *, why: str = "") -> str | None:
    """Which of the two spellings the call gives (`primary`, `alias`, or None for neither).

    Both given is `conflicting_arguments: ...`; `why` says what each name means, e.g.
    "timeout is in seconds (kli), timeout_ms in milliseconds (lich)".
    """
    has_primary, has_alias = given(args, primary), given(args, alias)
    if has_primary and has_alias:
        reason = f"; {why}" if why else ""
        raise ToolError(
            f"conflicting_arguments: {primary} and {alias} both given, give one{reason}"
        )
    if has_primary:
        return primary
    return alias if has_alias else None


def alias_property(
    schema: Mapping[str, Any], *, harness: str, of: str, description: str
) -> dict[str, Any]:
    """A schema property for an alias: `schema` plus a description naming its harness and primary."""
    text = f"{description} Alias of `{of}` ({harness}).".lstrip()
    return {**schema, "description": text}
