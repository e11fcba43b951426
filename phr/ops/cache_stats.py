"""`cache stats`: the call cache's entries, failures and tokens per model (docs/scaling.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from phr.config.ops import CacheStatsConfig
from phr.llm.cache import CacheStats, CallCache, default_cache_path
from phr.ops.plan import QuietPlan


@dataclass
class CachePlan(QuietPlan[CacheStatsConfig]):
    """The cache file ``cache stats`` reads."""

    path: Path | None = None


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


def plan(cfg: CacheStatsConfig) -> CachePlan:
    return CachePlan(config=cfg, path=default_cache_path())


def run(p: CachePlan) -> StatsResult:
    return StatsResult(CallCache(p.path).stats(), p.config.as_json)
