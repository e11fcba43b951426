"""Preflight: everything a run needs, checked before its first call or heavy import, and its plan.

    pf = Preflight()
    pf.model("generator", "openai:gpt-4o")          # the spec resolves, its key is set, its SDK installed
    pf.calls("openai:gpt-4o", requests)              # calls, share cached, estimated tokens and cost
    pf.raise_problems()                              # a PreflightError listing all; else pf.lines() is the plan

A problem is collected, never raised at once, so one dry run lists them all.
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from phr.config.defaults import is_no_model
from phr.core.errors import PHRError, UsageError

if TYPE_CHECKING:  # pragma: no cover - the LLM layer is imported where a plan counts calls
    from phr.llm.pricing import PriceTable
    from phr.llm.providers.base import Provider
    from phr.llm.types import ChatRequest

T = TypeVar("T")
#: provider kinds that load a model's weights from a folder, the Hugging Face cache or the Hub
WEIGHTS_LOADED = ("hf", "vllm")
#: nominal completion tokens per second of in-process models on a CPU, for a plan's rough time when the call cache
#: has no earlier answers of the model to measure it from (SmolLM2-135M batched on 2 cores; a 7B model in bf16)
NOMINAL_TOKENS_PER_S = {"local": 20.0, "hf": 2.0, "vllm": 200.0}
#: a plan warns when its in-process generation should take longer than this
LONG_RUN_S = 3600.0
MEASURED = "measured from this cache's earlier answers"


class PreflightError(UsageError):
    """One or more problems found before any call (exit 2), each on its own line."""


@dataclass
class Usage:
    """The calls one model will make: requests, samples, how many are cached, estimated tokens."""

    spec: str
    requests: int = 0
    samples: int = 0
    cached: int | None = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0  # an upper bound: every sample at its max_tokens
    estimated: int = 0  # samples whose prompt is written during the run (estimated; their cache state unknown)
    batch: bool = False  # sent through the provider's batch API (--batch): priced at the batch rate
    #: requests made only when earlier answers say so (Algorithm 1: paraphrases of questions first answered
    #: correctly): counted in ``requests`` as a bound; ``expected``: their expected number; ``when``: the conditions
    conditional: int = 0
    expected: float = 0.0
    when: list[str] = field(default_factory=list)
    #: an in-process model's completion tokens per second: measured in the call cache, else nominal (``rate_of``)
    tokens_per_s: float | None = None
    rate_of: str = ""

    @property
    def seconds(self) -> float | None:
        """A rough time of the in-process generation still to do (the bound, uncached samples at max_tokens)."""
        if not self.tokens_per_s:
            return None
        todo = 1 - (self.cached or 0) / self.samples if self.samples else 0
        return self.completion_tokens * todo / self.tokens_per_s

    @property
    def certain(self) -> int:
        """The requests the run makes whatever the answers are."""
        return self.requests - self.conditional

    def line(self, prices: PriceTable) -> str:
        cost = prices.cost(self.spec, self.prompt_tokens, self.completion_tokens, batch=self.batch)
        known = self.samples - self.estimated
        cached = "unknown" if self.cached is None or not known else f"{self.cached}/{known}"
        if self.estimated:
            cached += f"; {self.estimated} estimated, their prompts are written during the run"
        usd = "no price in prices.toml" if cost is None else f"<= ${cost:,.2f}"
        if self.batch and cost is not None:
            usd += f" at the batch rate ({prices.batch_share(self.spec):.0%} of the price)"
        requests = f"{self.requests} requests"
        if self.conditional:
            requests = (
                f"{self.certain} requests + up to {self.conditional} that depend on earlier answers "
                f"({'; '.join(self.when)}; expected ~{round(self.expected)}; the rest counts the bound)"
            )
        took = ""
        if self.seconds is not None:
            took = f"; about {_duration(self.seconds)} of generation here at ~{self.tokens_per_s:.0f} tokens/s ({self.rate_of})"
        return (
            f"  {self.spec}: {requests}, {self.samples} samples (cached {cached}), ~{self.prompt_tokens:,} prompt tokens, "
            f"<= {self.completion_tokens:,} completion tokens, {usd}{took}"
        )


def _duration(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes} min"


@dataclass
class Preflight:
    """Problems and the plan of one command."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    usage: dict[str, Usage] = field(default_factory=dict)
    #: what the user allowed that is not the usual run (e.g. a smaller corpus): printed by a run and a dry run
    warnings: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def check(self, what: str, fn: Callable[[], T]) -> T | None:
        """Run ``fn``; a PHRError or OSError is a problem named by ``what`` (once: a message that starts with it,
        such as a submission error naming its file, is not prefixed again)."""
        try:
            return fn()
        except (PHRError, OSError, ValueError) as e:
            message = str(e)
            named = message.startswith((f"{what}:", f"{what} "))
            self.problem(message if named else f"{what}: {message}")
            return None

    def output(self, path: str | Path, overwrite: bool, field: str = "out") -> None:
        """The run's output folder: free (or ``overwrite``) and writable where it is asked for; the one
        output-exists check of every operation (the run writes where its plan checked)."""
        from phr.core.fs import refuse_existing

        named = f"{field}={str(path)!r}"  # refuse_existing's message starts with it: not prefixed again
        self.check(named, lambda: refuse_existing(path, overwrite, field))
        self.check(named, lambda: writable(path))

    def model(self, role: str, spec: str | None) -> bool:
        """Check ``spec`` for ``role``: it resolves, its key is set (a hosted endpoint; a local server may have
        none), the package it needs is installed and, for a model loaded in process (``hf:``, ``vllm:``), its
        weights are installed or the Hub can serve them now (``weights_problem``). True when usable (``none`` is
        fine and False)."""
        if is_no_model(spec):
            return False
        from phr.llm.spec import PROVIDERS, parse_spec

        try:
            kind, rest = parse_spec(str(spec))
        except PHRError as e:
            self.problem(f"{role}: {str(e).splitlines()[0]}")
            return False
        entry = PROVIDERS[kind]
        ok = True
        keys = entry.keys(rest)
        if keys and not any(os.environ.get(k) for k in keys):
            self.problem(f"{role} {spec}: needs an API key: set the environment variable {' or '.join(keys)}")
            ok = False
        if entry.requires and importlib.util.find_spec(entry.requires.split(".")[0]) is None:
            self.problem(f"{role} {spec}: the package {entry.requires!r} is not installed")
            ok = False
        if ok and kind in WEIGHTS_LOADED:  # the weights: installed, or downloadable now
            from phr.llm.providers.hf_local import weights_problem

            model, _, revision = rest.partition("@") if kind == "hf" else (rest, "", "")
            missing = weights_problem(model, revision or None)
            if missing:
                self.problem(f"{role} {spec}: {missing}")
                ok = False
        if kind == "openai-compatible":
            from phr.llm.spec import split_compatible

            try:
                split_compatible(rest)
            except Exception as e:  # noqa: BLE001 - the spec's form
                self.problem(f"{role} {spec}: {e}")
                ok = False
        return ok

    def calls(
        self,
        spec: str,
        requests: Sequence[ChatRequest],
        *,
        provider: Provider | None = None,
        estimated: bool = False,
        when: str | None = None,
        share: float = 1.0,
    ) -> Usage:
        """Add ``requests`` (ChatRequests) of ``spec`` to the plan; with ``provider``, count the cached samples.
        ``estimated``: stand-ins for requests whose prompt the run writes (a judge of paraphrases not yet made):
        their tokens count, their cache state is unknown. ``when``: the requests are made only under this condition
        on earlier answers (counted as a bound), of which ``share`` is expected."""
        from phr.llm.batch import BATCH_KINDS, active_session, no_batch_api
        from phr.llm.cache import CallCache, call_key
        from phr.llm.client import estimate_completion_tokens, estimate_prompt_tokens

        u = self.usage.setdefault(spec, Usage(spec))
        batch = bool(getattr(provider, "batched", False)) or active_session() is not None  # --batch
        if batch and spec.partition(":")[0] not in BATCH_KINDS:
            self.problem(no_batch_api(spec))
        u.batch = u.batch or batch
        cache = CallCache() if provider is not None and not estimated else None
        kind = spec.partition(":")[0]
        if kind in NOMINAL_TOKENS_PER_S and u.rate_of != MEASURED:  # measured once a call names the provider
            measured = CallCache().throughput(kind, provider.cache_model_id) if provider is not None else None
            u.tokens_per_s = measured or NOMINAL_TOKENS_PER_S[kind]
            u.rate_of = MEASURED if measured else "nominal for a CPU"
        if when is not None:
            u.conditional += len(requests)
            u.expected += share * len(requests)
            if when not in u.when:
                u.when.append(when)
        for req in requests:
            u.requests += 1
            u.samples += req.n
            u.prompt_tokens += req.n * estimate_prompt_tokens(req.messages)
            u.completion_tokens += req.n * estimate_completion_tokens(req.params)
            if estimated:
                u.estimated += req.n
                continue
            if cache is None or provider is None:  # (no cache without a provider)
                u.cached = None
                continue
            for k in range(req.n):
                key, _ = call_key(
                    provider.kind,
                    provider.cache_model_id,
                    provider.revision,
                    req.params,
                    req.messages,
                    req.first_index + k,
                )
                if cache.get(key) is not None and u.cached is not None:
                    u.cached += 1
        return u

    def lines(self) -> list[str]:
        from phr.llm.pricing import PriceTable

        if not self.notes and not self.usage:  # nothing to say under it: no bare "plan:" header
            return []
        out = ["plan:"] + [f"  {n}" for n in self.notes]
        if self.usage:
            prices = PriceTable.load()
            out.append("model calls (tokens and cost estimated from phr/llm/prices.toml; completions at max_tokens):")
            out += [u.line(prices) for u in self.usage.values()]
            out += [
                f"warning: {u.spec}: about {_duration(u.seconds)} of generation on this machine (more than "
                f"{LONG_RUN_S / 3600:g} hour): lower the limit, samples or max_tokens, or run where it is faster"
                for u in self.usage.values()
                if u.seconds is not None and u.seconds > LONG_RUN_S
            ]
        return out

    def raise_problems(self) -> None:
        """Raise a PreflightError listing every problem (nothing when there is none)."""
        if self.problems:
            raise PreflightError(
                f"preflight found {len(self.problems)} problem(s); nothing was called:\n"
                + "\n".join(f"  - {p}" for p in self.problems)
            )


def writable(path: str | Path) -> None:
    """Raise OSError unless ``path`` (a file or folder to be written) can be created where it is asked for."""
    p = Path(path).expanduser().resolve()
    parent = next((a for a in (p, *p.parents) if a.exists()), None)
    if parent is None or not parent.is_dir() and parent != p:
        raise OSError(f"{path}: no existing folder to write it in")
    folder = parent if parent.is_dir() else parent.parent
    if not os.access(folder, os.W_OK):
        raise OSError(f"{path}: {folder} is not writable")


# ---- known maximum output lengths of API models ------------------------------------------------------------------

LIMITS_ENV = "PHR_MODEL_LIMITS"


def known_output_limits(path: str | Path | None = None) -> dict[str, int]:
    """``phr/llm/model_limits.toml`` (each entry with its source), updated by ``path`` or ``$PHR_MODEL_LIMITS``."""
    table = tomllib.loads(resources.files("phr.llm").joinpath("model_limits.toml").read_text())["limits"]
    out = {k: int(v["max_output_tokens"]) for k, v in table.items()}
    extra = path or os.environ.get(LIMITS_ENV)
    if extra:
        try:
            user = tomllib.loads(Path(extra).expanduser().read_text()).get("limits", {})
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise UsageError(f"{LIMITS_ENV}={extra}: cannot read it ({e})") from None
        for k, v in user.items():
            value = v.get("max_output_tokens") if isinstance(v, dict) else v
            if not isinstance(value, int) or value < 1:
                raise UsageError(f"{extra}: limits.{k}: max_output_tokens must be a positive integer")
            out = {k: value, **out} | {k: value}
    return out


def max_output_of(spec: str) -> int | None:
    """The known maximum output length of an API model spec (exact entry, then glob), or None."""
    import fnmatch

    table = known_output_limits()
    if spec in table:
        return table[spec]
    for pattern, value in table.items():
        if fnmatch.fnmatchcase(spec, pattern):
            return value
    return None
