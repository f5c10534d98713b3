"""The `lich` command line (lich_cli.main:main): above the core and the faces it starts (`lich acp`,
`lich demo`); nothing in lich_core, lich_lsp or lich_acp imports it."""
