"""The Neovim plugin reads the fields the server documents (#44): every `event.<field>` and
`data.<field>` its chat and transcript read from a `lich/event` is in
docs/lich-event.schema.json, and every field it reads from lich.status is in
docs/lich-commands.schema.json, so a renderer cannot drift to a field the server never sends.
(The Emacs client's transcript has the same check in test_emacs.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LUA_DIR = REPO / "editors" / "nvim" / "lua" / "lich"
EVENT_SCHEMA = REPO / "docs" / "lich-event.schema.json"
COMMAND_SCHEMA = REPO / "docs" / "lich-commands.schema.json"
# The files that render lich/event notifications (`event` is one, `data` its data).
EVENT_READERS = ("chat.lua", "transcript.lua")
_COMMENT = re.compile(r"--.*$", re.MULTILINE)


def lua_code(name: str) -> str:
    """The Lua source without its comments (which name files like lich-event.schema.json)."""
    return _COMMENT.sub("", (LUA_DIR / name).read_text(encoding="utf-8"))


def fields_read(code: str, obj: str) -> set[str]:
    return set(re.findall(rf"\b{obj}\.([a-z_]+)", code))


def schema_fields(defs: dict) -> tuple[set[str], set[str]]:
    """(an event's own fields, every field of any object the events carry)."""
    own = {
        key for d in defs.values() if "type" in d.get("properties", {}) for key in d["properties"]
    }
    every = {key for d in defs.values() for key in d.get("properties", {})}
    return own, every


def test_the_scan_sees_reads_and_skips_comments() -> None:
    code = _COMMENT.sub(
        "", "local t = data.text -- data.nope\n-- event.schema\nif event.type then end"
    )
    assert fields_read(code, "data") == {"text"} and fields_read(code, "event") == {"type"}


def test_the_chat_and_transcript_read_only_event_schema_fields() -> None:
    own, every = schema_fields(json.loads(EVENT_SCHEMA.read_text(encoding="utf-8"))["$defs"])
    unknown: dict[str, set[str]] = {}
    for name in EVENT_READERS:
        code = lua_code(name)
        event_reads, data_reads = fields_read(code, "event"), fields_read(code, "data")
        assert "type" in event_reads and "name" in data_reads, name  # the scan sees the reads
        unknown[name] = {f"event.{k}" for k in event_reads - own} | {
            f"data.{k}" for k in data_reads - every
        }
    assert not any(unknown.values()), unknown


def test_status_reads_are_in_the_command_schema() -> None:
    """`status.<field>` (lich.status's answer, wherever the plugin names it so) is a field of
    StatusResult or one of its objects."""
    defs = json.loads(COMMAND_SCHEMA.read_text(encoding="utf-8"))["$defs"]
    known = {key for d in defs.values() for key in d.get("properties", {})}
    read: dict[str, set[str]] = {}
    for path in sorted(LUA_DIR.glob("*.lua")):
        fields = fields_read(lua_code(path.name), "status")
        if fields:
            read[path.name] = fields - known
    assert read, "no lua file reads lich.status as `status`: the check would see nothing"
    assert not any(read.values()), read
