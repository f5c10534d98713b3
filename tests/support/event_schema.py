"""The lich/event JSON Schema (docs/lich-event.schema.json) and the shared event fixtures
(tests/fixtures/events/*.json), for the tests of every renderer.

A fixture file is one run as the language server sends it: a JSON array of `lich/event` params.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "docs" / "lich-event.schema.json"
FIXTURES_DIR = REPO / "tests" / "fixtures" / "events"


def fixture_files() -> list[Path]:
    return sorted(FIXTURES_DIR.glob("*.json"))


def load_fixture(name: str) -> list[dict[str, Any]]:
    """The events of tests/fixtures/events/<name>.json."""
    events = json.loads((FIXTURES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    assert isinstance(events, list), f"{name}.json is not a JSON array"
    return events


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validators() -> tuple[Any, dict[str, Any]]:
    from jsonschema import Draft202012Validator

    schema = _schema()
    Draft202012Validator.check_schema(schema)
    per_type = {
        name: Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})
        for name in schema["$defs"]
        if "type" in schema["$defs"][name].get("properties", {})
    }
    return Draft202012Validator(schema), per_type


def schema_errors(payload: Any) -> list[str]:
    """Why `payload` is not a valid lich/event ([] when it is), naming the failing field."""
    whole, per_type = _validators()
    if whole.is_valid(payload):
        return []
    kind = payload.get("type") if isinstance(payload, dict) else None
    validator = per_type.get(kind) if isinstance(kind, str) else None
    if validator is None:
        return [f"unknown event type {kind!r}"]
    errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    found = []
    for error in errors:
        # `data` is anyOf(full, cut): report the full shape's complaints, they name the field.
        details = [e for e in (error.context or []) if list(e.relative_schema_path)[:1] == [0]] or [
            error
        ]
        found += [f"{kind} /{'/'.join(map(str, d.absolute_path))}: {d.message}" for d in details]
    return found or [f"{kind}: invalid"]


def assert_valid_event(payload: Any, where: str = "") -> None:
    errors = schema_errors(payload)
    assert not errors, f"{where} not a valid lich/event: {errors}\n{json.dumps(payload)[:2000]}"
