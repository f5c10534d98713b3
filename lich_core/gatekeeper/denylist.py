"""The terminal git denylist: which shell commands the gatekeeper vetoes in an agent run.

`git_denylist_hit(command)` is a pure function: what a command matches (a documented pattern and
a detail for the model), or None; `git_denylist_match(command)` is the text the veto reason
carries after `git_denylist: `. The command is read the way the terminal tool reads it for its
own refusals (`lich_core.shell.simple_commands`: separators, wrappers such as
`env`, `sudo`, `timeout 5`, `xargs`, shells' `-c STRING`, `eval`, `$(...)`, backticks), then
git's own command line: global options (`-C dir`, `-c key=value`, `--git-dir=...`, ...) are
skipped to find the subcommand word, which is judged by what it is:

- a git command that neither publishes nor loses history or uncommitted work (`status`, `diff`,
  `log`, `add`, `fetch`, `tag`, ...): allowed;
- a git command with argument rules (`reset`, `checkout`, `stash`, `gc`, `reflog`, ...): allowed
  unless the arguments make it move a branch, discard work or expire history;
- a command that publishes, creates commits or rewrites history (`push`, `send-pack`, `merge`,
  `rebase`, `read-tree`, ...): refused;
- anything else, and anything not written out, is refused as `cannot tell which git command
  runs`: an alias (the repository's own, or `-c alias.x=...`), an external `git-NAME`, plumbing
  this guard does not vet, a subcommand or global option from a variable (`git $x`), a
  substitution in the arguments of a command with argument rules. So is a program word that is
  not written out (`$g commit`, `"$(which git)" commit`): `cannot tell which program runs`.

The patterns are the DENYLIST_PATTERNS table (docs/tools.md prints it). Best-effort, by design:
this is a guard against a model's honest mistakes, not a sandbox. Raw terminal can still run git
(a script or hook file it writes, `git${IFS}push`, a program that links libgit2, ...). It errs on
the side of refusing: heredoc bodies, and substitutions even inside single quotes, are read as
commands. The boundary is a human reviewing the local repository; pushing is human-only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

# Shared with the terminal tool's refusals, so the guard and the tool read a command the same way.
from lich_core.shell import (
    EXPANSION_CHARS,
    dynamic_command_word,
    simple_commands,
    split_words,
)

# --- patterns (the veto reason is `git_denylist: <pattern>`, plus a detail for some) ---

CANNOT_TELL_GIT = "cannot tell which git command runs"
CANNOT_TELL_PROGRAM = "cannot tell which program runs"
CONFIG_SETTING = "config setting"
GIT_ENVIRONMENT = "git environment"

# Found anywhere in the command text, case-insensitively.
ANYWHERE_PATTERNS = ("commit-tree", "update-ref")
# The subcommand word, with any leading dashes removed (`--commit` is `commit`).
FLAG_TOLERANT_SUBCOMMANDS = ("commit", "push")
# Denied whatever their arguments: they publish, create commits, rewrite history or overwrite
# the index or the working tree wholesale.
DENIED_SUBCOMMANDS: dict[str, str] = {
    "am": "applies mailed patches as commits",
    "archimport": "imports commits",
    "checkout-index": "overwrites working-tree files from the index",
    "cherry-pick": "creates commits",
    "cvsexportcommit": "publishes commits",
    "cvsimport": "imports commits",
    "cvsserver": "serves pushes",
    "fast-import": "writes commits and refs",
    "filter-branch": "rewrites history",
    "filter-repo": "rewrites history",
    "http-push": "publishes refs",
    "imap-send": "publishes patches",
    "merge": "creates commits",
    "p4": "bridges to Perforce (submit publishes)",
    "prune": "deletes unreachable objects",
    "pull": "creates commits",
    "quiltimport": "creates commits",
    "read-tree": "replaces the index (with -u, the working tree)",
    "rebase": "rewrites history",
    "receive-pack": "updates another repository's refs",
    "replay": "rewrites history",
    "revert": "creates commits",
    "send-email": "publishes patches",
    "send-pack": "publishes refs",
    "svn": "bridges to Subversion (dcommit publishes)",
}
# Known git commands that neither publish nor lose history or uncommitted work, whatever their
# arguments (checked commands are in _CHECKS below; anything else is unknown).
ALLOWED_SUBCOMMANDS = frozenset(
    """
    add annotate apply archive bisect blame bugreport bundle cat-file check-attr check-ignore
    check-mailmap check-ref-format cherry clone column commit-graph count-objects credential
    credential-cache credential-store daemon describe diagnose diff diff-files diff-index diff-tree
    difftool fast-export fetch-pack fmt-merge-msg for-each-ref format-patch fsck fsck-objects
    get-tar-commit-id grep hash-object help http-backend index-pack init init-db instaweb
    interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge-base
    merge-file merge-tree mergetool mktag mktree multi-pack-index name-rev pack-objects
    pack-redundant pack-refs patch-id prune-packed range-diff remote request-pull rerere rev-list
    rev-parse shortlog show show-branch show-index show-ref sparse-checkout stage status stripspace
    tag unpack-file unpack-objects update-server-info upload-archive upload-pack var verify-commit
    verify-pack verify-tag version whatchanged write-tree
    """.split()
)
# git's global options (before the subcommand) whose value is the next word.
GIT_VALUE_OPTIONS = frozenset(
    {
        "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
        "--list-cmds", "--attr-source",
    }
)  # fmt: skip
# Settings whose value is a program git runs (so `git status` could run anything) or that
# expire history; matched on the lowercased key.
RISKY_CONFIG_KEYS = (
    "core.pager", "pager.*", "core.editor", "sequence.editor", "core.sshcommand", "core.hookspath",
    "core.fsmonitor", "core.askpass", "core.gitproxy", "core.alternaterefscommand", "diff.external",
    "diff.*.textconv", "diff.*.command", "filter.*", "merge.*.driver", "mergetool.*.cmd",
    "difftool.*.cmd", "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program",
    "uploadpack.packobjectshook", "remote.*.receivepack", "remote.*.uploadpack", "remote.*.vcs",
    "protocol.*.allow", "include.path", "includeif.*.path", "interactive.difffilter", "sendemail.*",
    "web.browser", "browser.*.cmd", "man.*.cmd", "gc.pruneexpire", "gc.reflogexpire",
    "gc.reflogexpireunreachable", "gc.worktreepruneexpire", "gc.*.reflogexpire",
    "gc.*.reflogexpireunreachable", "receive.procreceiverefs",
)  # fmt: skip
# Variables that inject git config or a program into every git command that sees them.
_RISKY_VARIABLE_RE = re.compile(
    r"(?<![A-Za-z0-9_])(GIT_CONFIG_PARAMETERS|GIT_CONFIG_COUNT|GIT_CONFIG_(?:KEY|VALUE)_[0-9]+|"
    r"GIT_EXTERNAL_DIFF|GIT_SSH_COMMAND|GIT_SSH|GIT_ASKPASS|GIT_EDITOR|GIT_SEQUENCE_EDITOR|"
    r"GIT_EXEC_PATH|GIT_PROXY_COMMAND)\+?="
)
# `bash -c "bash -c '...'"` nests; past this depth a command is not looked into any further.
MAX_NESTING = 8
# Revisions `git reset REV` may name without moving the branch.
HEAD_NAMES = frozenset({"HEAD", "@"})

_SUBSTITUTION_RE = re.compile(r"\$\(")

# The documented table: (pattern, what it covers); docs and tests read it.
DENYLIST_PATTERNS: tuple[tuple[str, str], ...] = (
    ("commit", "git commit / -commit / --commit, git-commit"),
    ("push", "git push / -push / --push, git-push"),
    ("commit-tree", "any occurrence in the command text"),
    ("update-ref", "any occurrence in the command text"),
    *((name, f"git {name}: {why}") for name, why in sorted(DENIED_SUBCOMMANDS.items())),
    ("reset --hard", "git reset with --hard"),
    ("reset COMMIT", "git reset [--soft|--mixed|--keep|--merge] COMMIT: moves the branch (COMMIT other than HEAD/@ and no paths)"),
    ("checkout --", "git checkout with a `--` path separator"),
    ("checkout .", "git checkout of the whole tree"),
    ("checkout --force", "git checkout -f / --force"),
    ("checkout -B", "git checkout -B: resets an existing branch"),
    ("checkout NAME", "git checkout NAME: NAME may be a path whose changes it overwrites (use git switch)"),
    ("restore", "git restore of the working tree (--staged alone is allowed)"),
    ("switch --discard-changes", "git switch --discard-changes / -f / --force"),
    ("switch -C", "git switch -C / --force-create: resets an existing branch"),
    ("clean", "git clean (-n / --dry-run alone is allowed)"),
    ("stash", "git stash except `stash list` and `stash show`"),
    ("branch --force", "git branch -D / -f / --force / -M / -C"),
    ("rm --force", "git rm -f / --force: removes files with uncommitted changes"),
    ("mv --force", "git mv -f / --force: overwrites the destination"),
    ("gc --prune", "git gc --prune / --prune=DATE"),
    ("repack -a -d", "git repack -a -d (without -A): drops unreachable objects"),
    ("reflog expire", "git reflog expire / delete / drop"),
    ("symbolic-ref", "git symbolic-ref that sets or deletes a ref (reading one is allowed)"),
    ("replace", "git replace that adds or deletes a replacement (-l / --list is allowed)"),
    ("update-index", "git update-index other than --refresh / --really-refresh"),
    ("notes", "git notes except list / show / get-ref"),
    ("fetch --force", "git fetch of a forced refspec (+SRC:DST, or -f / --force with SRC:DST)"),
    ("subtree push", "git subtree push"),
    ("subtree", "git subtree add / merge / pull / split --rejoin (create commits)"),
    ("submodule --force", "git submodule update / deinit -f / --force"),
    ("worktree remove --force", "git worktree remove -f / --force"),
    ("config setting", "-c KEY=VALUE, --config-env or git config KEY VALUE of a setting that runs a program or expires history"),
    ("git environment", "assigning GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY_N/VALUE_N, GIT_EXTERNAL_DIFF, GIT_SSH(_COMMAND), GIT_ASKPASS, GIT_EDITOR, GIT_SEQUENCE_EDITOR, GIT_EXEC_PATH, GIT_PROXY_COMMAND"),
    (CANNOT_TELL_GIT, "an alias (-c alias.*, the repository's), an external git-NAME, plumbing the guard does not vet, a subcommand, global option or checked argument from a variable or a substitution"),
    (CANNOT_TELL_PROGRAM, "a command word from a variable, a substitution or backticks ($g commit, \"$(which git)\" commit)"),
)  # fmt: skip

# What the model can do instead, where a pattern may catch a command it meant harmlessly.
_HINTS = {
    CANNOT_TELL_GIT: "run the git command by its name, with its arguments written out",
    CANNOT_TELL_PROGRAM: "name the program directly (git ..., not a variable or a substitution)",
    "reset COMMIT": "to unstage a path write `git reset -- PATH`",
    "checkout NAME": "to change branches use `git switch NAME`; to unstage, `git restore --staged PATH`",
}


@dataclass(frozen=True)
class DenylistHit:
    """A match: the documented pattern, and what in the command made it (for some patterns)."""

    pattern: str
    detail: str = ""

    @property
    def text(self) -> str:
        """What follows `git_denylist: ` in the veto reason: the pattern, what matched, what to do."""
        text = f"{self.pattern} ({self.detail})" if self.detail else self.pattern
        hint = _HINTS.get(self.pattern)
        return f"{text}; {hint}" if hint else text


def git_denylist_hit(command: str) -> DenylistHit | None:
    """What `command` matches (see the module docstring), or None."""
    if not isinstance(command, str) or not command.strip():
        return None
    found = _match(command, 0)
    if found is not None:
        return found
    # The terminal refuses these for every caller; in an agent run the guard says so first.
    word = dynamic_command_word(command)
    return None if word is None else DenylistHit(CANNOT_TELL_PROGRAM, word)


def git_denylist_match(command: str) -> str | None:
    """The text after `git_denylist: ` in the veto of `command`, or None: the pattern, with the
    detail and a hint when the pattern has one."""
    hit = git_denylist_hit(command)
    return None if hit is None else hit.text


def _dynamic(word: str) -> bool:
    return any(char in word for char in EXPANSION_CHARS)


def _match(command: str, depth: int) -> DenylistHit | None:
    lowered = command.lower()
    for needle in ANYWHERE_PATTERNS:
        if needle in lowered:
            return DenylistHit(needle)
    variable = _RISKY_VARIABLE_RE.search(command)
    if variable is not None:
        return DenylistHit(GIT_ENVIRONMENT, variable.group(1))
    # Every line is read, heredoc bodies included (fail-closed).
    for simple in simple_commands(command, read_heredocs=True, depth=depth):
        found = _match_program(simple.program, list(simple.args), depth)
        if found is not None:
            return found
    if depth < MAX_NESTING:
        for line in _quoted_substitutions(command):
            found = _match(line, depth + 1)
            if found is not None:
                return found
    return None


def _quoted_substitutions(command: str) -> list[str]:
    """Command lines inside `$(...)` and backticks anywhere, single quotes included (fail-closed).

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


def _match_program(program: str, args: list[str], depth: int) -> DenylistHit | None:
    if program == "git":
        return _match_git(args, depth)
    if program.startswith("git-"):  # the dashed form: /usr/lib/git-core/git-commit
        return _match_subcommand(program[len("git-") :], args, depth)
    return None


def _match_git(args: list[str], depth: int) -> DenylistHit | None:
    """git's arguments: global options, then the subcommand and its arguments."""
    index = 0
    while index < len(args):
        word = args[index]
        if _dynamic(word):
            return DenylistHit(
                CANNOT_TELL_GIT, f"git {word} comes from a variable or a substitution"
            )
        if not word.startswith("-") or word == "-":
            return _match_subcommand(word, args[index + 1 :], depth)
        bare = word.lstrip("-")
        if bare in FLAG_TOLERANT_SUBCOMMANDS:
            return DenylistHit(bare)
        option, attached, value = word.partition("=")
        if option in GIT_VALUE_OPTIONS and not attached:
            value = args[index + 1] if index + 1 < len(args) else ""
            index += 2
        else:
            index += 1  # a flag, or an option with its value attached (`--git-dir=.git`)
        if option in ("-c", "--config-env"):
            found = _match_setting(option, value, depth)
            if found is not None:
                return found
    return None


def _match_setting(option: str, setting: str, depth: int) -> DenylistHit | None:
    """`-c KEY=VALUE` or `--config-env KEY=VARIABLE`, given before the subcommand."""
    if _dynamic(setting):
        return DenylistHit(
            CANNOT_TELL_GIT, f"{option} {setting} comes from a variable or a substitution"
        )
    key, _, value = setting.partition("=")
    if key.lower().startswith("alias."):
        # A value that matches a pattern names it; any other alias is still not a git command.
        found = _match_alias_value(value, depth) if option == "-c" else None
        return found or DenylistHit(CANNOT_TELL_GIT, f"{option} {key} defines an alias")
    if _risky_key(key):
        return DenylistHit(CONFIG_SETTING, key)
    return None


def _risky_key(key: str) -> bool:
    lowered = key.lower()
    return any(fnmatchcase(lowered, pattern) for pattern in RISKY_CONFIG_KEYS)


def _match_alias_value(value: str, depth: int) -> DenylistHit | None:
    if depth >= MAX_NESTING:
        return None
    if value.startswith("!"):  # a shell alias
        return _match(value[1:], depth + 1)
    return _match_git(split_words(value), depth + 1)


# --- subcommands with argument rules ---


def _short_flags(args: list[str]) -> set[str]:
    """Single-letter options given alone or clustered (`-fd` is -f and -d), before any `--`."""
    letters: set[str] = set()
    for word in args:
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--") and len(word) > 1:
            letters.update(word[1:])
    return letters


def _operands(args: list[str], value_options: frozenset[str] = frozenset()) -> list[str]:
    """The non-option words before any `--` (an option in `value_options` takes the next word)."""
    found: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            break
        if word.startswith("-") and word != "-":
            index += 2 if word in value_options else 1
            continue
        found.append(word)
        index += 1
    return found


@dataclass(frozen=True)
class _Args:
    """One subcommand's arguments, read the ways its rules need."""

    rest: list[str]

    @property
    def words(self) -> set[str]:
        return set(self.rest)

    @property
    def flags(self) -> set[str]:
        return _short_flags(self.rest)

    def has(self, *options: str) -> bool:
        """Any of the options: `--long` words (also `--long=VALUE`) and `-x` short letters."""
        longs = {word.partition("=")[0] for word in self.rest if word.startswith("--")}
        letters = self.flags
        return any(
            option in longs if option.startswith("--") else option[1:] in letters
            for option in options
        )


def _reset(args: _Args) -> str | None:
    if args.has("--hard"):
        return "reset --hard"
    # `git reset REV` moves the branch; with paths (`git reset REV path`, `-- path`) it only
    # unstages them. A single word that is not HEAD may be either, so it counts as a commit.
    operands = _operands(args.rest)
    if "--" in args.rest or len(operands) != 1:
        return None
    return None if operands[0] in HEAD_NAMES else "reset COMMIT"


def _checkout(args: _Args) -> str | None:
    if "--" in args.words:
        return "checkout --"
    if "." in args.words or "./" in args.words:
        return "checkout ."
    if args.has("--force", "-f"):
        return "checkout --force"
    if args.has("-B"):
        return "checkout -B"
    new_branch = args.has("-b", "--orphan")
    operands = _operands(
        args.rest, frozenset({"-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"})
    )
    # `-b NEW [START]` never touches paths; otherwise a name may be a path (git decides by what
    # exists), and checking a path out overwrites its uncommitted changes.
    if new_branch or not operands or operands == ["-"]:
        return None
    return "checkout NAME"


def _restore(args: _Args) -> str | None:
    return None if args.has("--staged", "-S") and not args.has("--worktree", "-W") else "restore"


def _switch(args: _Args) -> str | None:
    if args.has("--discard-changes", "--force", "-f"):
        return "switch --discard-changes"
    return "switch -C" if args.has("-C", "--force-create") else None


def _clean(args: _Args) -> str | None:
    return None if args.has("--dry-run", "-n") else "clean"


def _stash(args: _Args) -> str | None:
    action = next((word for word in args.rest if not word.startswith("-")), None)
    return None if action in ("list", "show") else "stash"


def _branch(args: _Args) -> str | None:
    return "branch --force" if args.has("--force", "-D", "-f", "-M", "-C") else None


def _rm(args: _Args) -> str | None:
    return "rm --force" if args.has("--force", "-f") else None


def _mv(args: _Args) -> str | None:
    return "mv --force" if args.has("--force", "-f") else None


def _gc(args: _Args) -> str | None:
    return "gc --prune" if args.has("--prune") else None


def _repack(args: _Args) -> str | None:
    return "repack -a -d" if args.has("-a") and args.has("-d") and not args.has("-A") else None


def _reflog(args: _Args) -> str | None:
    action = next((word for word in args.rest if not word.startswith("-")), None)
    return "reflog expire" if action in ("expire", "delete", "drop") else None


def _symbolic_ref(args: _Args) -> str | None:
    writes = args.has("--delete", "-d") or len(_operands(args.rest, frozenset({"-m"}))) >= 2
    return "symbolic-ref" if writes else None


def _replace(args: _Args) -> str | None:
    if not args.rest or args.has("--list", "-l"):
        return None
    return "replace"


def _update_index(args: _Args) -> str | None:
    harmless = {
        "--refresh",
        "--really-refresh",
        "-q",
        "--ignore-missing",
        "--unmerged",
        "--ignore-submodules",
    }
    return None if args.rest and set(args.rest) <= harmless else "update-index"


def _notes(args: _Args) -> str | None:
    action = next((word for word in args.rest if not word.startswith("-")), None)
    return None if action in (None, "list", "show", "get-ref") else "notes"


def _fetch(args: _Args) -> str | None:
    refspecs = [word for word in _operands(args.rest) if ":" in word and "://" not in word]
    forced = any(spec.startswith("+") for spec in refspecs) or (
        refspecs and args.has("--force", "-f")
    )
    return "fetch --force" if forced else None


def _subtree(args: _Args) -> str | None:
    action = next((word for word in args.rest if not word.startswith("-")), None)
    if action == "push":
        return "subtree push"
    if action == "split" and not args.has("--rejoin", "--branch", "-b"):
        return None
    return "subtree"


def _submodule(args: _Args) -> str | None:
    return "submodule --force" if args.has("--force", "-f") else None


def _worktree(args: _Args) -> str | None:
    action = next((word for word in args.rest if not word.startswith("-")), None)
    return "worktree remove --force" if action == "remove" and args.has("--force", "-f") else None


_CHECKS = {
    "reset": _reset,
    "checkout": _checkout,
    "restore": _restore,
    "switch": _switch,
    "clean": _clean,
    "stash": _stash,
    "branch": _branch,
    "rm": _rm,
    "mv": _mv,
    "gc": _gc,
    "repack": _repack,
    "reflog": _reflog,
    "symbolic-ref": _symbolic_ref,
    "replace": _replace,
    "update-index": _update_index,
    "notes": _notes,
    "fetch": _fetch,
    "subtree": _subtree,
    "submodule": _submodule,
    "worktree": _worktree,
}


def _match_subcommand(sub: str, rest: list[str], depth: int) -> DenylistHit | None:
    bare = sub.lstrip("-")
    if bare in FLAG_TOLERANT_SUBCOMMANDS:
        return DenylistHit(bare)
    if sub in DENIED_SUBCOMMANDS:
        return DenylistHit(sub)
    if sub in ALLOWED_SUBCOMMANDS:
        return None
    if sub in ("config", "submodule", "for-each-repo", *_CHECKS) and any(
        _dynamic(word) for word in rest
    ):
        return DenylistHit(
            CANNOT_TELL_GIT,
            f"git {sub} {' '.join(rest)} has an argument from a variable or a substitution",
        )
    if sub == "config":
        return _match_config(rest, depth)
    if sub == "submodule" and "foreach" in rest:
        line = " ".join(rest[rest.index("foreach") + 1 :])
        return _match(line, depth + 1) if depth < MAX_NESTING else None
    if sub == "for-each-repo":  # runs `git ARGS` in each repository listed by --config
        return _match_git([word for word in rest if not word.startswith("--config")], depth + 1)
    check = _CHECKS.get(sub)
    if check is not None:
        pattern = check(_Args(rest))
        return None if pattern is None else DenylistHit(pattern)
    if sub == "help" or "--help" in rest or "-h" in rest:
        return None
    return DenylistHit(
        CANNOT_TELL_GIT,
        f"git {sub} is no git command the guard knows: an alias, an external git-{sub} or unvetted plumbing",
    )


def _match_config(rest: list[str], depth: int) -> DenylistHit | None:
    """`git config [--global] KEY VALUE` (or `set KEY VALUE`, `--add KEY VALUE`): an alias whose
    value matches a pattern, or a risky setting given a value."""
    operands = _operands(
        rest, frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"})
    )
    if operands and operands[0] in (
        "set",
        "get",
        "list",
        "unset",
        "rename-section",
        "remove-section",
        "edit",
    ):
        if operands[0] != "set":
            return None
        operands = operands[1:]
    if not operands:
        return None
    key = operands[0]
    if "=" in key and key.lower().startswith("alias."):  # not git syntax, but be safe
        key, _, value = key.partition("=")
        operands = [key, value]
    if len(operands) < 2:
        return None  # reading (or `--unset KEY`)
    if key.lower().startswith("alias."):
        return _match_alias_value(operands[1], depth)
    return DenylistHit(CONFIG_SETTING, key) if _risky_key(key) else None
