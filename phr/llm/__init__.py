"""LLM layer: one interface over API providers and local models, with a crash-safe call cache."""

from phr.llm.cache import CacheMode, CallCache
from phr.llm.client import LLM
from phr.llm.spec import make_provider, parse_spec
from phr.llm.structured import agenerate_structured, extract_json, generate_structured, parse_as
from phr.llm.types import CallFailure, ChatRequest, GenerationParams, Message, RequestResult, Sample, as_messages

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
