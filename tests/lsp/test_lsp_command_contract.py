"""The typed command contract (lich_lsp.contract) on the wire, per client profile: a bad argument
to any command is InvalidParams naming the command and the field, checked before the command runs;
and docs/lich-commands.schema.json is what the dataclasses generate (run
`python -m lich_lsp.contract --schema` after changing them)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from pygls.exceptions import JsonRpcException

from lich_lsp.commands import COMMANDS
from lich_lsp.contract import COMMAND_TYPES, SCHEMA_PATH, command_schema, main, schema_text

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

# One bad argument per command: (command, argument, the field the error names).
BAD_ARGUMENTS = [
    ("lich.ask", {"prompt": 5}, "field 'prompt' must be a string, got int"),
    ("lich.ask", {"mode": "maybe"}, "field 'mode' must be one of apply, review"),
    ("lich.ask", {"range": {"start": {"line": 0, "character": 0}}}, "'range.end'"),
    ("lich.ask", {"diagnostics": {"message": "x"}}, "field 'diagnostics' must be a list"),
    ("lich.cancel", {"task_id": 1}, "field 'task_id' must be a string"),
    ("lich.status", [], "expected an object argument, got list"),
    ("lich.tools", "all", "expected an object argument, got str"),
    ("lich.read", {"uri": "file:///x", "start": 0}, "field 'start' must be a line number"),
    ("lich.applyPatch", {"patch": ""}, "field 'patch' must not be empty"),
    ("lich.runTool", {"name": "read_file", "args": [1]}, "field 'args' must be an object"),
    ("lich.mentions", {"prefix": ["a"]}, "field 'prefix' must be a string, got list"),
    ("lich.threads", 3, "expected an object argument, got int"),
    ("lich.thread", {}, "missing required field 'thread'"),
    ("lich.rewind", {"thread": "abc", "turn": True}, "field 'turn' must be an integer, got bool"),
    ("lich.trustWorkspace", {"revoke": "yes"}, "field 'revoke' must be true or false, got str"),
    ("lich.runTests", {"filter": 7}, "field 'filter' must be a string, got int"),
    ("lich.undoTask", {"task_id": {}}, "field 'task_id' must be a string, got dict"),
    ("lich.answerQuestion", {"id": "q1"}, "missing required field 'answer'"),
    ("lich.acceptHunk", {"hunk_id": 4}, "field 'hunk_id' must be a string, got int"),
    ("lich.rejectHunk", {}, "missing required field 'hunk_id'"),
    ("lich.acceptAll", {"uri": False}, "field 'uri' must be a string, got bool"),
    ("lich.rejectAll", {"uri": 1.5}, "field 'uri' must be a string, got float"),
    ("lich.reviewList", {"uri": []}, "field 'uri' must be a string, got list"),
]


def test_every_command_has_a_type_and_a_bad_argument_here() -> None:
    assert list(COMMAND_TYPES) == list(COMMANDS)
    assert {command for command, _, _ in BAD_ARGUMENTS} == set(COMMANDS)


async def test_a_bad_argument_names_the_command_and_the_field(session, client_name: str) -> None:
    client = await session(client_name)
    for command, argument, expected in BAD_ARGUMENTS:
        with pytest.raises(JsonRpcException) as caught:
            # Plain JSON: the client's own types would refuse some of these shapes.
            await client.raw_request(
                "workspace/executeCommand", {"command": command, "arguments": [argument]}
            )
        assert caught.value.code == -32602, command
        message = caught.value.message
        assert message.startswith(f"{command}: "), message
        assert expected in message, (command, message)
        assert "Traceback" not in message and not caught.value.data
    # Nothing ran: a good argument still works, and nothing was reported to the user.
    status = await client.command("lich.status", {})
    assert status["tasks"] == []
    assert client.messages == [] or all("internal error" not in m.message for m in client.messages)


def test_the_schema_on_disk_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "docs/lich-commands.schema.json is stale: run `python -m lich_lsp.contract --schema`"
    )


def test_the_schema_covers_every_command_and_the_generator_writes_it(
    tmp_path: Path, capsys
) -> None:
    schema = command_schema()
    described = schema["properties"]["commands"]["properties"]
    assert list(described) == list(COMMANDS)
    for name in COMMANDS:
        assert set(described[name]["properties"]) == {"params", "result"}
    # lich.ask's result carries the turn (#44).
    assert "turn" in schema["$defs"]["AskResult"]["properties"]
    out = tmp_path / "schema.json"
    assert main(["--schema", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == schema_text()
    assert capsys.readouterr().out.strip() == str(out)
    assert main(["--schema", "--out", "-"]) == 0
    assert json.loads(capsys.readouterr().out) == schema


def test_every_result_is_typed() -> None:
    """No command answers an object the schema leaves open (#44): its clients' types are
    generated from it (editors/vscode/src/protocol.generated.ts)."""
    schema = command_schema()
    for name, described in schema["properties"]["commands"]["properties"].items():
        result = described["properties"]["result"]
        ref = result.get("$ref", "")
        assert ref.startswith("#/$defs/"), (name, result)
        assert schema["$defs"][ref.removeprefix("#/$defs/")]["properties"], name


async def test_status_trust_and_review_answers_fit_their_schema(
    session, root: Path, client_name: str
) -> None:
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text('{"max_turns": 5}', encoding="utf-8")
    client = await session(client_name)
    schema = command_schema()

    def check(command: str, answer: object) -> None:
        described = schema["properties"]["commands"]["properties"][command]
        jsonschema.validate(answer, {**described["properties"]["result"], "$defs": schema["$defs"]})

    check("lich.status", await client.command("lich.status", {}))
    trusted = await client.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted" and trusted["changes"][0]["key"] == "max_turns"
    check("lich.trustWorkspace", trusted)
    check("lich.trustWorkspace", await client.command("lich.trustWorkspace", {"revoke": True}))
    check("lich.reviewList", await client.command("lich.reviewList", {}))
    check("lich.acceptAll", await client.command("lich.acceptAll", {}))
    gone = await client.command("lich.rejectHunk", {"hunk_id": "t9-1"})
    assert gone["ok"] is False and gone["error"].startswith("not_found:")
    check("lich.rejectHunk", gone)
