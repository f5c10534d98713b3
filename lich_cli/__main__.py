"""`python -m lich_cli` is the `lich` command."""

from lich_cli.main import main

raise SystemExit(main())
