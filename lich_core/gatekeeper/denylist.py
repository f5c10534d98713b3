"""The terminal git denylist: which shell commands the gatekeeper vetoes.

`git_denylist_match(command)` is a pure function: the pattern a command matches, or None. It
parses the command the way the terminal tool's interactive-program check does (shell words,
`;`/`&&`/`|` separators, wrappers such as `env`, `sudo`, `timeout 5`, `nice`, `xargs`, shells'
`-c STRING`, `eval`, `$(...)` and backticks) and then reads git's own command line: global
options (`-C dir`, `-c key=value`, `--git-dir=...`, `--no-pager`, ...) are skipped to find the
subcommand word.

Patterns (the veto reason is `git_denylist: <pattern>`):

- `commit`, `push`: flag-tolerant, the subcommand word may be spelled `commit`, `-commit` or
  `--commit` (`push`, `-push`, `--push`); also the dashed programs `git-commit`, `git-push`;
- `commit-tree`, `update-ref`: any occurrence anywhere in the command text (plumbing that writes
  commits and refs, however it is reached);
- `reset --hard`;
- history rewriting and commit-creating porcelain: `rebase`, `filter-branch`, `filter-repo`,
  `merge`, `pull`, `cherry-pick`, `revert`, `am`;
- commands that discard uncommitted work: `checkout --`, `checkout .`, `checkout --force`
  (`-f`), `restore` (unless it only restores the index: `--staged`/`-S` without
  `--worktree`/`-W`), `switch --discard-changes` (`-f`, `--force`), `clean` (unless `-n` /
  `--dry-run`), `stash` (anything but `stash list` and `stash show`), `branch --force`
  (`-D`, `-f`, `--force`, `-M`, `-C`);
- indirections to any of the above: `-c alias.NAME=VALUE` and `git config alias.NAME VALUE`
  whose value matches, `git submodule foreach COMMAND` whose command matches.

Best-effort, by design: this is a guard against a model's honest mistakes, not a sandbox. Raw
terminal can still run git (a script file, `git${IFS}push`, an alias already in the repo's
config, `help.autocorrect`, a program that links libgit2, ...). It also errs on the side of
refusing: a heredoc body, and a `$(git push)` inside double quotes, are read as commands. The boundary is a human
reviewing the local repository; pushing is human-only.
"""

from __future__ import annotations

import re
import shlex

# Shared with the terminal tool's interactive-program check, so both read a command the same way.
from lich_core.tools.builtin.terminal import (
    COMMAND_SEPARATORS,
    SHELLS,
    _unwrap,
    shell_command_string,
)

# Found anywhere in the command text, case-insensitively.
ANYWHERE_PATTERNS = ("commit-tree", "update-ref")
# The subcommand word, with any leading dashes removed (`--commit` is `commit`).
FLAG_TOLERANT_SUBCOMMANDS = ("commit", "push")
# Denied whatever their arguments.
DENIED_SUBCOMMANDS = frozenset(
    {"rebase", "filter-branch", "filter-repo", "merge", "pull", "cherry-pick", "revert", "am"}
)
# git's global options (before the subcommand) whose value is the next word.
GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds"}
)
# `bash -c "bash -c '...'"` nests; past this depth a command is not looked into any further.
MAX_NESTING = 8

_SUBSTITUTION_RE = re.compile(r"\$\(")

# The documented table: (pattern, what it covers); docs and tests read it.
DENYLIST_PATTERNS: tuple[tuple[str, str], ...] = (
    ("commit", "git commit / -commit / --commit, git-commit"),
    ("push", "git push / -push / --push, git-push"),
    ("commit-tree", "any occurrence in the command text"),
    ("update-ref", "any occurrence in the command text"),
    ("reset --hard", "git reset with --hard"),
    *((name, f"git {name}") for name in sorted(DENIED_SUBCOMMANDS)),
    ("checkout --", "git checkout with a `--` path separator"),
    ("checkout .", "git checkout of the whole tree"),
    ("checkout --force", "git checkout -f / --force"),
    ("restore", "git restore of the working tree (--staged alone is allowed)"),
    ("switch --discard-changes", "git switch --discard-changes / -f / --force"),
    ("clean", "git clean (-n / --dry-run alone is allowed)"),
    ("stash", "git stash except `stash list` and `stash show`"),
    ("branch --force", "git branch -D / -f / --force / -M / -C"),
)


def git_denylist_match(command: str) -> str | None:
    """The denylist pattern `command` matches (see the module docstring), or None."""
    if not isinstance(command, str) or not command.strip():
        return None
    return _match(command, 0)


def _match(command: str, depth: int) -> str | None:
    lowered = command.lower()
    for needle in ANYWHERE_PATTERNS:
        if needle in lowered:
            return needle
    nested: list[str] = []
    for words in _simple_commands(command):
        found = _match_simple(words, nested, depth)
        if found is not None:
            return found
    nested.extend(_substitutions(command))
    if depth < MAX_NESTING:
        for line in nested:
            found = _match(line, depth + 1)
            if found is not None:
                return found
    return None


def _tokens(command: str) -> list[str]:
    # Unlike the interactive check, every line is read, heredoc bodies included (fail-closed).
    text = command.replace("\r", " ").replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: look at the plain words
        return text.split()


def _simple_commands(command: str) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in _tokens(command):
        if token in COMMAND_SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def _substitutions(command: str) -> list[str]:
    """Command lines inside `$(...)` and backticks, also inside double quotes.

    A `$(` is read up to its matching `)` (the rest of the text when it never closes): reading
    on past it would glue the closing `)"` of `"$(git push)"` to the last word.
    """
    found = [_up_to_closing_paren(command[m.end() :]) for m in _SUBSTITUTION_RE.finditer(command)]
    if "`" in command:
        found.extend(command.split("`")[1::2])
    return found


def _up_to_closing_paren(text: str) -> str:
    depth = 1
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return text[:index]
    return text


def _match_simple(words: list[str], nested: list[str], depth: int) -> str | None:
    """One simple command: git itself, or a shell/eval whose command line is looked into later."""
    program, args, option_commands = _unwrap(words)
    nested.extend(option_commands)
    if program is None:
        return None
    if program in SHELLS:
        string = shell_command_string(args)
        if string is not None:
            nested.append(string)
        return None
    if program == "eval":
        nested.append(" ".join(args))
        return None
    if program == "git":
        return _match_git(args, depth)
    if program.startswith("git-"):  # the dashed form: /usr/lib/git-core/git-commit
        return _match_subcommand(program[len("git-") :], args, depth)
    return None


def _match_git(args: list[str], depth: int) -> str | None:
    """git's arguments: global options, then the subcommand and its arguments."""
    index = 0
    while index < len(args):
        word = args[index]
        if not word.startswith("-") or word == "-":
            return _match_subcommand(word, args[index + 1 :], depth)
        bare = word.lstrip("-")
        if bare in FLAG_TOLERANT_SUBCOMMANDS:
            return bare
        if word in GIT_VALUE_OPTIONS:
            value = args[index + 1] if index + 1 < len(args) else ""
            if word == "-c":
                found = _match_alias_setting(value, depth)
                if found is not None:
                    return found
            index += 2
            continue
        index += 1  # a flag, or an option with its value attached (`--git-dir=.git`)
    return None


def _match_alias_setting(setting: str, depth: int) -> str | None:
    """`alias.NAME=VALUE` (a `-c` option): the pattern its value would run, if any."""
    key, _, value = setting.partition("=")
    if not key.lower().startswith("alias."):
        return None
    return _match_alias_value(value, depth)


def _match_alias_value(value: str, depth: int) -> str | None:
    if depth >= MAX_NESTING:
        return None
    if value.startswith("!"):  # a shell alias
        return _match(value[1:], depth + 1)
    return _match_git(_tokens(value), depth + 1)


def _short_flags(args: list[str]) -> set[str]:
    """Single-letter options given alone or clustered (`-fd` is -f and -d), before any `--`."""
    letters: set[str] = set()
    for word in args:
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--") and len(word) > 1:
            letters.update(word[1:])
    return letters


def _match_subcommand(sub: str, rest: list[str], depth: int) -> str | None:
    bare = sub.lstrip("-")
    if bare in FLAG_TOLERANT_SUBCOMMANDS:
        return bare
    if sub in DENIED_SUBCOMMANDS:
        return sub
    words = set(rest)
    flags = _short_flags(rest)
    if sub == "reset":
        return "reset --hard" if "--hard" in words else None
    if sub == "checkout":
        if "--" in words:
            return "checkout --"
        if "." in words or "./" in words:
            return "checkout ."
        if "--force" in words or "f" in flags:
            return "checkout --force"
        return None
    if sub == "restore":
        staged = "--staged" in words or "S" in flags
        worktree = "--worktree" in words or "W" in flags
        return None if staged and not worktree else "restore"
    if sub == "switch":
        discard = {"--discard-changes", "--force"} & words or "f" in flags
        return "switch --discard-changes" if discard else None
    if sub == "clean":
        return None if "--dry-run" in words or "n" in flags else "clean"
    if sub == "stash":
        action = next((word for word in rest if not word.startswith("-")), None)
        return None if action in ("list", "show") else "stash"
    if sub == "branch":
        forced = "--force" in words or {"D", "f", "M", "C"} & flags
        return "branch --force" if forced else None
    if sub == "config":
        return _match_config_alias(rest, depth)
    if sub == "submodule" and "foreach" in rest:
        line = " ".join(rest[rest.index("foreach") + 1 :])
        return _match(line, depth + 1) if depth < MAX_NESTING else None
    return None


def _match_config_alias(rest: list[str], depth: int) -> str | None:
    """`git config [--global] alias.NAME VALUE`: the pattern VALUE would run, if any."""
    for index, word in enumerate(rest):
        if word.lower().startswith("alias."):
            if "=" in word:  # `git config set alias.x=...` is not git syntax, but be safe
                return _match_alias_setting(word, depth)
            if index + 1 < len(rest):
                return _match_alias_value(rest[index + 1], depth)
    return None

