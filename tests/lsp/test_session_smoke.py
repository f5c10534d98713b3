"""A first in-process check: the session behind the FakeEditor answers lich.status and edits."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_provider import FakeProviderServer


def provider_options(fake: FakeProviderServer) -> dict:
    return {"providers": [{"name": "fake", "kind": "openai_compat", "base_url": fake.url + "/v1", "model": "fake-model"}]}


async def test_ask_edits_an_open_buffer_in_process(editor, root: Path, client_name: str, fake_provider) -> None:
    (root / "a.py").write_text("x = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}}]},
        {"text": "done"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    uri = fake.open(root / "a.py")
    result = await fake.command("lich.ask", {"prompt": "bump"})
    assert result["stopped_reason"] == "final", result
    assert fake.text(uri) == "x = 2\n"
    status = await fake.command("lich.status", {})
    assert status["tasks"][0]["state"] == "done"
