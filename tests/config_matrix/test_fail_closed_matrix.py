"""Issue #42: a bad value in the workspace's `.lich/config.json` (untrusted) changes nothing but
is named. Every case of cases.py (generated from the key table) runs through the real
`lich-lsp`, `lich` and `lich acp` under two sets of restrictions from the editor and the user
(faces.py PROFILES); the tools offered, what became of each tool call and the provider must be
those of the same run without the bad value, and the face must name the bad value's key path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.config_matrix.cases import CASES, SIBLINGS, WS_URL, Case
from tests.config_matrix.faces import (
    ALLOWED,
    ASKED,
    EDITOR_MODEL,
    FACES,
    HELLO,
    PROFILES,
    Fakes,
    Observation,
)
from tests.support.fake_provider import FakeProviderServer

# The cases of one face and profile are split into this many tests, so xdist can spread them.
SHARDS = 2
# What the full baseline (the workspace file with only the good values) must show: the
# restrictions and the workspace's good values hold at all, so a case equal to it is a real
# comparison. Offered: the workspace's tools_enabled, less the tools of capabilities not granted.
EXPECTED_TOOLS = {
    "restricted": ("find_files", "read_file"),
    "deny-exec": ("edit_file", "find_files", "read_file", "terminal"),
}
EXPECTED_CALLS = {
    "restricted": (
        ("read_file", ALLOWED),
        ("edit_file", "error:capability_denied"),
        ("write_file", "error:capability_denied"),
        ("terminal", "error:capability_denied"),
    ),
    "deny-exec": (
        ("read_file", ALLOWED),
        ("edit_file", ASKED),
        ("write_file", "error:capability_denied"),
        ("terminal", "error:approval_denied"),
    ),
}


def _ordered(cases: list[Case]) -> list[Case]:
    """The cases whose baseline is the full one first: every other baseline is then run right
    after a case, so the language server's re-read of it shows (faces.LspFace._reread)."""
    return sorted(cases, key=lambda case: case.baseline(WS_URL) != SIBLINGS)


@pytest.mark.timeout(100)
@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("face", list(FACES))
async def test_a_bad_workspace_value_changes_nothing_and_is_named(
    face: str, profile: str, shard: int, tmp_path: Path
) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "hello.py").write_text(HELLO, encoding="utf-8")
    cases = _ordered(CASES[shard::SHARDS])
    with FakeProviderServer() as editor_fake, FakeProviderServer() as ws_fake:
        ws_url = ws_fake.url
        runner = FACES[face](root, PROFILES[profile], Fakes(editor_fake, ws_fake))
        full_key = json.dumps(SIBLINGS, sort_keys=True)
        baselines: dict[str, Observation] = {}
        differences: list[str] = []
        unnamed: list[str] = []
        async with runner.started(SIBLINGS) as driver:
            baselines[full_key] = full = (await driver.run(SIBLINGS, None)).observation
            for case in cases:
                base = case.baseline(ws_url)
                base_key = json.dumps(base, sort_keys=True)
                if base_key not in baselines:
                    baselines[base_key] = (await driver.run(base, None)).observation
                run = await driver.run(case.workspace(ws_url), case.named)
                differences.extend(_differences(case, baselines[base_key], run.observation))
                if f"{runner.ws_file}: {case.named}:" not in run.shown:
                    unnamed.append(case.id)
    assert full.calls == EXPECTED_CALLS[profile], full
    assert full.provider == (("editor", EDITOR_MODEL),) * 2, full
    assert full.tools == (EXPECTED_TOOLS[profile],) * 2, full
    assert not differences, "\n".join(differences)
    assert not unnamed, f"not named by {face}: {unnamed}"


def _differences(case: Case, baseline: Observation, got: Observation) -> list[str]:
    found = []
    label = f"{case.id} ({json.dumps(case.value)})"
    if got.tools != baseline.tools:
        offered = {name for names in got.tools for name in names}
        wanted = {name for names in baseline.tools for name in names}
        found.append(
            f"{label}: offered tools +{sorted(offered - wanted)} -{sorted(wanted - offered)} "
            f"({len(got.tools)} model requests, {len(baseline.tools)} without it)"
        )
    for what in ("calls", "provider"):
        expected: Any = getattr(baseline, what)
        actual: Any = getattr(got, what)
        if actual != expected:
            found.append(f"{label}: {what} {actual} instead of {expected}")
    return found
