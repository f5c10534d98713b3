"""git_denylist_match: a table of commands that match (with the pattern) and commands that do not."""

from __future__ import annotations

import pytest

from lich_core.gatekeeper import DENYLIST_PATTERNS, git_denylist_match

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
    ("sh -lc \"cd sub && git commit -m x\"", "commit"),
    ("bash -c \"bash -c 'git push'\"", "push"),
    ("eval 'git push'", "push"),
    ("echo $(git push)", "push"),
    ("echo \"$(git commit -m x)\"", "commit"),
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
]

NON_MATCHES = [
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
    "git checkout main",
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
    "git -c alias.st=status st",
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
    assert git_denylist_match(command) == pattern


@pytest.mark.parametrize("command", NON_MATCHES)
def test_does_not_match(command: str) -> None:
    assert git_denylist_match(command) is None


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
    assert git_denylist_match("'''\"\"\"$(`") is None
    assert git_denylist_match(None) is None  # type: ignore[arg-type]
