"""End-of-run accounting: calls, cache hits, failures by reason, tokens and estimated cost per model."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from phr.core.secrets import redact


@dataclass
class ModelStats:
    calls: int = 0  # API requests sent to the provider (a native-n call counts once)
    batches: int = 0  # in-process batches (hf:, local:, vllm:): one forward loop for many responses
    #: the provider batches (--batch) that gave this run's responses or failures, counted once however many calls
    #: of the run they answered
    batch_ids: set[str] = field(default_factory=set)
    samples: int = 0  # fresh responses produced by those calls or batches
    cache_hits: int = 0
    cache_corrupt: int = 0  # stored answers that failed their checksum (asked again)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    failures: Counter = field(default_factory=Counter)
    retries: int = 0

    @property
    def all_batches(self) -> int:
        """In-process batches and provider batches."""
        return self.batches + len(self.batch_ids)


def _total(stat: str) -> property:
    """A read-only property of ``RunSummary``: the sum of the ``ModelStats`` field ``stat`` over its models."""
    return property(lambda self: sum(getattr(m, stat) for m in self.models.values()))


@dataclass
class RunSummary:
    models: dict[str, ModelStats] = field(default_factory=dict)

    def model(self, spec: str) -> ModelStats:
        return self.models.setdefault(spec, ModelStats())

    def merge_all(self, others: Iterable[RunSummary]) -> RunSummary:
        """Add every summary of ``others`` (``merge``); returns self."""
        for other in others:
            self.merge(other)
        return self

    def merge(self, other: RunSummary) -> RunSummary:
        """Add ``other``'s counts to this summary (per model); returns self."""
        for spec, m in other.models.items():
            t = self.model(spec)
            t.calls += m.calls
            t.batches += m.batches
            t.batch_ids |= m.batch_ids
            t.samples += m.samples
            t.cache_hits += m.cache_hits
            t.cache_corrupt += m.cache_corrupt
            t.retries += m.retries
            t.prompt_tokens += m.prompt_tokens
            t.completion_tokens += m.completion_tokens
            t.cost_usd = None if t.cost_usd is None or m.cost_usd is None else t.cost_usd + m.cost_usd
            t.failures.update(m.failures)
        return self

    calls = _total("calls")
    batches = _total("all_batches")
    responses = _total("samples")
    cache_hits = _total("cache_hits")

    @property
    def failures(self) -> Counter:
        total: Counter = Counter()
        for m in self.models.values():
            total.update(m.failures)
        return total

    def as_dict(self) -> dict:
        return {
            spec: {
                "calls": m.calls,
                "batches": m.all_batches,
                "samples": m.samples,
                "cache_hits": m.cache_hits,
                "cache_corrupt": m.cache_corrupt,
                "retries": m.retries,
                "prompt_tokens": m.prompt_tokens,
                "completion_tokens": m.completion_tokens,
                "estimated_cost_usd": None if m.cost_usd is None else round(m.cost_usd, 6),
                "failures": dict(m.failures),
            }
            for spec, m in self.models.items()
        }

    def table(self) -> Table:
        t = Table(title="LLM calls", title_justify="left")
        for col in (
            "model",
            "responses",
            "calls / batches",
            "cache hits",
            "retries",
            "failures",
            "prompt tok",
            "completion tok",
            "est. cost",
        ):
            t.add_column(col, justify="left" if col == "model" else "right")
        for spec, m in self.models.items():
            fails = ", ".join(f"{k}={v}" for k, v in sorted(m.failures.items())) or "0"
            cost = "n/a (no price)" if m.cost_usd is None else f"${m.cost_usd:.4f}"
            sent = (
                " + ".join(
                    x
                    for x in (
                        f"{m.calls} calls" if m.calls else "",
                        f"{m.all_batches} batches" if m.all_batches else "",
                    )
                    if x
                )
                or "0"
            )
            t.add_row(
                redact(spec),
                str(m.samples),
                sent,
                f"{m.cache_hits} (corrupt: {m.cache_corrupt})" if m.cache_corrupt else str(m.cache_hits),
                str(m.retries),
                fails,
                str(m.prompt_tokens),
                str(m.completion_tokens),
                cost,
            )
        return t

    def print(self, console: Console | None = None) -> None:
        """The table on ``console`` (default: stderr at full width in a log); nothing when no model was asked."""
        if not self.models:
            return
        from phr.core.console import console as default_console

        (console or default_console(stderr=True)).print(self.table())
