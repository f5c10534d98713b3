"""The fail-closed matrix's cases, generated from the key table (lich_core.config.keys.KEYS).

Each case is one bad value in the workspace's `.lich/config.json` (untrusted) beside the same good
values as its baseline, the run without the bad value. For every key: a wrong-typed value; for a
number, a value too high and one too low; for a choice, an unknown choice; for a container, a
broken entry beside good ones and an unknown (misspelt) field in a nested entry. Plus unknown
top-level keys. The values are found by asking the key's own check (KeySpec.check) which
candidates it refuses and why, so a key added to KEYS gets its cases without an edit here; a
container key needs a good sample in SAMPLES (test_cases.py fails, naming it, when one is missing).

`WS_URL` in a value stands for the base URL of the workspace's own fake provider: a value that
would switch the model to it is visible as a request there.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from lich_core.config import DROPPED, KEYS

WS_URL = "http://ws-provider.invalid"  # replaced by the fake's URL when written
WS_MODEL = "ws-model"
WS_PROVIDER = {"name": "ws", "kind": "openai_compat", "base_url": WS_URL + "/v1", "model": WS_MODEL}

# The good values every case's workspace file carries, unless the case's key is one of them: a
# bad value must not take them with it (the rest of the source applies). Both narrow what the
# model is offered or may do, so losing them would widen the run.
MATRIX_TOOLS = ["read_file", "edit_file", "write_file", "terminal", "find_files"]
SIBLINGS: dict[str, Any] = {
    "tools_enabled": MATRIX_TOOLS,
    "approval": {"file/edit": "ask"},
}

# A good value of each container key, from which its broken-entry and unknown-field cases are made.
SAMPLES: dict[str, Any] = {
    "tools_enabled": MATRIX_TOOLS,
    "capabilities": ["file/read", "file/edit", "process/exec"],
    "quick_prompts": ["Explain this code"],
    "providers": [WS_PROVIDER],
    "models": {"chat": ["ws"]},
    "plugins": [{"path": ".lich/plugins/matrix.py"}],
    "mcp_servers": {"srv": {"command": "python", "args": ["srv.py"]}},
    "approval": {"file/edit": "ask"},
    "code_actions": [{"title": "Add docs", "prompt": "Add docstrings"}],
    "completion": {"kind": "openai_compat", "base_url": WS_URL + "/v1", "model": WS_MODEL},
    "next_edit": {"kind": "openai_compat", "base_url": WS_URL + "/v1", "model": WS_MODEL},
    "web_search": {"kind": "searxng", "url": WS_URL + "/search"},
}

# Candidates for a wrong-typed value, in order: the first the key's check refuses as the wrong
# type ("expected ...", not "out of range") is the case.
WRONG_TYPES: list[Any] = [42, "many", True, {"x": 1}]
TOO_HIGH = [999_999, 10**12]
TOO_LOW = [-1, -(10**12)]
UNKNOWN_CHOICE = "no-such-choice"
# Unknown top-level keys: near-misses of real keys (named with the key they look like) and one
# that looks like nothing.
UNKNOWN_KEYS: dict[str, Any] = {
    "max_turn": 3,
    "provider": [WS_PROVIDER],
    "Edit_Mode": "review",
    "frobnicate": True,
}
# Cases issue #42 names (with its misspelt completion.modle): the generator must make them.
NAMED_CASES: list[tuple[str, Any, str]] = [
    ("max_turns", "many", "max_turns"),
    ("completion_prefix_chars", 999_999, "completion_prefix_chars"),
]
# Cases beyond the generated ones: docs/configuration.md's example of a bad value.
EXTRA_CASES: list[tuple[str, Any, str]] = [
    ("capabilities", ["file/read", "file/rread"], "capabilities[1]"),
]
# Fields whose misspelling makes an unknown-field case, where an entry has them.
MISSPELT_FIELDS = ("base_url", "model")


@dataclass(frozen=True)
class Case:
    id: str
    key: str  # the KEYS key it drives, or the unknown key
    kind: str
    value: Any  # what the workspace file says for `key`
    named: str  # the key path the problem must name
    good: Any = None  # what remains of the value without the bad part (None: nothing)

    def workspace(self, ws_url: str) -> dict[str, Any]:
        return _filled({**self._others(), self.key: self.value}, ws_url)

    def baseline(self, ws_url: str) -> dict[str, Any]:
        content = self._others()
        if self.good is not None:
            content[self.key] = self.good
        return _filled(content, ws_url)

    def _others(self) -> dict[str, Any]:
        return {key: copy.deepcopy(value) for key, value in SIBLINGS.items() if key != self.key}


def _filled(content: dict[str, Any], ws_url: str) -> dict[str, Any]:
    return json.loads(json.dumps(content).replace(WS_URL, ws_url))


def misspelt(name: str) -> str:
    """A typo of `name`: underscores dropped (base_url → baseurl), else its last two letters swapped
    (model → modle)."""
    if "_" in name:
        return name.replace("_", "")
    return name[:-2] + name[-1] + name[-2]


def refusal(key: str, value: Any) -> str | None:
    """The key's check's message for `value` when it drops it whole, else None."""
    result, problems = KEYS[key].check(key, copy.deepcopy(value))
    return problems[0][2] if result is DROPPED else None


def entry_refusals(key: str, value: Any) -> list[str]:
    """The key paths of the entries the key's check drops from `value` (kept whole)."""
    result, problems = KEYS[key].check(key, copy.deepcopy(value))
    return [] if result is DROPPED else [path for _, path, _ in problems]


def _wrong_type(key: str) -> Case | None:
    for value in WRONG_TYPES:
        message = refusal(key, value)
        if message is not None and message.startswith(f"{key}: expected"):
            return Case(f"{key}=wrong-type", key, "wrong_type", value, key)
    return None


def _numeric(key: str) -> bool:
    return any(
        refusal(key, value) is None and isinstance(KEYS[key].check(key, value)[0], (int, float))
        for value in (0, 1, 1000, 0.5)
    )


def numeric_keys() -> list[str]:
    return [key for key in KEYS if _numeric(key)]


def _out_of_range(key: str, kind: str, candidates: list[Any]) -> Case | None:
    for value in candidates:
        message = refusal(key, value)
        if message is not None and "out of range" in message:
            return Case(f"{key}={kind}", key, kind, value, key)
    return None


def _unknown_choice(key: str) -> Case | None:
    default = KEYS[key].default
    if isinstance(default, str) and refusal(key, default) is None:
        message = refusal(key, UNKNOWN_CHOICE)
        if message is not None and "expected one of" in message:
            return Case(f"{key}=unknown-choice", key, "unknown_choice", UNKNOWN_CHOICE, key)
    return None


def _broken_entry(key: str, sample: Any) -> Case | None:
    if isinstance(sample, list) and KEYS[key].entry is not None:
        value = [*sample, 42]
        named = f"{key}[{len(sample)}]"
    elif isinstance(sample, dict) and KEYS[key].entry is not None:
        name = misspelt(next(iter(sample)))
        value = {**sample, name: 42}
        named = f"{key}.{name}"
    else:
        return None
    if entry_refusals(key, value) != [named]:
        raise AssertionError(f"{key}: the broken entry {value!r} is not refused alone as {named}")
    return Case(f"{key}=broken-entry", key, "broken_entry", value, named, good=sample)


def nested_entries(key: str, sample: Any) -> list[tuple[str, Any, Any]]:
    """(path, entry, replace(entry) -> whole value) for each object entry of the sample."""
    if isinstance(sample, dict) and KEYS[key].entry is None:
        return [(key, sample, lambda entry: entry)]
    if isinstance(sample, list):
        return [
            (
                f"{key}[{index}]",
                entry,
                lambda entry, i=index: [*sample[:i], entry, *sample[i + 1 :]],
            )
            for index, entry in enumerate(sample)
            if isinstance(entry, dict)
        ]
    if isinstance(sample, dict):
        return [
            (f"{key}.{name}", entry, lambda entry, n=name: {**sample, n: entry})
            for name, entry in sample.items()
            if isinstance(entry, dict)
        ]
    return []


def _unknown_fields(key: str, sample: Any) -> list[Case]:
    cases = []
    for path, entry, rebuilt in nested_entries(key, sample):
        fields = [name for name in MISSPELT_FIELDS if name in entry] or [next(iter(entry))]
        for field in fields:
            typo = misspelt(field)
            changed = {(typo if name == field else name): item for name, item in entry.items()}
            value = rebuilt(changed)
            named = f"{path}.{typo}"
            # A single-object key loses its whole value; a container, only that entry.
            good = None if KEYS[key].entry is None else _without(sample, path, key)
            cases.append(Case(f"{named}=unknown-field", key, "unknown_field", value, named, good))
    return cases


def _without(sample: Any, path: str, key: str) -> Any:
    """The sample without the entry at `path` (what is left once that entry is dropped)."""
    if isinstance(sample, list):
        index = int(path[len(key) + 1 : path.index("]", len(key))])
        return [entry for i, entry in enumerate(sample) if i != index]
    name = path[len(key) + 1 :]
    return {n: entry for n, entry in sample.items() if n != name}


def generate() -> list[Case]:
    cases: list[Case] = []
    for key in KEYS:
        wrong = _wrong_type(key)
        if wrong is not None:
            cases.append(wrong)
        if _numeric(key):
            for kind, candidates in (("too-high", TOO_HIGH), ("too-low", TOO_LOW)):
                case = _out_of_range(key, kind, candidates)
                if case is not None:
                    cases.append(case)
        choice = _unknown_choice(key)
        if choice is not None:
            cases.append(choice)
        if key in SAMPLES:
            broken = _broken_entry(key, SAMPLES[key])
            if broken is not None:
                cases.append(broken)
            cases.extend(_unknown_fields(key, SAMPLES[key]))
    for key, value, named in EXTRA_CASES:
        good = [entry for entry in value if entry in SAMPLES.get(key, [])] or None
        cases.append(
            Case(f"{named}={json.dumps(value[-1])}", key, "broken_entry", value, named, good)
        )
    for key, value in UNKNOWN_KEYS.items():
        cases.append(Case(f"{key}=unknown-key", key, "unknown_key", value, key))
    return cases


def container_keys() -> list[str]:
    """Keys whose value holds entries or fields: they need a sample to make entry cases from."""
    return [
        key
        for key, spec in KEYS.items()
        if spec.entry is not None or "expected an object" in (refusal(key, 42) or "")
    ]


CASES = generate()
