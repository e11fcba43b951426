"""One LLM-judge helper: a prompt template file, a pydantic verdict, re-asks on invalid JSON, the call cache.

    TEMPLATE = JudgeTemplate(Path("prompts/my_judge.txt"), syntax="fields")      # read once; .version = sha256
    JUDGE = LLMJudge(MyVerdict, TEMPLATE, max_tokens=256)
    out = JUDGE.judge("openai:gpt-4o", [JudgeItem({"question": q, "response": r}, tag="row-1"), ...])
    out[0].verdict        # a MyVerdict, or None when the reply stayed unparseable (out[0].unjudged)

Every item is one temperature-0, n=1 request through the LLM layer (``phr.llm.LLM``), so it is cached and a
rerun makes no calls. A reply holding no JSON, or JSON that does not validate against the verdict model, is
re-asked with the error (``phr.llm.structured``) up to ``max_reasks`` times; an item still invalid is
``unjudged``: its raw replies and errors are kept, and the cache's failure table records it.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from phr.core.aio import run_sync
from phr.llm.client import LLM
from phr.llm.structured import agenerate_structured
from phr.llm.types import CallFailure, ChatRequest, GenerationParams, as_messages

__all__ = ["JudgeItem", "JudgeTemplate", "Judged", "LLMJudge", "run_sync"]

V = TypeVar("V", bound=BaseModel)

Syntax = Literal["format", "dollar", "fields"]
_FIELD = re.compile(r"\{(\w+)\}")


class JudgeTemplate:
    """A judge prompt file, read once. ``version`` is the SHA-256 of the whole file (header included).

    ``syntax``: ``"format"`` (``str.format``: ``{name}``, literal braces doubled), ``"dollar"``
    (``string.Template``: ``$name``) or ``"fields"`` (only ``{name}`` of the given fields is replaced, every
    other brace stays: for prompts quoted verbatim, e.g. with a literal JSON example). ``comment``: leading
    lines starting with it (and blank lines among them) are a header, stripped before use. Trailing newlines
    are dropped. Rendering with a missing field raises KeyError naming it and the file."""

    def __init__(self, path: str | Path, *, syntax: Syntax = "format", comment: str | None = None):
        if syntax not in ("format", "dollar", "fields"):
            raise ValueError(f"unknown template syntax {syntax!r}: format, dollar or fields")
        self.path = Path(path)
        self.syntax = syntax
        raw = self.path.read_bytes()
        self.version = hashlib.sha256(raw).hexdigest()
        text = raw.decode("utf-8")
        if comment:
            lines = text.splitlines()
            while lines and (lines[0].startswith(comment) or not lines[0].strip()):
                lines.pop(0)
            text = "\n".join(lines)
        self.text = text.rstrip("\n")

    def render(self, fields: Mapping[str, Any]) -> str:
        try:
            if self.syntax == "format":
                return self.text.format(**fields)
            if self.syntax == "dollar":
                return string.Template(self.text).substitute(fields)
        except KeyError as e:
            raise KeyError(f"{self.path.name}: no value for field {e.args[0]!r}") from None
        missing = sorted(n for n in set(_FIELD.findall(self.text)) if n not in fields and n.isidentifier())
        if missing:
            raise KeyError(f"{self.path.name}: no value for field {missing[0]!r}")
        return _FIELD.sub(lambda m: str(fields[m.group(1)]) if m.group(1) in fields else m.group(0), self.text)

    def __repr__(self) -> str:
        return f"JudgeTemplate({str(self.path)!r}, version={self.version[:12]})"


@dataclass(frozen=True)
class JudgeItem:
    """One thing to judge: the template's fields (or a ready ``prompt``), and a tag for the call log."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    tag: str | None = None
    prompt: str | None = None


@dataclass(frozen=True)
class Judged(Generic[V]):
    """One judgement: the validated verdict, or None (``unjudged``) with every raw reply and error on the way."""

    tag: str | None
    verdict: V | None
    raw_texts: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    failure: CallFailure | None = None  # a call failed after all retries: nothing was judged

    @property
    def unjudged(self) -> bool:
        return self.verdict is None


class LLMJudge(Generic[V]):
    """A judge: a verdict model, a template (optional when items carry their prompt), sampling and re-asks.

    ``judge(llm, items)`` takes an ``LLM`` or a model spec (then the default call cache, ``$PHR_CACHE``)."""

    def __init__(
        self,
        verdict: type[V],
        template: JudgeTemplate | None = None,
        *,
        max_tokens: int = 512,
        max_reasks: int = 2,
        desc: str = "judging",
    ):
        if max_reasks < 0:
            raise ValueError("max_reasks must be >= 0")
        self.verdict = verdict
        self.template = template
        self.params = GenerationParams(temperature=0.0, max_tokens=max_tokens)
        self.max_reasks = max_reasks
        self.desc = desc

    @property
    def version(self) -> str | None:
        """The template's SHA-256 (None without a template)."""
        return self.template.version if self.template else None

    def prompt(self, item: JudgeItem) -> str:
        if item.prompt is not None:
            return item.prompt
        if self.template is None:
            raise ValueError(f"judge item {item.tag!r} has no prompt and the judge has no template")
        return self.template.render(item.fields)

    def requests(self, items: Sequence[JudgeItem]) -> list[ChatRequest]:
        return [ChatRequest(as_messages(self.prompt(it)), self.params, n=1, tag=it.tag) for it in items]

    async def ajudge(
        self, llm: LLM | str, items: Sequence[JudgeItem], *, max_reasks: int | None = None, desc: str | None = None
    ) -> list[Judged[V]]:
        """Judge every item, in order (prompts are rendered before any call, so a bad item fails first)."""
        requests = self.requests(items)
        if not requests:
            return []
        llm = llm if isinstance(llm, LLM) else LLM(llm)
        reasks = self.max_reasks if max_reasks is None else max_reasks
        results = await agenerate_structured(llm, requests, self.verdict, max_reasks=reasks, desc=desc or self.desc)
        return [
            Judged(it.tag, res.value, tuple(res.raw_texts), tuple(res.errors), res.failure)
            for it, (res,) in zip(items, results)
        ]

    def judge(
        self, llm: LLM | str, items: Sequence[JudgeItem], *, max_reasks: int | None = None, desc: str | None = None
    ) -> list[Judged[V]]:
        """Synchronous :meth:`ajudge` (also safe inside a running event loop)."""
        return run_sync(self.ajudge(llm, items, max_reasks=max_reasks, desc=desc))
