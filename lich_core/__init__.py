"""lich_core: the embedded agent core (tools and their safety helpers, executor, hashline, agent loop, providers)."""

__version__ = "0.1.0"
