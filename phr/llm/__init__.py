"""LLM layer: one interface over API providers and local models, with a crash-safe call cache.

The names below are loaded on first use (PEP 562), so importing a submodule (``phr.llm.types``,
``phr.llm.providers.base``) does not load the client, rich or asyncio machinery: the CLI's start-up stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from phr.llm.cache import CacheMode, CallCache
    from phr.llm.client import LLM
    from phr.llm.spec import make_provider, parse_spec
    from phr.llm.structured import agenerate_structured, extract_json, generate_structured, parse_as
    from phr.llm.types import CallFailure, ChatRequest, GenerationParams, Message, RequestResult, Sample, as_messages

_WHERE = {
    "LLM": "client",
    "CacheMode": "cache",
    "CallCache": "cache",
    "make_provider": "spec",
    "parse_spec": "spec",
    "agenerate_structured": "structured",
    "extract_json": "structured",
    "generate_structured": "structured",
    "parse_as": "structured",
    "CallFailure": "types",
    "ChatRequest": "types",
    "GenerationParams": "types",
    "Message": "types",
    "RequestResult": "types",
    "Sample": "types",
    "as_messages": "types",
}

__all__ = [
    "LLM",
    "CacheMode",
    "CallCache",
    "CallFailure",
    "ChatRequest",
    "GenerationParams",
    "Message",
    "RequestResult",
    "Sample",
    "agenerate_structured",
    "as_messages",
    "extract_json",
    "generate_structured",
    "make_provider",
    "parse_as",
    "parse_spec",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'phr.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"phr.llm.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
