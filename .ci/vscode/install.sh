#!/usr/bin/env bash
# Install what the VS Code end-to-end test needs: Debian's chromium and ripgrep, code-server
# 4.100.3 (VS Code 1.100.3) from the npm registry without its install scripts (they fetch from a
# host we cannot reach), and playwright-core + @vscode/vsce. Recipe: shared/VSCODE-E2E.md.
#
# Idempotent: each step is skipped when its result is already there. Everything npm installs
# lives under $LICH_VSCODE_CACHE (default: <repo>/.ci/cache/vscode), which the e2e driver reads.
set -euo pipefail

CODE_SERVER_VERSION="4.100.3"
PLAYWRIGHT_CORE_VERSION="1.52.0"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE_DIR="${LICH_VSCODE_CACHE:-$REPO_ROOT/.ci/cache/vscode}"
CS_DIR="$CACHE_DIR/code-server"
TOOLS_DIR="$CACHE_DIR/tools"
STAMP="$CS_DIR/.installed-$CODE_SERVER_VERSION"

log() { printf '[vscode-install %(%H:%M:%S)T] %s\n' -1 "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Debian packages.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ -x /usr/bin/rg ] || missing+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 3. Native builds use the system's node headers instead of downloading them, and build from
# source straight away: argon2's node-pre-gyp and kerberos' prebuild-install otherwise try a
# GitHub release download first, a timeout per package where only package registries answer.
export npm_config_nodedir=/usr
export npm_config_build_from_source=true
export npm_config_yes=true
export npm_config_fund=false
export npm_config_audit=false
export npm_config_update_notifier=false

# 2, 4, 5. code-server and VS Code's server dependencies.
if [ ! -f "$STAMP" ]; then
    log "installing code-server@$CODE_SERVER_VERSION into $CS_DIR"
    rm -rf "$CS_DIR"
    mkdir -p "$CS_DIR"
    echo '{"name":"lich-code-server","version":"0.0.0","private":true}' >"$CS_DIR/package.json"
    (cd "$CS_DIR" && npm install --ignore-scripts --no-save --loglevel=error "code-server@$CODE_SERVER_VERSION")
    (cd "$CS_DIR" && npm rebuild argon2 --loglevel=error)

    VSCODE_DIR="$CS_DIR/node_modules/code-server/lib/vscode"
    log "installing VS Code server dependencies"
    (cd "$VSCODE_DIR" && npm install --omit=dev --ignore-scripts --loglevel=error)
    (cd "$VSCODE_DIR" && npm rebuild @vscode/spdlog node-pty @parcel/watcher native-watchdog kerberos @vscode/deviceid --loglevel=error)
    mkdir -p "$VSCODE_DIR/node_modules/@vscode/ripgrep/bin"
    ln -sfn /usr/bin/rg "$VSCODE_DIR/node_modules/@vscode/ripgrep/bin/rg"

    # The rest of code-server's postinstall, by hand.
    ln -sfn node_modules "$VSCODE_DIR/node_modules.asar"
    (cd "$VSCODE_DIR/bin/remote-cli" && ln -sfn code-linux.sh code-server)
    (cd "$VSCODE_DIR/bin/helpers" && ln -sfn browser-linux.sh browser.sh)
    (cd "$VSCODE_DIR/extensions" && npm install --omit=dev --ignore-scripts --loglevel=error)
    touch "$STAMP"
else
    log "code-server@$CODE_SERVER_VERSION already installed"
fi

# 6. Test tools (no browser download: the driver uses /usr/bin/chromium).
if [ ! -f "$TOOLS_DIR/node_modules/playwright-core/package.json" ]; then
    log "installing playwright-core@$PLAYWRIGHT_CORE_VERSION"
    mkdir -p "$TOOLS_DIR"
    echo '{"name":"lich-e2e-tools","version":"0.0.0","private":true}' >"$TOOLS_DIR/package.json"
    (cd "$TOOLS_DIR" && npm install --no-save --loglevel=error "playwright-core@$PLAYWRIGHT_CORE_VERSION")
fi

log "ready: code-server=$CS_DIR/node_modules/code-server tools=$TOOLS_DIR"
