"""Requests, samples and failures exchanged between the LLM layer's parts."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


def as_messages(prompt: str | Sequence[Message | dict]) -> tuple[Message, ...]:
    """Accept a bare user prompt, a list of Message, or OpenAI-style dicts."""
    if isinstance(prompt, str):
        return (Message("user", prompt),)
    out = []
    for m in prompt:
        if isinstance(m, Message):
            out.append(m)
        elif isinstance(m, dict) and set(m) >= {"role", "content"}:
            if m["role"] not in ("system", "user", "assistant"):
                raise ValueError(f"message role must be system, user or assistant, got {m['role']!r}")
            out.append(Message(m["role"], str(m["content"])))
        else:
            raise TypeError(f"not a chat message: {m!r}")
    if not out:
        raise ValueError("a chat request needs at least one message")
    return tuple(out)


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters. ``None`` means the provider's default. ``n`` is not here: it is per request."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = 512
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.temperature is not None and self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError("top_k must be >= 1")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if isinstance(self.stop, (list, str)):
            object.__setattr__(self, "stop", (self.stop,) if isinstance(self.stop, str) else tuple(self.stop))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass(frozen=True)
class ChatRequest:
    """One prompt to sample ``n`` completions for. ``tag`` is the caller's label (e.g. an instance id)."""

    messages: tuple[Message, ...]
    params: GenerationParams = field(default_factory=GenerationParams)
    n: int = 1
    tag: str | None = None
    #: Sample indices are first_index .. first_index + n - 1 (they are part of the cache key).
    first_index: int = 0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError("n must be >= 1")
        if self.first_index < 0:
            raise ValueError("first_index must be >= 0")
        object.__setattr__(self, "messages", as_messages(list(self.messages)))


@dataclass(frozen=True)
class Sample:
    """One completion: sample ``index`` of a request."""

    index: int
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # seconds until it arrived: for a batched in-process call, the whole batch's time
    model: str
    cached: bool = False
    created_at: float = field(default_factory=time.time)
    batch_size: int = 1  # how many responses the call that produced it returned together


@dataclass(frozen=True)
class CallFailure:
    """A call that finally failed after retries. Never dropped: returned, counted and stored."""

    index: int
    reason: str  # rate_limit | server_error | timeout | connection | bad_request | auth | malformed | other
    message: str
    attempts: int
    model: str


@dataclass
class RequestResult:
    """Everything produced for one ChatRequest: a slot per sample index, a Sample or a CallFailure."""

    request: ChatRequest
    samples: list[Sample | CallFailure]

    @property
    def ok(self) -> bool:
        return all(isinstance(s, Sample) for s in self.samples)

    @property
    def text(self) -> str:
        """The first sample's text; raises if it failed."""
        first = self.samples[0]
        if isinstance(first, CallFailure):
            raise RuntimeError(f"call failed ({first.reason}): {first.message}")
        return first.text

    @property
    def texts(self) -> list[str]:
        """Texts of the successful samples, in sample order."""
        return [s.text for s in self.samples if isinstance(s, Sample)]

    @property
    def failures(self) -> list[CallFailure]:
        return [s for s in self.samples if isinstance(s, CallFailure)]
