"""terminal: a command word that is not written out (`$x`, `$(...)`, backticks, `${...}`) is refused
before anything runs, for every caller: which program it names is only known once the shell runs,
so it cannot be vetted for interactive programs (`x=vim; $x` would wait for a terminal until the
timeout). Variables and substitutions in arguments, and in a program's directory, still run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lich_core.tools.builtin.terminal import TOOL, dynamic_command_word, dynamic_refusal
from lich_core.tools.types import ToolContext

# Far below the 20 s the refused commands would wait for a terminal: a hang guard, not a speed target.
REFUSED_LONG_BEFORE_S = 10.0


def make_ctx(work_dir: Path) -> ToolContext:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work_dir)}
    return ToolContext(work_dir=work_dir, env=env)


DYNAMIC_FORMS = [
    ("x=vim; $x", "$x"),
    ("$(echo vim)", "$(echo vim)"),
    ('"$(echo vim)" notes.txt', "$(echo vim)"),
    ("`echo vim`", "`echo vim`"),
    ("${EDITOR:-vi} notes.txt", "${EDITOR:-vi}"),
    ("/usr/bin/$prog", "/usr/bin/$prog"),
    ("$(echo /usr/bin/vim)", "$(echo /usr/bin/vim)"),
    ('set -- vim; "$@"', "$@"),
    # behind wrappers, separators and nested command lines
    ("timeout 20 $x", "$x"),
    ("sudo -u me $x", "$x"),
    ("echo a | $PAGER", "$PAGER"),
    ("true && $x", "$x"),
    ("bash -c '$x'", "$x"),
    ('eval "$cmd"', "$cmd"),
    ("echo $($x)", "$x"),
    ("env -S '$x f'", "$x"),
]


@pytest.mark.parametrize(("form", "word"), DYNAMIC_FORMS)
async def test_a_dynamic_command_word_is_refused_before_anything_runs(
    tmp_path: Path, form: str, word: str
) -> None:
    marker = tmp_path / "ran"
    started = time.monotonic()
    result = await TOOL.execute(
        {"command": f"touch {marker}; {form}", "timeout_ms": 20_000}, make_ctx(tmp_path)
    )
    assert not result.ok and result.error is not None
    assert result.error.startswith(f"dynamic_command: cannot tell which program {word} runs ")
    assert "(nothing was run); name the program directly" in result.error
    assert not marker.exists()
    assert time.monotonic() - started < REFUSED_LONG_BEFORE_S


STATIC_FORMS = [
    ("X=hello; echo $X", "hello"),
    ('echo "$(echo sub)" $HOME', "sub "),
    ("echo $(echo a) $(echo b)", "a b"),
    ("echo `echo tick`", "tick"),
    ("echo $((1 + 2))", "3"),
    ('G=x; echo "${G:-none}"', "x"),
    ("FOO=bar printenv FOO", "bar"),
    ('"$PWD/tool.sh"', "tool ran"),
    ("${PWD}/tool.sh", "tool ran"),
    ("echo '$x is literal'", "$x is literal"),
    ("X=doc; cat <<EOF\n$X here\nEOF", "doc here"),
]


@pytest.mark.parametrize(("command", "expected"), STATIC_FORMS)
async def test_variables_in_arguments_and_directories_still_run(
    tmp_path: Path, command: str, expected: str
) -> None:
    tool = tmp_path / "tool.sh"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    result = await TOOL.execute({"command": command}, make_ctx(tmp_path))
    assert result.ok, result.error
    assert expected in result.output


def test_the_check_names_the_first_dynamic_word() -> None:
    assert dynamic_command_word("ls; $a; $b") == "$a"
    assert dynamic_command_word("echo $a $b") is None
    assert dynamic_command_word("command -v $x") is None  # a lookup, runs nothing
    assert dynamic_refusal("make") is None
