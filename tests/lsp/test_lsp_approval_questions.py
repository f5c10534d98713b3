"""The approval question says what will run, under each client profile: in an untrusted repository
that ships conftest.py, pyproject.toml and an executable .venv/bin/python, run_tests names the
pytest command line, the user's interpreter (not the repository's) and the files pytest loads;
python_eval names its interpreter. An editor that cannot ask (emacs's profile: no
window/showMessageRequest) gets the same line in the refusal. A real server over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsp_harness import provider_options, tool_messages

from tests.support.untrusted_repo import (
    EVAL_CODE,
    PYTHON_EVAL_QUESTION,
    PYTHON_EVAL_RUNS,
    RUN_TESTS_QUESTION,
    RUN_TESTS_RUNS,
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
    client.editor.message_answers.extend(["Deny", "Allow once"])
    result = await client.command("lich.ask", {"prompt": "test it"})
    assert result["stopped_reason"] == "final", result
    denied_tests, evaluated = tool_messages(fake_provider)
    if client.declared.window is not None and client.declared.window.show_message is not None:
        questions = [request.message for request in client.editor.message_requests]
        assert questions == [RUN_TESTS_QUESTION, PYTHON_EVAL_QUESTION]
        assert json.loads(denied_tests)["error"] == "approval_denied: the user denied run_tests"
        # Allowed, the eval ran in the interpreter the question named.
        assert evaluated == repr(sys.executable)
    else:
        assert client.editor.message_requests == []
        cannot_ask = "needs the user's approval but this editor cannot ask (no window/showMessageRequest support)"
        assert json.loads(denied_tests)["error"] == (
            f"approval_denied: run_tests {cannot_ask}; the call {RUN_TESTS_RUNS}; "
            'allow it with the config key approval.run_tests = "allow"'
        )
        assert json.loads(evaluated)["error"] == (
            f"approval_denied: python_eval {cannot_ask}; the call {PYTHON_EVAL_RUNS}; "
            'allow it with the config key approval.python_eval = "allow"'
        )
    assert nothing_of_the_repo_ran(root)
