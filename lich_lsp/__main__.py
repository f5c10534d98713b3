"""`lich-lsp` / `python -m lich_lsp`: start the language server."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from lich_lsp.server import run

    return run(argv)


if __name__ == "__main__":
    raise SystemExit(main())
