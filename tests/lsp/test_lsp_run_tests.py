"""lich.runTests on the wire, under each client profile: a real pytest project's failing test is a
`textDocument/publishDiagnostics` entry on the failing line (in the client's position encoding),
and the next green run clears it. The behaviours around it are tested in-process
(test_session_run_tests.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import uri_of
from test_session_run_tests import FAILING_LINE, FIXED_ADD, make_project

from lich_lsp.run_tests import TEST_DIAGNOSTIC_SOURCE

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


async def test_failing_test_diagnostic_lands_on_its_line_and_clears(
    session, root: Path, client_name: str
) -> None:
    test_file = make_project(root)
    uri = uri_of(test_file)
    client = await session(client_name)
    assert "lich.runTests" in client.init_result.capabilities.execute_command_provider.commands

    red = await client.command("lich.runTests", {})
    assert red["ok"] is False and red["failed"] == 1
    await client.wait_until(
        lambda: bool(client.diagnostics.get(uri)), what="the failing test's diagnostic"
    )
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.source == TEST_DIAGNOSTIC_SOURCE
    assert diagnostic.range.start.line == FAILING_LINE - 1 == red["failures"][0]["line"]

    (root / "calc.py").write_text(FIXED_ADD)
    green = await client.command("lich.runTests", {})
    assert green["ok"] is True, green
    await client.wait_until(
        lambda: uri in client.diagnostics and len(client.diagnostics[uri]) == 0,
        what="the diagnostic to clear",
    )
