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
from typing import TypeVar

from phr.config.defaults import is_no_model
from phr.core.errors import PHRError, UsageError

T = TypeVar("T")
#: provider kinds that load a model's weights from a folder, the Hugging Face cache or the Hub
WEIGHTS_LOADED = ("hf", "vllm")


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

    def line(self, prices) -> str:
        cost = prices.cost(self.spec, self.prompt_tokens, self.completion_tokens, batch=self.batch)
        known = self.samples - self.estimated
        cached = "unknown" if self.cached is None or not known else f"{self.cached}/{known}"
        if self.estimated:
            cached += f"; {self.estimated} estimated, their prompts are written during the run"
        usd = "no price in prices.toml" if cost is None else f"<= ${cost:,.2f}"
        if self.batch and cost is not None:
            usd += f" at the batch rate ({prices.batch_share(self.spec):.0%} of the price)"
        return (
            f"  {self.spec}: {self.requests} requests, {self.samples} samples (cached {cached}), ~{self.prompt_tokens:,} prompt tokens, "
            f"<= {self.completion_tokens:,} completion tokens, {usd}"
        )


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

    def calls(self, spec: str, requests: Sequence, *, provider=None, estimated: bool = False) -> Usage:
        """Add ``requests`` (ChatRequests) of ``spec`` to the plan; with ``provider``, count the cached samples.
        ``estimated``: stand-ins for requests whose prompt the run writes (a judge of paraphrases not yet made):
        their tokens count, their cache state is unknown."""
        from phr.llm.batch import BATCH_KINDS, active_session, no_batch_api
        from phr.llm.cache import CallCache, call_key
        from phr.llm.client import estimate_completion_tokens, estimate_prompt_tokens

        u = self.usage.setdefault(spec, Usage(spec))
        batch = bool(getattr(provider, "batched", False)) or active_session() is not None  # --batch
        if batch and spec.partition(":")[0] not in BATCH_KINDS:
            self.problem(no_batch_api(spec))
        u.batch = u.batch or batch
        cache = CallCache() if provider is not None and not estimated else None
        for req in requests:
            u.requests += 1
            u.samples += req.n
            u.prompt_tokens += req.n * estimate_prompt_tokens(req.messages)
            u.completion_tokens += req.n * estimate_completion_tokens(req.params)
            if estimated:
                u.estimated += req.n
                continue
            if cache is None:
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

        out = ["plan:"] + [f"  {n}" for n in self.notes]
        if self.usage:
            prices = PriceTable.load()
            out.append("model calls (tokens and cost estimated from phr/llm/prices.toml; completions at max_tokens):")
            out += [u.line(prices) for u in self.usage.values()]
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
