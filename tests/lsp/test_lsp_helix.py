"""Helix over the wire: a real `python -m lich_lsp` initialized with the capabilities Helix
declares (tests/support/clients/helix_*.json, transcribed from Helix's source: no Helix binary
runs here), its languages.toml `config` as initializationOptions, and the requests Helix sends.

Helix offers utf-8, utf-32 and utf-16 positions and takes the server's pick; it declares no
inlineCompletion, so it asks textDocument/completion and applies the item as
helix-term/src/ui/completion.rs does: the TextEdit's range (in the negotiated encoding) replaced by
its newText, plain text unless the item says snippet, kept in the menu only while the word before
the cursor fuzzy-matches its filterText, asked again as the user types when the list is
incomplete. Code actions: Helix runs an action's command with workspace/executeCommand (resolving
first only where the server offers codeAction/resolve) and drops disabled ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_harness import WAIT_S, EditorClient, bounded, edit, offset_at, provider_options, units
from lsprotocol import types
from pygls.protocol import default_converter
from test_lsp_completions import completion_options

from tests.support.client_profiles import (
    HELIX_MASTER,
    HELIX_RELEASE,
    HELIX_VERSIONS,
    client_info,
    client_profile,
    helix_capabilities,
)

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

LANGUAGES_TOML = Path(__file__).resolve().parents[2] / "editors" / "helix" / "languages.toml"
# Before the cursor: é (2 utf-8 units, 1 utf-16) and 🙂 (4 utf-8 units, 2 utf-16, 1 utf-32), so a
# position read in the wrong encoding lands elsewhere on the line.
PREFIX = 's = "héllo 🙂"; x = max(va'
SOURCE = PREFIX + ")\nprint(x)\n"


@pytest.fixture(params=HELIX_VERSIONS)
def helix(request: pytest.FixtureRequest) -> str:
    """A client name whose session declares that Helix version's capabilities (lsp_harness reads
    them from tests/support/clients)."""
    return f"helix@{request.param}"


def helix_config() -> dict[str, Any]:
    """What Helix sends as initializationOptions: editors/helix/languages.toml's lich `config`."""
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11+")
    toml = tomllib.loads(LANGUAGES_TOML.read_text(encoding="utf-8"))
    config: dict[str, Any] = toml["language-server"]["lich"]["config"]
    return config


async def helix_complete(client: EditorClient, uri: str, position: types.Position) -> Any:
    # Helix always sends a context: Invoked, unless a server's trigger character was typed.
    return await bounded(
        client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=position,
                context=types.CompletionContext(trigger_kind=types.CompletionTriggerKind.Invoked),
            )
        ),
        WAIT_S,
        "the completion items",
    )


def helix_filter(text: str, cursor: int) -> str:
    """The menu's filter when it opens: the word characters (chars::char_is_word: alphanumeric
    or "_") before the cursor."""
    start = cursor
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return text[start:cursor]


def helix_keeps(item: types.CompletionItem, typed: str) -> bool:
    """Nucleo's fuzzy match, which drops an item outright: the filter's characters in order in
    the item's filterText (its label without one), ignoring case."""
    rest = iter((item.filter_text or item.label).lower())
    return all(char in rest for char in typed.lower())


def helix_apply(text: str, item: types.CompletionItem, encoding: str) -> str:
    """lsp_item_to_transaction for one cursor: the edit's range converted from the negotiated
    encoding, replaced by newText (Helix would parse it as a snippet if the item said so)."""
    assert item.kind != types.CompletionItemKind.Snippet
    assert item.insert_text_format == types.InsertTextFormat.PlainText
    assert isinstance(item.text_edit, types.TextEdit)
    start = offset_at(text, item.text_edit.range.start, encoding)
    end = offset_at(text, item.text_edit.range.end, encoding)
    return text[:start] + item.text_edit.new_text + text[end:]


def test_the_profiles_are_what_helix_sends() -> None:
    """Each profile loads as lsprotocol InitializeParams and back unchanged, except master's
    `workspace.diagnostic` (helix-lsp-types' name; the spec's is `workspace.diagnostics`)."""
    converter = default_converter()
    for version in HELIX_VERSIONS:
        raw = client_profile("helix", version)["capabilities"]
        back = converter.unstructure(helix_capabilities(version))
        if version == HELIX_MASTER:
            raw["workspace"].pop("diagnostic")
        assert back == raw, version
        assert client_info("helix", version).name == "helix"
        assert back["general"]["positionEncodings"] == ["utf-8", "utf-32", "utf-16"]
        assert "inlineCompletion" not in back["textDocument"]
    release = helix_capabilities(HELIX_RELEASE).window
    master = helix_capabilities(HELIX_MASTER).window
    assert release is not None and release.show_message is None
    assert master is not None and master.show_message is not None


async def test_a_completion_item_as_helix_applies_it(
    session, root: Path, fake_provider, helix: str
) -> None:
    # The model re-types the ")" already after the cursor.
    fake_provider.script({"text": "total)"}, {"text": "total)"})
    options = {**helix_config(), **completion_options(fake_provider)}
    client = await session(helix, init_options=options)
    capabilities = client.init_result.capabilities  # type: ignore[attr-defined]
    assert client.encoding in ("utf-8", "utf-32", "utf-16")
    assert capabilities.completion_provider is not None  # what Helix checks before it asks
    uri = client.open(root / "m.py", SOURCE)
    position = types.Position(line=0, character=units(PREFIX, client.encoding))

    result = await helix_complete(client, uri, position)

    # The server read the position in the encoding it chose: the prompt ends at the cursor.
    assert fake_provider.requests[0]["json"]["prompt"].endswith(PREFIX)
    assert isinstance(result, types.CompletionList) and result.is_incomplete is True
    (item,) = result.items
    assert item.filter_text == "vatotal" and item.label == "vatotal"
    assert item.text_edit is not None and item.text_edit.new_text == "vatotal"
    assert item.text_edit.range.start == types.Position(
        line=0, character=units(PREFIX[: -len("va")], client.encoding)
    )
    assert item.text_edit.range.end == position
    cursor = len(PREFIX)
    assert helix_keeps(item, helix_filter(SOURCE, cursor))
    assert helix_apply(SOURCE, item, client.encoding) == SOURCE.replace("max(va)", "max(vatotal)")

    # isIncomplete: Helix asks again as the user types; the answer still fits the longer word.
    typed = SOURCE.replace("max(va)", "max(vat)")
    client.type_text(uri, typed)
    after = types.Position(line=0, character=position.character + 1)
    (again,) = (await helix_complete(client, uri, after)).items
    assert helix_keeps(again, helix_filter(typed, cursor + 1))
    assert helix_apply(typed, again, client.encoding) == SOURCE.replace("max(va)", "max(vatotal)")


async def test_an_identifier_with_non_ascii_letters_keeps_its_item(
    session, root: Path, fake_provider, helix: str
) -> None:
    fake_provider.script({"text": "lue"})
    client = await session(
        helix, init_options={**helix_config(), **completion_options(fake_provider)}
    )
    text = "naïve_va\n"
    uri = client.open(root / "n.py", text)
    position = types.Position(line=0, character=units("naïve_va", client.encoding))
    (item,) = (await helix_complete(client, uri, position)).items
    assert helix_apply(text, item, client.encoding) == "naïve_value\n"
    assert helix_keeps(item, helix_filter(text, len("naïve_va")))


async def helix_code_actions(
    client: EditorClient, uri: str, at: types.Range
) -> dict[str, types.CodeAction]:
    """Helix's `space a`: every action for the selection (context with the diagnostics under it,
    triggerKind Invoked), disabled ones dropped."""
    actions = await bounded(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=at,
                context=types.CodeActionContext(
                    diagnostics=[], trigger_kind=types.CodeActionTriggerKind.Invoked
                ),
            )
        ),
        WAIT_S,
        "the code actions",
    )
    found = {}
    for action in actions or []:
        assert isinstance(action, types.CodeAction)  # Helix declares code action literals
        if action.disabled is None:
            found[action.title] = action
    return found


async def helix_run(client: EditorClient, action: types.CodeAction) -> Any:
    """Helix's Action::lsp: no codeAction/resolve unless the server offers it, the edit applied,
    then the command sent back as workspace/executeCommand."""
    provider = client.init_result.capabilities.code_action_provider  # type: ignore[attr-defined]
    assert not getattr(provider, "resolve_provider", False)
    assert action.edit is None and action.command is not None
    return await client.command(action.command.command, (action.command.arguments or [None])[0])


async def test_a_configured_code_action_edits_the_buffer(
    session, root: Path, fake_provider, helix: str
) -> None:
    """languages.toml's `code_actions` entry: its prompt goes to the model, the edit arrives as
    workspace/applyEdit (documentChanges) in the open buffer (edit_mode "apply")."""
    (root / "f.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("f.py", "def f():\n", 'def f():\n    """One."""\n')]},
        {"text": "Added a docstring."},
    )
    client = await session(
        helix, init_options={**helix_config(), **provider_options(fake_provider)}
    )
    uri = client.open(root / "f.py")
    whole = types.Range(start=types.Position(0, 0), end=types.Position(1, len("    return 1")))

    actions = await helix_code_actions(client, uri, whole)
    docstrings = actions["lich: add docstrings"]
    assert docstrings.kind == "refactor.rewrite.lich"
    result = await helix_run(client, docstrings)

    assert result["stopped_reason"] == "final" and result["edited"] == [uri], result
    assert client.text(uri) == 'def f():\n    """One."""\n    return 1\n'
    (applied,) = client.editor.applied
    assert applied.edit.document_changes is not None  # Helix declares documentChanges
    assert "Add docstrings to the selected code" in str(fake_provider.requests[0]["json"])


async def test_quick_prompts_as_each_helix_offers_them(
    session, root: Path, fake_provider, helix: str
) -> None:
    """Helix 25.07.1 declares no window.showMessage: one "Ask agent: <prompt>" action per quick
    prompt. Master answers window/showMessageRequest with a picker: one "Ask agent…" whose
    command offers the quick prompts there."""
    fake_provider.script({"text": "It returns 1."})
    client = await session(
        helix, init_options={**helix_config(), **provider_options(fake_provider)}
    )
    uri = client.open(root / "g.py", "def g():\n    return 1\n")
    line = types.Range(start=types.Position(1, 0), end=types.Position(1, len("    return 1")))
    prompts = helix_config()["quick_prompts"]

    actions = await helix_code_actions(client, uri, line)
    asks = [title for title in actions if title.startswith("Ask agent")]
    if helix == f"helix@{HELIX_RELEASE}":
        assert asks == [f"Ask agent: {prompt}" for prompt in prompts]
        result = await helix_run(client, actions[f"Ask agent: {prompts[0]}"])
        assert client.editor.message_requests == []
    else:
        assert asks == ["Ask agent…"]
        client.editor.message_answers = [prompts[0]]
        result = await helix_run(client, actions["Ask agent…"])
        (asked,) = client.editor.message_requests
        assert [item.title for item in asked.actions or []] == prompts

    assert result["stopped_reason"] == "final" and result["final"] == "It returns 1."
    assert prompts[0] in str(fake_provider.requests[0]["json"]["messages"])
