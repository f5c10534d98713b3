"""Reads its input and never answers: an MCP server that hangs at the handshake."""

import sys

for _line in sys.stdin:
    pass
