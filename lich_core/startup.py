"""Program start-up: a program's imports without garbage collection passes.

A lich program imports a few hundred modules as it starts (lsprotocol alone builds ~570 classes),
and nearly everything those imports make lives as long as the process: ~55,000 tracked objects in
`lich-lsp`. Each full collection the imports trigger walks all of them and frees nothing; in the
language server that was ~50 ms of a ~0.45 s start (`python -m bench lsp`). So the collector is
off while a program imports, and what the imports made is then frozen (`gc.freeze`): moved out of
the generations, so no later collection walks it again either, a task's mid-stream full
collection included. Objects made after start-up are collected as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_start() -> Iterator[None]:
    """Run a program's start-up imports with the collector off, then freeze what they made.

    For a program's entry point only: frozen objects are never collected, so calling this inside
    another program (a test run) would keep that program's cyclic garbage for good.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
