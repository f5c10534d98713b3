"""LLM providers over httpx: OpenAI-compatible, Anthropic, Ollama, replay; chains with failover."""
