"""`python -m lich_cli` is the `lich` command."""

from lich_cli.main import main

# main() without arguments is the process's entry point: a task run leaves through exit_now
# (os._exit once flushed) and never returns here; every other command returns its code.
raise SystemExit(main())
