"""Structured (JSON) output: robust extraction, schema validation, re-asking with the error.

    results = generate_structured(llm, requests, MySchema, max_reasks=2)

Each sample is parsed on its own: JSON is found inside code fences or surrounding prose, validated with
the pydantic model, and on failure the model is shown its own reply and the validation error and asked
again (up to ``max_reasks`` times, as a new cached call with the same sample index). The raw text of
every attempt is kept; final failures are recorded in the cache's failure table as ``invalid_output``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from phr.core.aio import run_sync
from phr.llm.summary import RunSummary
from phr.llm.types import CallFailure, ChatRequest, Message, Sample

if TYPE_CHECKING:  # pragma: no cover - the client is made by the caller
    from phr.llm.client import LLM

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)

REASK_TEMPLATE = (
    "Your previous reply could not be used: {error}\nReply again with only the corrected JSON, no other text."
)


class JSONExtractionError(ValueError):
    pass


def extract_json(text: str) -> Any:
    """The first JSON object or array in ``text``: fenced blocks first, then the first decodable span."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for cand in candidates:
        cand = cand.strip()
        for i, ch in enumerate(cand):
            if ch in "{[":
                try:
                    value, _ = decoder.raw_decode(cand, i)
                    return value
                except json.JSONDecodeError:
                    continue
    snippet = text.strip().replace("\n", " ")[:120]
    raise JSONExtractionError(f"no JSON object found in the reply (starts: {snippet!r})")


def parse_as(text: str, schema: type[T]) -> T:
    """Extract JSON from ``text`` and validate it against ``schema``; ValueError says what is wrong."""
    value = extract_json(text)
    try:
        return schema.model_validate(value)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['msg']}" for err in e.errors())
        raise ValueError(f"the JSON does not match the expected schema: {problems}") from None


@dataclass
class StructuredResult(Generic[T]):
    """One sample's outcome: the validated value, or None with every raw text and error on the way.

    ``failure`` is set when a call (the first ask or a re-ask) failed after all retries: no reply was judged, so
    a caller that wants exact reruns must not treat it like an invalid reply."""

    index: int
    value: T | None = None
    raw_texts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failure: CallFailure | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


async def agenerate_structured(
    llm: LLM, requests: Sequence[ChatRequest], schema: type[T], *, max_reasks: int = 2, desc: str = "generating"
) -> list[list[StructuredResult[T]]]:

    summary = RunSummary()
    results = await llm.agenerate(requests, desc, summary)
    out: list[list[StructuredResult[T]]] = []
    pending: list[tuple[StructuredResult[T], tuple[Message, ...], ChatRequest]] = []
    for req, res in zip(requests, results):
        row = []
        for s in res.samples:
            sr: StructuredResult[T] = StructuredResult(s.index)
            row.append(sr)
            _take(sr, s, req.messages, req, pending, schema)
        out.append(row)
    for _ in range(max_reasks):
        if not pending:
            break
        reqs = [ChatRequest(msgs, req.params, n=1, tag=req.tag, first_index=sr.index) for sr, msgs, req in pending]
        again = await llm.agenerate(reqs, f"{desc} (re-ask)", summary)
        batch, pending = pending, []
        for (sr, _msgs, req), new_req, res in zip(batch, reqs, again):
            _take(sr, res.samples[0], new_req.messages, req, pending, schema)
    for sr, msgs, _req in pending:
        llm.cache.record_failure(
            "structured",
            llm.provider.kind,
            llm.provider.cache_model_id,
            sr.index,
            "invalid_output",
            json.dumps({"errors": sr.errors, "raw_texts": sr.raw_texts}, ensure_ascii=False),
            len(sr.raw_texts),
        )
        summary.model(llm.spec).failures["invalid_output"] += 1
    llm.last_summary = summary
    if llm.show_summary:
        from phr.llm.batch import show_summary

        show_summary(summary)
    return out


def _take(
    sr: StructuredResult[T],
    sample: Sample | CallFailure,
    messages: tuple[Message, ...],
    req: ChatRequest,
    pending: list[tuple[StructuredResult[T], tuple[Message, ...], ChatRequest]],
    schema: type[T],
) -> None:
    if isinstance(sample, CallFailure):
        sr.errors.append(f"call failed ({sample.reason}): {sample.message}")
        sr.failure = sample
        return  # a failed call is already recorded by the client; re-asking would not help
    sr.raw_texts.append(sample.text)
    try:
        sr.value = parse_as(sample.text, schema)
    except ValueError as e:
        sr.errors.append(str(e))
        followup = messages + (
            Message("assistant", sample.text),
            Message("user", REASK_TEMPLATE.format(error=e)),
        )
        pending.append((sr, followup, req))


def generate_structured(
    llm: LLM, requests: Sequence[ChatRequest], schema: type[T], *, max_reasks: int = 2, desc: str = "generating"
) -> list[list[StructuredResult[T]]]:
    """Synchronous :func:`agenerate_structured`."""
    return run_sync(agenerate_structured(llm, requests, schema, max_reasks=max_reasks, desc=desc))
