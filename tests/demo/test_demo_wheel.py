"""`lich demo` from a wheel installed in a fresh virtual environment (the issue's CI check).

The wheel is built from a copy of the sources (so the checkout gets no build/ or egg-info) by the
setuptools of the test environment (the test extra asks for one that meets `[build-system]`),
without pip's build isolation: an isolated build would fetch setuptools from the package index,
and nothing in the tests reaches beyond loopback (it also cost ~3 s of CPU). The venv has the system site-packages for lich's dependencies, which cannot all be
installed offline, but lich itself comes from the wheel: the test checks that the demo ran from
the venv's copy, with the sample, the recording and the Neovim plugin packaged in it.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.demo.demo_support import DEMO_TIMEOUT_S, REPO

pytestmark = pytest.mark.slow

BUILD_TIMEOUT_S = 600
# What the wheel is built from: the package sources, its metadata, and editors/nvim (the target of
# lich_cli/demo/nvim_plugin).
SOURCES = (
    "pyproject.toml",
    "README.md",
    "lich_core",
    "lich_lsp",
    "lich_acp",
    "lich_cli",
    "editors/nvim",
)


def copy_sources(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, symlinks=True, ignore=ignore)
        else:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def run(
    command: list[str], *, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done


def see_this_interpreters_packages(python: Path, env: dict[str, str]) -> None:
    """Let the new venv see the packages of the interpreter running the tests. Its
    --system-site-packages are the base interpreter's, which lack lich's dependencies when the
    suite itself runs in a venv (the README's way); a .pth adds this one's site-packages after
    the venv's own, so lich still comes from the wheel."""
    if sys.prefix == sys.base_prefix:
        return
    venv_site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        cwd=python.parent,
        env=env,
        timeout=DEMO_TIMEOUT_S,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    Path(venv_site, "zz_outer_venv.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.timeout(BUILD_TIMEOUT_S * 2 + DEMO_TIMEOUT_S)
def test_the_demo_runs_from_a_wheel_in_a_fresh_venv(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    sources, dist, venv, elsewhere = (tmp_path / name for name in ("src", "dist", "venv", "cwd"))
    for folder in (sources, elsewhere):
        folder.mkdir()
    copy_sources(sources)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(sources),
        ],
        cwd=tmp_path,
        env=env,
        timeout=BUILD_TIMEOUT_S,
    )
    wheels = list(dist.glob("lich_lsp-*.whl"))
    assert len(wheels) == 1, list(dist.iterdir())
    run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        cwd=tmp_path,
        env=env,
        timeout=BUILD_TIMEOUT_S,
    )
    python = venv / "bin" / "python"
    see_this_interpreters_packages(python, env)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheels[0]),
        ],
        cwd=tmp_path,
        env=env,
        timeout=BUILD_TIMEOUT_S,
    )
    # lich comes from the venv (not the checkout, not an editable install), data files included.
    where = run(
        [
            str(python),
            "-c",
            "import lich_cli.demo, lich_cli.demo.nvim as n; print(lich_cli.demo.__file__); print(n.find_plugin())",
        ],
        cwd=elsewhere,
        env=env,
        timeout=DEMO_TIMEOUT_S,
    ).stdout.split()
    site = venv.resolve()
    assert all(Path(path).resolve().is_relative_to(site) for path in where), where
    demo = run([str(venv / "bin" / "lich"), "demo"], cwd=elsewhere, env=env, timeout=DEMO_TIMEOUT_S)
    out = demo.stdout
    assert "prompt    mean() crashes on an empty list" in out, out
    assert "--- a/stats.py\n+++ b/stats.py\n" in out and "\n+        return 0.0\n" in out, out
    assert "approval  lich wants to run terminal" in out and "ok terminal" in out, out
    assert "done      final after 5 turn(s)" in out, out
    assert list(elsewhere.iterdir()) == []
