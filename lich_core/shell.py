"""Reading a shell command line without running it: its words, the simple commands it starts
(past `|`, `;`, `&&`, newlines), the program each runs looked at through wrappers (`nice`,
`timeout 5`, `sudo -u x`, `env A=1`, ...), the command lines nested in it (a shell's `-c STRING`,
`eval`, wrapper options such as `env -S`, `$(...)`, backticks) and which command words are only
known once the shell runs (`$x`, `$(which git)`).

One reading shared by the terminal tool's refusals, the gatekeeper's git denylist and the trust
rules, so a guard and the tool it guards see the same command. A leaf: it imports nothing from
lich_core.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

# The operators shlex splits off a word (`sh<t5.sh` is `sh`, `<`, `t5.sh`); `punctuation_chars=True`.
OPERATOR_CHARS = "();<>|&"


@dataclass(frozen=True)
class Wrapper:
    """A program that runs another command given on its command line (`nice`, `timeout`, `sudo`, ...)."""

    # Options whose value is the next word (`-u USER`); a value attached (`-n5`, `--user=x`) is one word.
    value_options: frozenset[str] = frozenset()
    # Words between the options and the command: timeout's DURATION, chrt's priority, taskset's mask.
    operands: int = 0
    # Options whose value is itself a command line (`env -S`, `su -c`, `flock -c`, `script -c`).
    command_options: frozenset[str] = frozenset()
    # Options that make the wrapper only look the name up (`command -v vim` runs nothing).
    lookup_options: frozenset[str] = frozenset()
    # False when the operands are not a command at all (`su USER`, `script FILE`).
    runs_operand: bool = True


def _wrapper(
    value: str = "",
    operands: int = 0,
    command: str = "",
    lookup: str = "",
    runs_operand: bool = True,
) -> Wrapper:
    return Wrapper(
        frozenset(value.split()),
        operands,
        frozenset(command.split()),
        frozenset(lookup.split()),
        runs_operand,
    )


# kli's wrappers (env, command, exec, time, sudo, doas) plus the other common "run this" prefixes.
WRAPPERS: Mapping[str, Wrapper] = {
    "env": _wrapper("-u --unset -C --chdir", command="-S --split-string"),
    "command": _wrapper(lookup="-v -V"),
    "exec": _wrapper("-a"),
    "time": _wrapper("-f --format -o --output"),
    "sudo": _wrapper(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role -t --type "
        "-T --command-timeout -U --other-user"
    ),
    "doas": _wrapper("-u -C"),
    "nice": _wrapper("-n --adjustment"),
    "nohup": _wrapper(),
    "setsid": _wrapper(),
    "stdbuf": _wrapper("-i -o -e --input --output --error"),
    "ionice": _wrapper("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "chrt": _wrapper("-T --sched-runtime -P --sched-period -D --sched-deadline", operands=1),
    "timeout": _wrapper("-s --signal -k --kill-after", operands=1),
    "xargs": _wrapper(
        "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars --process-slot-var"
    ),
    "taskset": _wrapper(operands=1),
    "flock": _wrapper(
        "-w --wait --timeout -E --conflict-exit-code", operands=1, command="-c --command"
    ),
    "su": _wrapper(
        "-s --shell -g --group -G --supp-group", command="-c --command", runs_operand=False
    ),
    "runuser": _wrapper("-u --user -s --shell -g --group -G --supp-group", command="-c --command"),
    "script": _wrapper(
        "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format",
        command="-c --command",
        runs_operand=False,
    ),
    "busybox": _wrapper(),
    "unbuffer": _wrapper(),
}
# Shells whose `-c STRING` is a command line to look into.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish"})
SHELL_OPTIONS_WITH_VALUE = frozenset({"--rcfile", "--init-file"})
# bash -c "bash -c '...'" nests; past this depth the command is run unchecked.
MAX_NESTING = 8
# Shell words that may precede a command without being one.
SHELL_PREFIX_WORDS = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until", "fi", "done"}
)
# shlex (punctuation_chars) yields these as separate tokens; each starts a new simple command.
COMMAND_SEPARATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "|&", "(", ")", ";&", ";;&"})
REDIRECTIONS = frozenset({">", ">>", "<", "<<", "<<<", "<>", ">|", "&>", "&>>", ">&", "<&"})
ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")


# --- reading a command line: substitutions, simple commands, command words ---

# Characters shlex would split on or strip inside a substitution, `${...}` or process
# substitution; they are moved to a private-use plane so the substitution stays inside its word
# (`echo $(date) $HOME` is one command, `$(which git) commit` has one command word).
_SHIELDED_CHARS = " \t\n\r'\"();<>|&\\#/"
_SHIELD_OFFSET = 0xF0000
_SHIELD = {ord(char): _SHIELD_OFFSET + ord(char) for char in _SHIELDED_CHARS}
_UNSHIELD = {value: key for key, value in _SHIELD.items()}
# Marks a word whose value is not known before the shell runs it.
EXPANSION_CHARS = ("$", "`")


def _closing(text: str, index: int, close: str) -> int:
    """Index of the `close` (`)`, `}` or a backtick) that ends the construct whose body starts at
    `index`, skipping quoted text and nested substitutions; len(text) when it never closes."""
    depth = 0
    quote = ""
    while index < len(text):
        char = text[index]
        if quote == "'":
            if char == "'":
                quote = ""
        elif char == "\\":
            index += 1
        elif close == "`":
            if char == "`":
                return index
        elif char == "$" and text.startswith("(", index + 1):
            index = _closing(text, index + 2, ")")
        elif char == "$" and text.startswith("{", index + 1):
            index = _closing(text, index + 2, "}")
        elif char == "`":
            index = _closing(text, index + 1, "`")
        elif quote == '"':
            if char == '"':
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "(" and close == ")":
            depth += 1
        elif char == close:
            if depth == 0:
                return index
            depth -= 1
        index += 1
    return len(text)


def shield_substitutions(command: str) -> tuple[str, list[str]]:
    """(the command with every substitution kept inside its word, the command lines they run).

    `$(...)`, backticks, `<(...)`/`>(...)` and `${...}` (its inner substitutions are collected)
    are found outside single quotes, also inside double quotes; `$((...))` is arithmetic, not a
    command. `unshield` gives a shielded word's text back.
    """
    text = command.replace("\x00", "")
    out: list[str] = []
    bodies: list[str] = []
    index = 0
    quote = ""
    while index < len(text):
        char = text[index]
        if quote == "'":
            quote = "" if char == "'" else quote
            out.append(char)
            index += 1
            continue
        if char == "\\":
            out.append(text[index : index + 2])
            index += 2
            continue
        following = text[index + 1 : index + 2]
        end = -1
        if following == "(" and (char == "$" or (char in "<>" and not quote)):
            end = _closing(text, index + 2, ")")
            if not text.startswith("$((", index):
                bodies.append(text[index + 2 : end])
        elif char == "$" and following == "{":
            end = _closing(text, index + 2, "}")
            bodies.extend(shield_substitutions(text[index + 2 : end])[1])
        elif char == "`":
            end = _closing(text, index + 1, "`")
            bodies.append(text[index + 1 : end])
        if end >= 0:
            out.append(text[index : end + 1].translate(_SHIELD))
            index = end + 1
            continue
        if char == '"':
            quote = "" if quote == '"' else '"'
        elif char == "'" and not quote:
            quote = "'"
        out.append(char)
        index += 1
    return "".join(out), bodies


def unshield(word: str) -> str:
    """A word of a shielded command line as it was written."""
    return word.translate(_UNSHIELD)


def split_words(text: str) -> list[str]:
    """Shell words and operators (`;`, `&&`, `|`, `(`, ...) of a command line, operators split off
    a word they are glued to; a substitution stays one word only in a shielded line."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=OPERATOR_CHARS)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: bash will reject it anyway; check the plain words
        return text.split()


def _tokens(command: str, *, read_heredocs: bool = False) -> tuple[list[str], list[str]]:
    """(the shielded words and operators of `command`, the command lines of its substitutions)."""
    # A heredoc body is data, not commands: analyse only up to its first line (the denylist
    # reads on, failing closed).
    text = command.split("\n", 1)[0] if "<<" in command and not read_heredocs else command
    shielded, bodies = shield_substitutions(text.replace("\r", " "))
    # Newlines separate commands; inside quotes the replacement stays part of one word.
    return split_words(shielded.replace("\n", " ; ")), bodies


def _segments(tokens: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in COMMAND_SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def _unwrap_word(words: list[str]) -> tuple[str | None, list[str], list[str]]:
    """(the command word as written, its arguments, command lines given to wrapper options)."""
    index = 0
    spec: Wrapper | None = None
    operands_left = 0
    nested: list[str] = []
    while index < len(words):
        word = words[index]
        if word in REDIRECTIONS:
            index += 2  # the operator and its target
            continue
        if ASSIGNMENT_RE.match(word) or word in SHELL_PREFIX_WORDS:
            index += 1
            continue
        if spec is not None and word.startswith("-") and word != "-":
            option, has_value, value = word.partition("=")
            if word in spec.lookup_options:
                return None, [], nested
            if (
                not word.startswith("--")
                and len(word) > 2
                and f"-{word[-1]}" in spec.command_options
            ):
                option = f"-{word[-1]}"  # a cluster ending in the option: `script -qc CMD`
            if option in spec.command_options:
                if has_value:
                    nested.append(value)
                elif index + 1 < len(words):
                    nested.append(words[index + 1])
                index += 1 if has_value else 2
                continue
            index += 2 if word in spec.value_options else 1
            continue
        if spec is not None and operands_left > 0:
            operands_left -= 1
            index += 1
            continue
        if spec is not None and not spec.runs_operand:
            index += 1  # `su USER`, `script FILE`: not a command
            continue
        name = os.path.basename(word)
        if name in WRAPPERS:
            spec = WRAPPERS[name]
            operands_left = spec.operands
            index += 1
            continue
        return word, words[index + 1 :], nested
    return None, [], nested


def shell_command_string(args: list[str]) -> str | None:
    """The command line a shell runs for these arguments (`-c STRING`, `-lc STRING`), if any."""
    index = 0
    has_c = False
    while index < len(args):
        word = args[index]
        if word in ("--", "-"):
            index += 1
            break
        if word.startswith("--"):
            index += 2 if word in SHELL_OPTIONS_WITH_VALUE else 1
            continue
        if word[:1] in ("-", "+") and len(word) > 1:
            letters = word[1:]
            has_c = has_c or (word[0] == "-" and "c" in letters)
            # -o NAME / -O NAME (bash, zsh): the option's name is the next word.
            index += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    return args[index] if has_c and index < len(args) else None


@dataclass(frozen=True)
class SimpleCommand:
    """One program a command line starts, found past wrappers and inside nested command lines."""

    word: str  # the command word as written: `vim`, `/usr/bin/git`, `$x`, `$(which git)`
    program: str  # its file name: `vim`, `git` (for a dynamic word, the written text)
    args: tuple[str, ...]  # as written (substitutions in them are text again)
    dynamic: bool  # the file name comes from a variable, a substitution or backticks


def simple_commands(
    command: str, *, read_heredocs: bool = False, depth: int = 0
) -> tuple[SimpleCommand, ...]:
    """Every program `command` starts, in order: each simple command of the line (after `|`, `;`,
    `&&`, `(`, newlines), looked at through wrappers, and the command lines inside it (a shell's
    `-c STRING`, `eval ARGS`, wrapper options such as `env -S STRING`, `$(...)`, backticks),
    nested up to MAX_NESTING levels.
    """
    # Without a heredoc both readings are the same, and share the cache.
    return _simple_commands(command, read_heredocs and "<<" in command, depth)


# The refusals and the gatekeeper's denylist read the same command one after the other.
@functools.lru_cache(maxsize=8)
def _simple_commands(command: str, read_heredocs: bool, depth: int) -> tuple[SimpleCommand, ...]:
    tokens, bodies = _tokens(command, read_heredocs=read_heredocs)
    found: list[SimpleCommand] = []
    nested: list[str] = []
    for segment in _segments(tokens):
        word, args, options = _unwrap_word(segment)
        nested.extend(unshield(line) for line in options)
        if word is None:
            continue
        # The file name is read on the shielded word: `/` inside a substitution is not a path.
        name = os.path.basename(word)
        dynamic = any(char in name for char in EXPANSION_CHARS)
        program = unshield(name)
        texts = tuple(unshield(arg) for arg in args)
        found.append(SimpleCommand(unshield(word), program, texts, dynamic))
        if program in SHELLS:
            string = shell_command_string(list(texts))
            if string is not None:
                nested.append(string)
        elif program == "eval":
            nested.append(" ".join(texts))
    nested.extend(bodies)
    if depth < MAX_NESTING:
        for line in nested:
            found.extend(_simple_commands(line, read_heredocs and "<<" in line, depth + 1))
    return tuple(found)


def dynamic_command_word(command: str) -> str | None:
    """The first command word whose program is not written out (`$x`, `${EDITOR:-vi}`,
    `$(which git)`, backticks; `"$VENV/bin/python"` names `python` and is fine), or None."""
    for simple in simple_commands(command):
        if simple.dynamic:
            return simple.word
    return None
