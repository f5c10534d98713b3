"""Inline completions: fill-in-the-middle models (providers.py), the context they are given
(context.py) and the shape of a request (model.py). The language server's face is
lich_lsp/completions.py; docs/completions.md describes both."""
