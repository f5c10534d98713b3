"""`python -m lich_core` is the `lich` CLI."""

from lich_core.cli import main

raise SystemExit(main())
