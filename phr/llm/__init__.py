"""LLM layer: one interface over API providers and local models, with a crash-safe call cache."""
