"""JSON Schema for the types of the wire contracts: the event data (lich_core.agent.events) and
the commands' params and results (lich_lsp.contract). Each contract builds its own object schemas
(which fields are required, extra keywords); the types inside them are read here, once.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

SCALARS: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}

# (dataclass, defs) -> the schema of that dataclass's object
ObjectSchema = Callable[[type, dict[str, Any]], dict[str, Any]]


def type_schema(
    annotation: Any, defs: dict[str, Any], object_schema: ObjectSchema
) -> dict[str, Any]:
    """The schema of one annotation; a dataclass goes into `defs` once (built by
    `object_schema`) and is referred to by `$ref`."""
    if annotation in SCALARS:
        return {"type": SCALARS[annotation]}
    if annotation is Any:
        return {}
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return {"type": "string", "enum": list(args)}
    if origin in (Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        if len(present) != 1:
            raise TypeError(f"unsupported union {annotation!r}")
        inner = type_schema(present[0], defs, object_schema)
        if type(None) not in args:
            return inner
        if isinstance(inner.get("type"), str) and "enum" not in inner:
            return {**inner, "type": [inner["type"], "null"]}
        return {"anyOf": [inner, {"type": "null"}]}
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": type_schema(args[0], defs, object_schema)}
    if origin is dict:
        value = type_schema(args[1], defs, object_schema) if args else {}
        return {"type": "object", **({"additionalProperties": value} if value else {})}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        if annotation.__name__ not in defs:
            defs[annotation.__name__] = {}  # a placeholder while its own fields are built
            defs[annotation.__name__] = object_schema(annotation, defs)
        return {"$ref": f"#/$defs/{annotation.__name__}"}
    raise TypeError(f"no JSON Schema for {annotation!r}")
