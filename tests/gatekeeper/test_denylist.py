"""git_denylist_match: a table of commands that match (with the pattern) and commands that do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from lich_core.gatekeeper import DENYLIST_PATTERNS, git_denylist_match
from lich_core.gatekeeper.denylist import CANNOT_TELL_GIT, CANNOT_TELL_PROGRAM, git_denylist_hit

MATCHES = [
    # commit / push, flag-tolerant, behind git's global options
    ("git commit -m 'x'", "commit"),
    ("git commit --amend --no-edit", "commit"),
    ("git -commit", "commit"),
    ("git --commit", "commit"),
    ("git push", "push"),
    ("git -push origin main", "push"),
    ("git --push", "push"),
    ("git push --dry-run", "push"),
    ("git -C sub commit -m x", "commit"),
    ("git -c user.name=x -c user.email=y commit -m x", "commit"),
    ("git --git-dir=.git --work-tree=. push", "push"),
    ("git --git-dir .git push", "push"),
    ("git --no-pager -p commit -am wip", "commit"),
    ("/usr/bin/git push origin HEAD", "push"),
    ("/usr/lib/git-core/git-commit -m x", "commit"),
    ("git-push origin", "push"),
    # anywhere in the text
    ("git commit-tree HEAD^{tree} -m x", "commit-tree"),
    ("git update-ref refs/heads/main HEAD~1", "update-ref"),
    ("echo update-ref", "update-ref"),
    ("python -c 'import os; os.system(\"git commit-tree t\")'", "commit-tree"),
    # other history rewriting and commit-creating porcelain
    ("git reset --hard HEAD~1", "reset --hard"),
    ("git reset -q --hard", "reset --hard"),
    ("git rebase -i HEAD~3", "rebase"),
    ("git rebase --continue", "rebase"),
    ("git filter-branch --tree-filter 'rm x' HEAD", "filter-branch"),
    ("git filter-repo --path x", "filter-repo"),
    ("git merge feature", "merge"),
    ("git pull --rebase", "pull"),
    ("git cherry-pick abc123", "cherry-pick"),
    ("git revert HEAD", "revert"),
    ("git am < patch.mbox", "am"),
    # discarding uncommitted work
    ("git checkout -- src/app.py", "checkout --"),
    ("git checkout HEAD~1 -- src/app.py", "checkout --"),
    ("git checkout .", "checkout ."),
    ("git checkout -f main", "checkout --force"),
    ("git checkout --force main", "checkout --force"),
    ("git restore src/app.py", "restore"),
    ("git restore --worktree --staged src/app.py", "restore"),
    ("git restore -SW src/app.py", "restore"),
    ("git switch --discard-changes main", "switch --discard-changes"),
    ("git switch -f main", "switch --discard-changes"),
    ("git clean -fd", "clean"),
    ("git clean -x -f", "clean"),
    ("git stash", "stash"),
    ("git stash push -m wip", "stash"),
    ("git stash drop", "stash"),
    ("git stash -u", "stash"),
    ("git branch -D feature", "branch --force"),
    ("git branch -f main HEAD~2", "branch --force"),
    # shell structure: separators, wrappers, nested shells, substitutions
    ("git status && git push", "push"),
    ("git status; git commit -m x", "commit"),
    ("git status\ngit commit -m x", "commit"),
    ("cd sub || git push", "push"),
    ("(git push)", "push"),
    ("{ git push; }", "push"),
    ("if true; then git commit -m x; fi", "commit"),
    ("GIT_DIR=.git git commit -m x", "commit"),
    ("env -i PATH=/usr/bin git push", "push"),
    ("sudo -u me git push", "push"),
    ("timeout 5 git push", "push"),
    ("nice -n 5 git commit -m x", "commit"),
    ("command git push", "push"),
    ("exec git push", "push"),
    ("xargs git push < /dev/null", "push"),
    ("bash -c 'git push'", "push"),
    ('sh -lc "cd sub && git commit -m x"', "commit"),
    ("bash -c \"bash -c 'git push'\"", "push"),
    ("eval 'git push'", "push"),
    ("echo $(git push)", "push"),
    ('echo "$(git commit -m x)"', "commit"),
    # The substitution's last word next to the closing `)"` (read up to the matching paren).
    ('echo "$(git push)"', "push"),
    ('x="$(git reset --hard)"', "reset --hard"),
    ('"$(git stash)"', "stash"),
    ('echo "$(date) $(git push origin)"', "push"),
    ("echo `git push`", "push"),
    ("x=$(git -C a commit -m 'y z')", "commit"),
    ("cat <<EOF\nhello\nEOF\ngit push", "push"),
    # indirections
    ("git -c alias.ci=commit ci -m x", "commit"),
    ("git -c 'alias.p=!git push' p", "push"),
    ("git config alias.ci commit", "commit"),
    ("git config --global alias.sync '!git pull && git push'", "pull"),
    ("git submodule foreach git push", "push"),
    ("git submodule foreach 'git reset --hard'", "reset --hard"),
    # issue #31: a bare repository received `git send-pack ../bare.git master`
    ("git send-pack ../bare.git master", "send-pack"),
    ("git http-push https://example.test/repo.git main", "http-push"),
    ("git receive-pack ../bare.git", "receive-pack"),
    ("git send-email --to=x@example.test HEAD~1", "send-email"),
    # history-losing and branch-moving forms
    ("git reset --soft HEAD~1", "reset COMMIT"),
    ("git reset HEAD~1", "reset COMMIT"),
    ("git reset --mixed origin/main", "reset COMMIT"),
    ("git reset --keep abc123", "reset COMMIT"),
    ("git reset -q @~2", "reset COMMIT"),
    ("git checkout -B main origin/main", "checkout -B"),
    ("git checkout -qB topic", "checkout -B"),
    ("git checkout main", "checkout NAME"),
    ("git checkout src/app.py", "checkout NAME"),
    ("git checkout HEAD~1 src/app.py", "checkout NAME"),
    ("git switch -C main", "switch -C"),
    ("git switch --force-create main HEAD~1", "switch -C"),
    ("git subtree push --prefix=lib origin main", "subtree push"),
    ("git subtree add --prefix=lib ../lib main", "subtree"),
    ("git subtree split --prefix=lib --rejoin", "subtree"),
    ("git reflog expire --expire=now --all", "reflog expire"),
    ("git reflog delete HEAD@{1}", "reflog expire"),
    ("git gc --prune=now", "gc --prune"),
    ("git gc --aggressive --prune", "gc --prune"),
    ("git repack -a -d", "repack -a -d"),
    ("git repack -ad", "repack -a -d"),
    ("git prune", "prune"),
    ("git checkout-index -a -f", "checkout-index"),
    ("git checkout-index -f -- src/app.py", "checkout-index"),
    ("git read-tree HEAD", "read-tree"),
    ("git read-tree -u --reset HEAD~1", "read-tree"),
    ("git symbolic-ref HEAD refs/heads/other", "symbolic-ref"),
    ("git symbolic-ref -d HEAD", "symbolic-ref"),
    ("git replace HEAD HEAD~3", "replace"),
    ("git replace -d abc123", "replace"),
    ("git update-index --cacheinfo 100644,abc,src/app.py", "update-index"),
    ("git update-index --skip-worktree src/app.py", "update-index"),
    ("git fast-import < stream", "fast-import"),
    ("git notes add -m x HEAD", "notes"),
    ("git fetch . +HEAD~3:main", "fetch --force"),
    ("git fetch -f origin main:main", "fetch --force"),
    ("git rm -f src/app.py", "rm --force"),
    ("git rm -rf --cached .", "rm --force"),
    ("git mv -f a.py b.py", "mv --force"),
    ("git submodule update --force", "submodule --force"),
    ("git submodule deinit -f lib", "submodule --force"),
    ("git worktree remove --force ../wt", "worktree remove --force"),
    ("git svn dcommit", "svn"),
    ("git for-each-repo --config=maintenance.repo push", "push"),
    # cannot tell which git command runs: aliases, external commands, dynamic words
    ("git -c alias.x='!sh' x", CANNOT_TELL_GIT),
    ("git -c alias.st=status st", CANNOT_TELL_GIT),
    ("git --config-env=alias.x=CMD x", CANNOT_TELL_GIT),
    ("git st", CANNOT_TELL_GIT),
    ("git lfs push origin main", CANNOT_TELL_GIT),
    ("git-foo bar", CANNOT_TELL_GIT),
    ("git hook run pre-push", CANNOT_TELL_GIT),
    ("git merge-recursive HEAD -- a b", CANNOT_TELL_GIT),
    ("git $x", CANNOT_TELL_GIT),
    ("git ${SUB} origin", CANNOT_TELL_GIT),
    ('git "$(echo push)"', CANNOT_TELL_GIT),
    ("git `echo push`", CANNOT_TELL_GIT),
    ("git $opts status", CANNOT_TELL_GIT),
    ("git -c $setting status", CANNOT_TELL_GIT),
    ("git reset $mode HEAD~1", CANNOT_TELL_GIT),
    ("git checkout $branch", CANNOT_TELL_GIT),
    ("git config $key $value", CANNOT_TELL_GIT),
    ("bash -c 'git $x'", CANNOT_TELL_GIT),
    ("$g commit", CANNOT_TELL_PROGRAM),
    ('"$(which git)" commit', CANNOT_TELL_PROGRAM),
    ("$(which git) commit -m x", CANNOT_TELL_PROGRAM),
    ("`which git` push", CANNOT_TELL_PROGRAM),
    ("${GIT:-git} push", CANNOT_TELL_PROGRAM),
    ("g=git; $g push", CANNOT_TELL_PROGRAM),
    ('eval "$cmd"', CANNOT_TELL_PROGRAM),
    ("/usr/bin/$tool commit", CANNOT_TELL_PROGRAM),
    # settings and variables that make any git command run a program or expire history
    ("git -c core.fsmonitor='git push #' status", "config setting"),
    ("git -c core.pager='sh -c x' log", "config setting"),
    ("git -c diff.external=./x diff", "config setting"),
    ("git -c gc.pruneExpire=now gc", "config setting"),
    ("git config core.hooksPath ./hooks", "config setting"),
    ("git config --local filter.x.clean 'git push'", "config setting"),
    ("git config set core.sshCommand 'ssh -i k'", "config setting"),
    ("git config --global include.path ../evil", "config setting"),
    ("GIT_CONFIG_PARAMETERS=\"'alias.x=!git push'\" git x", "git environment"),
    ("export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager; git log", "git environment"),
    ("GIT_EXTERNAL_DIFF=./run git diff", "git environment"),
    ("env GIT_SSH_COMMAND='sh -c x' git fetch", "git environment"),
]

NON_MATCHES = [
    # routine work: neither publishes nor loses history or uncommitted work
    "git log --oneline -5",
    "git diff HEAD~1 -- src",
    "git show --stat",
    "git add -A",
    "git reset",
    "git reset -- src/app.py",
    "git reset -q HEAD",
    "git reset @ src/app.py",
    "git reset HEAD~1 -- src/app.py",
    "git checkout",
    "git checkout -",
    "git checkout -b topic origin/main",
    "git checkout --orphan fresh",
    "git switch -c topic",
    "git blame -L 1,5 src/app.py",
    "git grep -n TODO",
    "git ls-files",
    "git rev-parse --abbrev-ref HEAD",
    "git symbolic-ref --short HEAD",
    "git symbolic-ref HEAD",
    "git replace -l",
    "git reflog",
    "git reflog show main",
    "git gc",
    "git gc --auto",
    "git repack -A -d",
    "git update-index --refresh",
    "git notes show HEAD",
    "git fetch origin main:refs/remotes/origin/main",
    "git fetch --prune",
    "git subtree split --prefix=lib",
    "git worktree add ../wt topic",
    "git worktree remove ../wt",
    "git rm --cached src/app.py",
    "git mv a.py b.py",
    "git submodule update --init",
    "git config --get core.pager",
    "git config core.pager",
    "git config --unset core.pager",
    "git config user.email me@example.test",
    "git -c core.quotepath=off status",
    "git --no-pager log",
    "git -C sub status",
    "git --version",
    "git --exec-path",
    "git",
    "git help reset",
    "git lfs --help",
    "GIT_PAGER=cat git log",
    "GIT_DIR=.git git status",
    'git -C "$dir" status',
    "git log $range",
    "git commit-graph verify",
    # a variable or substitution in an argument is fine; in the program's directory, too
    "echo $(date) $HOME",
    "ls $(pwd)/$x",
    '"$VENV/bin/python" -m pytest',
    "${HOME}/bin/tool --flag",
    "FOO=$x make",
    "cat <<EOF\n$PYTHON run.py\nEOF",
    'echo "$(git log --oneline)"',
    "echo commit",
    "echo git commit",
    "echo 'git push'",
    "printf '%s\\n' push",
    "git log --grep=push",
    "git log --grep push",
    "git log --oneline -- commit.py",
    "git status",
    "git diff --cached",
    "git show HEAD:commit.txt",
    "git add src/app.py",
    "git commit-graph write",
    "git help push",
    "git reset HEAD src/app.py",
    "git reset --soft HEAD",
    "git checkout -b feature",
    "git restore --staged src/app.py",
    "git restore -S src/app.py",
    "git switch main",
    "git clean -n",
    "git clean --dry-run -d",
    "git stash list",
    "git stash show -p",
    "git branch -d merged",
    "git branch --list",
    "git config user.name",
    "git config alias.st status",
    "git merge-base main HEAD",
    "git fetch origin",
    "git remote -v",
    "git tag v1",
    "grep -rn 'git push' docs/",
    "pushd src",
    "commit",
    "ls",
    "",
    "   ",
]


@pytest.mark.parametrize(("command", "pattern"), MATCHES)
def test_matches(command: str, pattern: str) -> None:
    hit = git_denylist_hit(command)
    assert hit is not None and hit.pattern == pattern


@pytest.mark.parametrize("command", NON_MATCHES)
def test_does_not_match(command: str) -> None:
    assert git_denylist_match(command) is None


def test_the_veto_text_says_what_to_do() -> None:
    assert git_denylist_match("git push") == "push"
    assert git_denylist_match("git st") == (
        "cannot tell which git command runs (git st is no git command the guard knows: an alias, an "
        "external git-st or unvetted plumbing); run the git command by its name, with its arguments written out"
    )
    assert git_denylist_match("$g commit") == (
        "cannot tell which program runs ($g); name the program directly (git ..., not a variable or a substitution)"
    )
    assert (
        git_denylist_match("git reset HEAD~1")
        == "reset COMMIT; to unstage a path write `git reset -- PATH`"
    )
    assert git_denylist_match("git -c core.fsmonitor=x status") == "config setting (core.fsmonitor)"


def test_every_pattern_returned_is_documented() -> None:
    documented = {pattern for pattern, _ in DENYLIST_PATTERNS}
    assert {pattern for _, pattern in MATCHES} <= documented
    assert len(documented) == len(DENYLIST_PATTERNS)


def test_deep_nesting_and_garbage_do_not_crash() -> None:
    deep = "git push"
    for _ in range(20):
        deep = f"bash -c {deep!r}"
    assert git_denylist_match(deep) in ("push", None)
    assert git_denylist_match("git commit 'unbalanced") == "commit"
    # An unclosed substitution as the program word: refused, without a crash.
    assert git_denylist_match("'''\"\"\"$(`") is not None
    assert git_denylist_match(None) is None  # type: ignore[arg-type]


def test_docs_list_every_pattern() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
    section = docs.split("### The terminal git denylist", 1)[1].split("\n## ", 1)[0]
    missing = [pattern for pattern, _ in DENYLIST_PATTERNS if f"`{pattern}`" not in section]
    assert missing == []
