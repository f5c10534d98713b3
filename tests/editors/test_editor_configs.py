"""The copy-paste configs for editors without an end-to-end test (Helix, Zed, Sublime, Kate,
Emacs lsp-mode) and the editor docs: they parse, the settings they send are accepted by the
server's config loader, and every `lich.*` command they or the docs name is one the server has.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lich_core.config import load_config
from lich_lsp.commands import COMMANDS

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"
DOCS = REPO / "docs"
EMACS_TIMEOUT_S = 120


def _jsonc(path: Path) -> Any:
    """JSON with whole-line `//` comments (Sublime's and Zed's settings files)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()]
    kept = [line for line in lines if not line.lstrip().startswith("//")]
    return json.loads("\n".join(kept))


def _toml(path: Path) -> dict[str, Any]:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11+")
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _init_options() -> dict[str, dict[str, Any]]:
    helix = _toml(EDITORS / "helix" / "languages.toml")
    kate = json.loads((EDITORS / "kate" / "settings.json").read_text(encoding="utf-8"))
    sublime = _jsonc(EDITORS / "sublime" / "LSP.sublime-settings")
    zed = _jsonc(EDITORS / "zed" / "settings.json")
    return {
        "helix": helix["language-server"]["lich"]["config"],
        "kate": kate["servers"]["python"]["initializationOptions"],
        "sublime": sublime["clients"]["lich"]["initializationOptions"],
        "zed": zed["lsp"]["lich-lsp"]["initialization_options"],
    }


@pytest.mark.parametrize("editor", ["helix", "kate", "sublime", "zed"])
def test_sent_settings_are_valid_server_config(editor: str, tmp_path: Path) -> None:
    options = _init_options()[editor]
    assert options, f"{editor}: no initialization options found"
    config = load_config(tmp_path, overrides=options, env={})
    for key, value in options.items():
        assert config[key] == value, f"{editor}: {key} did not reach the server config"


def test_helix_attaches_lich_next_to_the_usual_server() -> None:
    helix = _toml(EDITORS / "helix" / "languages.toml")
    assert helix["language-server"]["lich"]["command"] == "lich-lsp"
    for language in helix["language"]:
        assert language["language-servers"][-1] == "lich", language


def test_helix_asks_lich_for_completions() -> None:
    """Helix merges completion items from every listed server whose `completion` feature is on:
    each language's lich entry leaves it on (a plain name, or features that keep it), and the
    README says how to turn it off."""
    helix = _toml(EDITORS / "helix" / "languages.toml")
    for language in helix["language"]:
        entries = [
            entry
            for entry in language["language-servers"]
            if (entry if isinstance(entry, str) else entry["name"]) == "lich"
        ]
        assert len(entries) == 1, language
        (entry,) = entries
        if isinstance(entry, dict):
            assert "completion" in entry.get("only-features", ["completion"]), language
            assert "completion" not in entry.get("except-features", []), language
    readme = (EDITORS / "helix" / "README.md").read_text(encoding="utf-8")
    assert "## Completions" in readme and 'except-features = ["completion"]' in readme


def test_zed_extension_manifest_names_its_server() -> None:
    manifest = _toml(EDITORS / "zed" / "extension.toml")
    cargo = _toml(EDITORS / "zed" / "Cargo.toml")
    assert "lich-lsp" in manifest["language_servers"]
    assert "zed_extension_api" in cargo["dependencies"]
    assert "lich-lsp" in (EDITORS / "zed" / "src" / "lib.rs").read_text(encoding="utf-8")


def test_sublime_palette_entries_run_real_commands() -> None:
    entries = _jsonc(EDITORS / "sublime" / "Lich.sublime-commands")
    for entry in entries:
        assert entry["command"] == "lsp_execute"
        assert entry["args"]["command_name"] in COMMANDS, entry
        assert isinstance(entry["args"]["command_args"][0], dict), "lich commands take one object"


def test_every_named_lich_command_exists() -> None:
    """Docs and editor READMEs/configs name only commands the server advertises."""
    settings = json.loads((EDITORS / "vscode" / "package.json").read_text(encoding="utf-8"))
    # `lich.<x>` that are not commands: VS Code settings and the plugin entry-point group.
    not_commands = {
        key.split(".")[1] for key in settings["contributes"]["configuration"]["properties"]
    }
    not_commands.add("plugins")
    not_commands.add("el")  # editors/emacs/lich.el, the shared Emacs file
    # The Neovim plugin's Lua modules (`require("lich.ghost")`).
    not_commands |= {module.stem for module in (EDITORS / "nvim" / "lua" / "lich").glob("*.lua")}
    known = {name.split(".", 1)[1] for name in COMMANDS} | not_commands
    quoted = re.compile(r"[`\"']lich\.([A-Za-z]+)[`\"'(]")
    files = [*DOCS.rglob("*.md"), *EDITORS.glob("*/README.md"), *EDITORS.glob("*/*.sublime-*")]
    files += [EDITORS / "nvim" / "doc" / "lich.txt", EDITORS / "helix" / "languages.toml"]
    unknown = {
        f"lich.{match.group(1)} in {path.relative_to(REPO)}"
        for path in files
        for match in quoted.finditer(path.read_text(encoding="utf-8"))
        if match.group(1) not in known
    }
    assert not unknown, sorted(unknown)


def test_emacs_configs_byte_compile(tmp_path: Path) -> None:
    """The shared lich.el and both Emacs adapters byte-compile without warnings against
    Debian's Eglot and lsp-mode (the adapters load lich.el from the same directory)."""
    emacs = shutil.which("emacs")
    if emacs is None:
        pytest.skip("no `emacs` binary on PATH (Debian: apt-get install emacs-nox)")
    for name in ("lich.el", "lich-eglot.el", "lich-lsp-mode.el"):
        shutil.copy(EDITORS / "emacs" / name, tmp_path / name)
    probe = subprocess.run(
        [emacs, "--batch", "--eval", "(require 'lsp-mode)"],
        capture_output=True,
        text=True,
        timeout=EMACS_TIMEOUT_S,
    )
    files = ["lich.el", "lich-eglot.el"] + (["lich-lsp-mode.el"] if probe.returncode == 0 else [])
    done = subprocess.run(
        [emacs, "--batch", "-L", str(tmp_path), "--eval", "(setq byte-compile-error-on-warn t)"]
        + ["-f", "batch-byte-compile"]
        + [str(tmp_path / f) for f in files],
        capture_output=True,
        text=True,
        timeout=EMACS_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Error" not in done.stderr, done.stderr[-4000:]
    for name in files:
        assert (tmp_path / name).with_suffix(".elc").exists()


def test_vscode_settings_have_descriptions_defaults_and_docs() -> None:
    manifest = json.loads((EDITORS / "vscode" / "package.json").read_text(encoding="utf-8"))
    properties = manifest["contributes"]["configuration"]["properties"]
    page = (DOCS / "editors" / "vscode.md").read_text(encoding="utf-8")
    for key, spec in properties.items():
        assert spec.get("markdownDescription") or spec.get("description"), f"{key}: no description"
        assert "default" in spec, f"{key}: no default"
        assert f"| `{key}` | `{json.dumps(spec['default'])}` |" in page, (
            f"{key} (default {spec['default']!r}) is not in the settings table of docs/editors/vscode.md"
        )
    # The API key is only ever named, never stored in settings.
    assert not [key for key in properties if key.lower().endswith(("apikey", "api_key", "token"))]


def test_docs_links_resolve() -> None:
    """Relative links in docs/ and the editor READMEs point at files that exist."""
    link = re.compile(r"\]\(([^)\s]+)\)")
    pages = [*DOCS.rglob("*.md"), *EDITORS.glob("*/README.md")]
    broken = []
    for page in pages:
        for target in link.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def test_docs_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if p.name != "README.md"]
    missing = [p for p in pages if f"({p})" not in index]
    assert not missing, f"docs/README.md does not link {missing}"
