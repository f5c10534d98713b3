"""lich_core: the embedded agent core (tools, guards, executor, hashline, agent loop, providers)."""

__version__ = "0.1.0"
