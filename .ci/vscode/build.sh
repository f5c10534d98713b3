#!/usr/bin/env bash
# Build the VS Code extension: `npm ci` (only when package-lock.json changed since the last one),
# bundle with esbuild and package editors/vscode/dist/lich-lsp.vsix with vsce. No network is
# needed after `npm ci`; vsce runs with --no-dependencies (everything is in the bundle).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EXT_DIR="$REPO_ROOT/editors/vscode"
STAMP="$EXT_DIR/node_modules/.lich-package-lock.sha256"

log() { printf '[vscode-build %(%H:%M:%S)T] %s\n' -1 "$*"; }

cd "$EXT_DIR"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
lock_sha="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$lock_sha" ]; then
    log "npm ci"
    npm ci --loglevel=error
    echo "$lock_sha" >"$STAMP"
else
    log "node_modules match package-lock.json"
fi

log "bundle + package"
rm -f dist/lich-lsp.vsix
npm run --silent package >/dev/null
test -s dist/lich-lsp.vsix
log "built $EXT_DIR/dist/lich-lsp.vsix ($(stat -c %s dist/lich-lsp.vsix) bytes)"
