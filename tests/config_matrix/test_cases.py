"""The matrix's cases cover the key table: every key has its cases (a key added to KEYS without a
way to make them fails here, by name), the issue's own examples are among them, and, read by
lich_core's loader, each case is named at its key path and leaves the effective configuration
of the known keys what its baseline makes it (every key, also those no face run observes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lich_core.config import KEYS, load_config
from tests.config_matrix.cases import (
    CASES,
    NAMED_CASES,
    SAMPLES,
    container_keys,
    nested_entries,
    numeric_keys,
    refusal,
)
from tests.config_matrix.faces import PROFILES, editor_provider

EDITOR_URL = "http://127.0.0.1:9"  # never asked: the loader only reads the configs
WS_URL = "http://127.0.0.1:10"


def kinds_of(key: str) -> set[str]:
    return {case.kind for case in CASES if case.key == key}


def test_every_key_has_a_wrong_typed_case() -> None:
    assert [key for key in KEYS if "wrong_type" not in kinds_of(key)] == []


def test_every_number_has_a_value_too_high_and_one_too_low() -> None:
    numbers = numeric_keys()
    assert "max_turns" in numbers and "compress_threshold" in numbers
    assert [key for key in numbers if not {"too-high", "too-low"} <= kinds_of(key)] == []


def test_every_choice_has_an_unknown_choice() -> None:
    choices = [key for key in KEYS if "expected one of" in (refusal(key, 42) or "")]
    assert "edit_mode" in choices and "workspace_trust" in choices
    assert [key for key in choices if "unknown_choice" not in kinds_of(key)] == []


def test_every_container_has_a_sample_a_broken_entry_and_an_unknown_field() -> None:
    containers = container_keys()
    assert [key for key in containers if key not in SAMPLES] == [], "add a good value to SAMPLES"
    for key in containers:
        kinds = kinds_of(key)
        if KEYS[key].entry is not None:
            assert "broken_entry" in kinds, key
        if nested_entries(key, SAMPLES[key]):  # objects with fields: a field can be misspelt
            assert "unknown_field" in kinds, key


def test_the_issues_cases_are_among_them() -> None:
    made = {(case.key, json.dumps(case.value), case.named) for case in CASES}
    for key, value, named in NAMED_CASES:
        assert (key, json.dumps(value), named) in made
    named = {case.named for case in CASES}
    assert {"completion.modle", "providers[0].baseurl", "max_turn"} <= named


@pytest.mark.parametrize("profile", list(PROFILES))
def test_the_loader_drops_each_bad_value_alone_and_names_it(profile: str, tmp_path: Path) -> None:
    root = (tmp_path / "ws").resolve()
    (root / ".lich").mkdir(parents=True)
    restrictions = PROFILES[profile]
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps(restrictions.user), encoding="utf-8")
    editor = {**restrictions.editor, "providers": [editor_provider(EDITOR_URL)]}
    ws_file = root / ".lich" / "config.json"

    def read(content: dict[str, object]) -> tuple[dict[str, object], object]:
        ws_file.write_text(json.dumps(content), encoding="utf-8")
        config = load_config(root, overrides=editor)
        known = {key: value for key, value in config.items() if key in KEYS}
        named = {p.path for p in config.problems if p.source == str(ws_file)}
        return known, (config.trust.state, [item.to_json() for item in config.trust.ignored]), named

    wrong = []
    for case in CASES:
        base_values, base_trust, base_named = read(case.baseline(WS_URL))
        values, trust, named = read(case.workspace(WS_URL))
        assert base_named == set(), case.id
        if case.named not in named:
            wrong.append(f"{case.id}: not named ({sorted(named)})")
        changed = sorted(key for key in KEYS if values[key] != base_values[key])
        if changed:
            wrong.append(f"{case.id}: changes {changed}")
        if trust != base_trust:
            wrong.append(f"{case.id}: trust {trust} instead of {base_trust}")
    assert wrong == []
