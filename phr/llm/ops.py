"""The LLM layer's own operations: `llm ping` (one prompt to a model) and `cache stats` / `cache clear` (the call
cache), each ``plan(cfg)`` then ``run(plan)`` (phr.api).

    from phr.api import plan, run
    reply = run(plan(LlmPingConfig(spec="local:smollm2")))     # reply.text, reply.usage_line()
    stats = run(plan(CacheStatsConfig()))                      # stats.lines()

Their plans have nothing to print (``lines()`` is empty): a command's output is its result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from phr.config.ops import CacheClearConfig, CacheStatsConfig, LlmPingConfig
from phr.core.errors import PHRError
from phr.llm.cache import CacheStats, CallCache, default_cache_path
from phr.llm.preflight import Plan
from phr.llm.summary import RunSummary
from phr.llm.types import Sample


class PingFailed(PHRError):
    """The ping's call failed after its attempts (exit 1; the message is the failure's)."""


@dataclass
class QuietPlan(Plan):
    """A plan with nothing to print before its run."""

    def lines(self) -> list[str]:
        return []


@dataclass
class CachePlan(QuietPlan):
    """``cache stats`` / ``cache clear``: the cache file they read."""

    path: Path | None = None


@dataclass
class PingResult:
    sample: Sample
    summary: RunSummary

    def usage_line(self) -> str:
        s = self.sample
        batch = f" (whole batch of {s.batch_size})" if s.batch_size > 1 else ""
        return (
            f"model={s.model} finish={s.finish_reason} prompt_tokens={s.prompt_tokens} "
            f"completion_tokens={s.completion_tokens} latency={s.latency_s:.2f}s{batch} cached={s.cached}"
        )


@dataclass
class StatsResult:
    stats: CacheStats
    as_json: bool

    def lines(self) -> list[str]:
        st = self.stats
        if self.as_json:
            keys = ("provider", "model", "entries", "prompt_tokens", "completion_tokens")
            models = [dict(zip(keys, r, strict=True)) for r in st.by_model]
            record = {
                "path": str(st.path),
                "entries": st.entries,
                "failures": st.failures,
                "size_bytes": st.size_bytes,
                "models": models,
            }
            return [json.dumps(record, indent=2)]
        out = [
            f"cache: {st.path}\nentries: {st.entries}\nfailures recorded: {st.failures}\nsize: {st.size_bytes} bytes"
        ]
        for provider, model, n, pt, ct in st.by_model:
            out.append(f"  {provider}:{model}  {n} entries, {pt or 0} prompt + {ct or 0} completion tokens")
        return out


def plan(cfg: LlmPingConfig | CacheStatsConfig | CacheClearConfig) -> QuietPlan:
    """Nothing to resolve beyond the config (ping) or the cache file (stats, clear)."""
    if isinstance(cfg, LlmPingConfig):
        return QuietPlan(config=cfg)
    return CachePlan(config=cfg, path=default_cache_path())


def run(p: QuietPlan) -> PingResult | StatsResult | int:
    """Ping: the reply (``PingFailed`` when the call failed). Stats: the cache's counts. Clear: entries deleted."""
    cfg = p.config
    if isinstance(cfg, LlmPingConfig):
        return _ping(cfg)
    assert isinstance(p, CachePlan)
    if isinstance(cfg, CacheStatsConfig):
        return StatsResult(CallCache(p.path).stats(), cfg.as_json)
    assert isinstance(cfg, CacheClearConfig)
    return CallCache(p.path).clear(cfg.model)


def _ping(cfg: LlmPingConfig) -> PingResult:
    from phr.llm import LLM

    llm = LLM(
        cfg.spec,
        cache_mode=cfg.cache_mode,
        timeout=cfg.timeout,
        max_attempts=cfg.attempts,
        max_retry_after=cfg.max_retry_after,
        progress=False,
        show_summary=False,
    )
    result = llm.chat(cfg.prompt, max_tokens=cfg.max_tokens, temperature=cfg.temperature)
    s = result.samples[0]
    if not isinstance(s, Sample):  # a CallFailure: the call failed after its attempts
        raise PingFailed(s.message)
    return PingResult(s, llm.last_summary)
