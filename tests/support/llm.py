"""Real LLM clients pointed at the local protocol server, with retries fast enough for tests."""

from __future__ import annotations

from phr.llm import LLM, ChatRequest, GenerationParams, as_messages

API_KEY = "sk-test-SECRET-0123456789"  # what every fake provider key is set to (tests check it never leaks)


def fast_llm(spec: str = "openai:gpt-4o", **kw) -> LLM:
    """``LLM(spec)`` without a progress bar, with 10-50 ms backoff and a 5 s call timeout (overridable)."""
    return LLM(spec, **({"progress": False, "backoff_initial": 0.01, "backoff_max": 0.05, "timeout": 5} | kw))


def request(text: str, n: int = 1, **params) -> ChatRequest:
    return ChatRequest(as_messages(text), GenerationParams(**params), n=n)
