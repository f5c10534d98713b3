"""The approval question says what will run, under each client profile: in an untrusted repository
that ships conftest.py, pyproject.toml and an executable .venv/bin/python, run_tests names the
pytest command line, the user's interpreter (not the repository's) and the files pytest loads;
python_eval names its interpreter. An editor that cannot ask (emacs's profile: no
window/showMessageRequest) gets the same question as a pending-question diagnostic. A real server over stdio."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from lsp_harness import COMMAND_WAIT_S, bounded, provider_options, tool_messages
from test_lsp_pending_questions import answer_pending

from tests.support.untrusted_repo import (
    EVAL_CODE,
    PYTHON_EVAL_QUESTION,
    RUN_TESTS_QUESTION,
    make_untrusted_repo,
    nothing_of_the_repo_ran,
)

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


async def test_each_question_names_the_command_and_the_interpreter(
    session, root: Path, fake_provider, client_name: str
) -> None:
    make_untrusted_repo(root)
    fake_provider.script(
        {"tool_calls": [{"name": "run_tests", "arguments": {}}]},
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": EVAL_CODE}}]},
        {"text": "done"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    if client.declared.window is not None and client.declared.window.show_message is not None:
        client.editor.message_answers.extend(["Deny", "Allow once"])
        result = await client.command("lich.ask", {"prompt": "test it"})
        questions = [request.message for request in client.editor.message_requests]
    else:
        # The questions are diagnostics on an open file, answered by their code actions.
        uri = client.open(root / "notes.txt", "notes\n")
        asking = asyncio.ensure_future(client.command("lich.ask", {"prompt": "test it"}))
        seen: set[str] = set()
        questions = [
            await answer_pending(client, uri, "Deny", seen),
            await answer_pending(client, uri, "Allow once", seen),
        ]
        result = await bounded(asking, COMMAND_WAIT_S, "lich.ask")
        assert client.editor.message_requests == []
        questions = [question.split(" Answer with a code action: ")[0] for question in questions]
    assert result["stopped_reason"] == "final", result
    denied_tests, evaluated = tool_messages(fake_provider)
    assert questions == [RUN_TESTS_QUESTION, PYTHON_EVAL_QUESTION]
    assert json.loads(denied_tests)["error"] == "approval_denied: the user denied run_tests"
    # Allowed, the eval ran in the interpreter the question named.
    assert evaluated == repr(sys.executable)
    assert nothing_of_the_repo_ran(root)
